package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/testenv"
)

// TestJoinCommand runs 'placer join' and 'placer unjoin' as an admin
// would, with a kubeconfig of each cluster: the KubernetesCluster and its
// Secret appear with the flags' provider, labels and opened namespaces,
// and go again; bad flags are refused naming the flag.
func TestJoinCommand(t *testing.T) {
	ctx := context.Background()
	mgmt, member := testenv.Start(t), testenv.Start(t)
	mgmtConfig := mgmt.KubeconfigFile(t, "fleet-admin", "system:masters")
	memberConfig := member.KubeconfigFile(t, "member-admin", "system:masters")
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		err := root.ExecuteContext(ctx)
		return out.String(), err
	}
	if _, err := run("join", "--kubeconfig", mgmtConfig, "--member-kubeconfig", memberConfig, "--label", "novalue", "default/east"); err == nil || !strings.Contains(err.Error(), "--label") {
		t.Errorf("join with a bad --label: %v", err)
	}
	if _, err := run("join", "--kubeconfig", mgmtConfig, "--member-kubeconfig", memberConfig, "--open", "=team-a", "default/east"); err == nil || !strings.Contains(err.Error(), "--open") {
		t.Errorf("join with a bad --open: %v", err)
	}
	out, err := run("join", "--kubeconfig", mgmtConfig, "--member-kubeconfig", memberConfig, "-n", "platform-ns-is-ignored",
		"--provider", "gcp", "--label", "tier=production", "--open", "apps", "--token-ttl", "2h", "default/east")
	if err != nil {
		t.Fatalf("join: %v\n%s", err, out)
	}
	if !strings.Contains(out, "KubernetesCluster default/east joined") {
		t.Errorf("join printed %q", out)
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := mgmt.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "east"}, kc); err != nil {
		t.Fatal(err)
	}
	if kc.Spec.Provider != "gcp" || kc.Labels["tier"] != "production" {
		t.Errorf("KubernetesCluster: provider %q, labels %v", kc.Spec.Provider, kc.Labels)
	}
	// --open apps, with no tenant, opens it to the cluster's own namespace.
	rb := &rbacv1.RoleBinding{}
	if err := member.Client.Get(ctx, types.NamespacedName{Namespace: "apps", Name: config.ManagerNamespaceRole + "-default"}, rb); err != nil {
		t.Errorf("namespace apps opened to tenant default: %v", err)
	}
	if out, err := run("unjoin", "--kubeconfig", mgmtConfig, "--member-kubeconfig", memberConfig, "default/east"); err != nil || !strings.Contains(out, "unjoined") {
		t.Fatalf("unjoin: %v\n%s", err, out)
	}
	if err := mgmt.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "east"}, kc); err == nil {
		t.Error("the KubernetesCluster is still there after unjoin")
	}
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/controllers/inventory"
	"github.com/placer-dev/placer/internal/testenv"
)

// fleetNamespace is the management namespace whose ClusterProfiles the
// manager reads: the fleet's, which a fleet manager writes.
const fleetNamespace = "fleet"

// inventoryFixture is the admin's configuration of the standard
// inventory's access: one provider, "test", whose exec plugin prints the
// token kept in dir/token.
type inventoryFixture struct{ dir string }

// setUpInventory writes the access providers' file and returns the
// manager's flags that read it.
func setUpInventory(t *testing.T) (inventoryFixture, []string) {
	t.Helper()
	dir := t.TempDir()
	plugin := filepath.Join(dir, "credential")
	script := fmt.Sprintf("#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%%s\"}}' \"$(cat %s)\"\n", filepath.Join(dir, "token"))
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	providers := fmt.Sprintf(`{"providers":[{"name":"test","execConfig":{"apiVersion":"client.authentication.k8s.io/v1","command":%q,"interactiveMode":"Never"}}]}`, plugin)
	file := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(file, []byte(providers), 0o600); err != nil {
		t.Fatal(err)
	}
	return inventoryFixture{dir: dir}, []string{"--clusterprofile-provider-file=" + file, "--clusterprofile-namespace=" + fleetNamespace}
}

// offer makes m reachable by the provider "test": a ServiceAccount of its
// own with the manager's roles, the member namespace fleet open to the
// management namespace fleet, and its token where the plugin reads it.
func (f inventoryFixture) offer(t *testing.T, m *member) {
	t.Helper()
	ctx := context.Background()
	cs := m.target.Clientset
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "placer-system", Name: "placer-inventory"}}
	if _, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	user := "system:serviceaccount:placer-system:placer-inventory"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := config.GrantManager(ctx, cs, user); err != nil {
		t.Fatal(err)
	}
	if err := config.OpenNamespace(ctx, cs, user, fleetNamespace, fleetNamespace); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "token"), []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
}

// profile is a ClusterProfile of m in the fleet namespace, as a fleet
// manager would write it: reached through the provider "test".
func profile(t *testing.T, c client.Client, m *member, healthy metav1.ConditionStatus) *inventoryv1alpha1.ClusterProfile {
	t.Helper()
	ctx := context.Background()
	ca, err := os.ReadFile(filepath.Join(m.target.Dir(), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cp := &inventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: m.name, Labels: map[string]string{inventoryv1alpha1.LabelClusterManagerKey: "test-fleet"}},
		Spec:       inventoryv1alpha1.ClusterProfileSpec{DisplayName: m.name, ClusterManager: inventoryv1alpha1.ClusterManager{Name: "test-fleet"}},
	}
	if err := c.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	cp.Status = inventoryv1alpha1.ClusterProfileStatus{
		Conditions:      []metav1.Condition{{Type: inventoryv1alpha1.ClusterConditionControlPlaneHealthy, Status: healthy, Reason: "Probed", Message: "as the fleet manager sees it", LastTransitionTime: metav1.Now()}},
		Properties:      []inventoryv1alpha1.Property{{Name: "cpu-class", Value: "small"}, {Name: "not a label", Value: "kept out"}},
		AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: "test", Cluster: clientcmdv1.Cluster{Server: m.target.Cluster.Server(), CertificateAuthorityData: ca}}},
	}
	if err := c.Status().Update(ctx, cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

// testInventory: a member of the standard inventory is placed on, and
// its placements published (run within TestHandshake, whose manager reads
// the fleet namespace's ClusterProfiles).
func testInventory(t *testing.T, env *testenv.Env, wc client.WithWatch, f inventoryFixture, m *member, place func(t *testing.T, name, namespace string) *v1alpha1.Workload) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	f.offer(t, m)
	cp := profile(t, env.Client, m, metav1.ConditionTrue)
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: m.name}}
	testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	})
	if !metav1.IsControlledBy(kc, cp) || kc.Spec.ClusterProfileRef == nil || kc.Spec.ClusterProfileRef.Name != cp.Name || kc.Spec.ConnectionSecretRef != nil {
		t.Errorf("the ClusterProfile's KubernetesCluster: owners %v, spec %+v", kc.OwnerReferences, kc.Spec)
	}
	if kc.Labels[inventory.LabelPropertyPrefix+"cpu-class"] != "small" || kc.Labels[inventoryv1alpha1.LabelClusterManagerKey] != "test-fleet" || kc.Labels[v1alpha1.LabelClusterVersion] == "" {
		t.Errorf("labels %v: want the ClusterProfile's, its properties' and the built-in ones", kc.Labels)
	}

	// A Workload of the fleet namespace selecting the property lands there,
	// and its placement is published.
	w := place(t, "inventoried", fleetNamespace)
	if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != m.name {
		t.Fatalf("placed on %v, want %s", w.Status.ClusterRef, m.name)
	}
	pd := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: w.Name}}
	testenv.WaitFor(t, wc, pd, &inventoryv1alpha1.PlacementDecisionList{}, timeout, func(pd *inventoryv1alpha1.PlacementDecision) bool {
		return len(pd.Decisions) == 1
	})
	if d := pd.Decisions[0]; d.ClusterProfileRef.Name != cp.Name || d.ClusterProfileRef.Namespace != fleetNamespace || d.Reason == "" ||
		pd.SchedulerName != "placer" || pd.Labels[inventoryv1alpha1.PlacementKeyLabel] != w.Name || !metav1.IsControlledBy(pd, w) {
		t.Errorf("PlacementDecision %+v", pd)
	}

	// The fleet manager says the control plane is not healthy: not Ready.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
		t.Fatal(err)
	}
	cp.Status.Conditions[0].Status, cp.Status.Conditions[0].Reason = metav1.ConditionFalse, "Unreachable"
	if err := env.Client.Status().Update(ctx, cp); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonClusterProfileUnhealthy
	})

	// A tenant cannot borrow the admin's credentials: a KubernetesCluster
	// of another namespace naming a ClusterProfile is refused.
	borrowed := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "borrowed"},
		Spec: v1alpha1.KubernetesClusterSpec{ClusterProfileRef: &v1alpha1.ClusterProfileReference{Name: m.name}}}
	if err := env.Client.Create(ctx, borrowed); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, wc, borrowed, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonClusterProfileRefused
	})

	// Deleting the Workload withdraws its decision.
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, wc, pd, &inventoryv1alpha1.PlacementDecisionList{}, timeout)
	// The fleet manager deletes the ClusterProfile, then the garbage
	// collector its KubernetesCluster (here, without one, the test), which
	// is drained through the connection the manager had.
	for _, o := range []client.Object{borrowed, cp, kc} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitForDeletion(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout)
}

package inventory

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/internal/testenv"
)

// TestImportOnceTheAdminsClusterGoes: a ClusterProfile left out because an
// admin's KubernetesCluster holds its name is imported once that cluster
// is deleted (on a real API server, the importer as the manager runs it).
// Before, only the importer's own clusters woke it, and the ClusterProfile
// waited for its next change or the resync, hours later.
func TestImportOnceTheAdminsClusterGoes(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	wc := testenv.Watcher(t, env.Config)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}); err != nil {
		t.Fatal(err)
	}
	theirs := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east"},
		Spec: v1alpha1.KubernetesClusterSpec{ClusterProfileRef: &v1alpha1.ClusterProfileReference{Name: "east"}}}
	if err := env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(t, env.Config, func(mgr ctrl.Manager) error {
		return Setup(mgr, cluster.Profiles{Access: &access.Config{}, Namespaces: []string{"fleet"}})
	})
	cp := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east"}}
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, wc, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet"}}, &corev1.EventList{}, 30*time.Second, func(e *corev1.Event) bool {
		return e.Reason == "KubernetesClusterExists" && e.InvolvedObject.Name == "east"
	})
	if err := env.Client.Delete(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east"}}
	testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, 30*time.Second, func(kc *v1alpha1.KubernetesCluster) bool {
		return metav1.IsControlledBy(kc, cp)
	})
}

package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/internal/testenv"
)

// hangingConns are connections whose check of one cluster (hang) does not
// return until the test ends, as a member that accepts connections and
// never answers holds its probe (a ClusterProfile's exec plugin that hangs
// holds it for good); every other cluster answers Ready.
type hangingConns struct {
	fakeConns
	hang    types.NamespacedName
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *hangingConns) Connect(types.NamespacedName, []byte, map[string]v1alpha1.NamespaceName, ...cluster.EnsureOption) error {
	return nil
}

func (h *hangingConns) Check(ctx context.Context, key types.NamespacedName, _ []byte, _ cluster.Last, _ cluster.HealthOptions, _ ...cluster.EnsureOption) (cluster.Health, error) {
	if key != h.hang {
		return cluster.Health{Version: "v1.35.4", ProbeTime: &metav1.Time{Time: time.Now()}, Message: "v1.35.4 answers", Next: time.Minute}, nil
	}
	h.once.Do(func() { close(h.entered) })
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return cluster.Health{Reason: v1alpha1.ReasonUnreachable, Message: "the cluster does not answer", Next: time.Minute}, nil
}

// TestHangingMemberHoldsOneWorker: while one member's check hangs, another
// cluster is still looked at and its condition published. Before, the
// controller had one worker, which the hanging check held: every other
// cluster's condition froze (one that died meanwhile stayed Ready).
func TestHangingMemberHoldsOneWorker(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	conns := &hangingConns{hang: types.NamespacedName{Namespace: "default", Name: "hang"}, entered: make(chan struct{}), release: make(chan struct{})}
	testenv.RunManager(t, env.Config, func(mgr ctrl.Manager) error {
		if err := shared.IndexWorkloads(mgr); err != nil {
			return err
		}
		dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return err
		}
		t := &shared.Trigger{}
		watches := shared.NewObjectWatches(dyn, mgr.GetRESTMapper(), t.Enqueue)
		r := &Reconciler{client: mgr.GetClient(), secrets: mgr.GetAPIReader(), watches: watches, conns: conns, record: event.NewNopRecorder(),
			log: logging.NewNopLogger(), health: cluster.HealthOptions{Interval: time.Minute, Grace: 2 * time.Minute}}
		if err := mgr.Add(shared.Closer(watches.Close)); err != nil {
			return err
		}
		return r.register(mgr, t)
	})
	// Released before the manager stops (cleanups run last first).
	t.Cleanup(func() { close(conns.release) })
	create := func(name string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-kubeconfig"}, Data: map[string][]byte{"kubeconfig": []byte("apiVersion: v1")}}
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: s.Name}}}
		for _, o := range []client.Object{s, kc} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	create("hang")
	select {
	case <-conns.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the hanging cluster was never checked")
	}
	create("ok")
	ok := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ok"}}
	testenv.WaitFor(t, testenv.Watcher(t, env.Config), ok, &v1alpha1.KubernetesClusterList{}, 60*time.Second, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	})
}

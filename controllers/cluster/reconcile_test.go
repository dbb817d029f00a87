package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/utils/ptr"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/controllers/shared/sharedtest"
	"github.com/placer-dev/placer/internal/eventtest"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestReconcile runs the cluster controller on a fake management client
// and fake member connections, one health per case: the finalizer comes
// first, then the labels and condition taints in one patch and the status
// in one write, as the member's health says.
func TestReconcile(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	probed := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	withSecret := func(kc *v1alpha1.KubernetesCluster) {
		kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: "a-kubeconfig"}
	}
	// wasReady: probed Ready an hour ago, with a user's label and taint.
	wasReady := func(kc *v1alpha1.KubernetesCluster) {
		kc.Status.LastProbeTime, kc.Status.Version = &probed, "v1.35.3"
		kc.Labels["team"] = "blue"
		kc.Spec.Taints = []v1alpha1.ClusterTaint{{Key: "gpu", Effect: v1alpha1.TaintEffectNoSchedule}}
	}
	ready := cluster.Health{Version: "v1.35.4", ProbeTime: &metav1.Time{Time: time.Now()}, Message: "v1.35.4 answers; 3 of 4 nodes ready", Next: 20 * time.Second,
		Summary: &mcv1alpha1.ClusterSummaryStatus{NodeCount: 4, ReadyNodeCount: 3, Labels: map[string]string{v1alpha1.LabelRegion: "eu-west"}}}
	withID := func(h cluster.Health, id string) cluster.Health { h.ClusterID = id; return h }
	recorded := func(id string) func(*v1alpha1.KubernetesCluster) {
		return func(kc *v1alpha1.KubernetesCluster) { kc.Status.ClusterID = id }
	}
	// As Check says it: nothing of the other cluster is the cluster's.
	changed := cluster.Health{Version: "v1.35.3", ClusterID: "uid-b", Reason: v1alpha1.ReasonClusterIdentityChanged, Next: 20 * time.Second,
		Message: "v1.35.4 answers; it is cluster uid-b (its kube-system namespace's UID), not uid-a, where placer placed"}
	unreachable := cluster.Health{Version: "v1.35.3", Reason: v1alpha1.ReasonUnreachable, Message: "the cluster does not answer: timeout", Next: 30 * time.Second}
	cases := []struct {
		name       string
		kc         *v1alpha1.KubernetesCluster
		noSecret   bool
		connectErr error
		health     cluster.Health
		// want: the Ready condition's status and reason, the status's
		// version and probe time, the condition taint (if any), the
		// labels, the requeue.
		wantReady   corev1.ConditionStatus
		wantReason  string
		wantVersion string
		wantProbe   *metav1.Time
		wantTaint   string
		wantLabels  map[string]string
		wantRequeue time.Duration
		wantNodes   int32
		// unchanged: the status is not written (the health is unsettled).
		unchanged bool
		// wantID: status.clusterID after the reconcile.
		wantID string
	}{
		{name: "a member that answers, with its agent: Ready, version and topology published, the user's label and taint kept",
			kc: st.Cluster("a", withSecret, wasReady), health: ready, wantReady: corev1.ConditionTrue, wantReason: v1alpha1.ReasonReady, wantVersion: "v1.35.4", wantProbe: ready.ProbeTime,
			wantLabels:  map[string]string{"team": "blue", v1alpha1.LabelClusterName: "a", v1alpha1.LabelClusterNamespace: "default", v1alpha1.LabelClusterVersion: "v1.35.4", v1alpha1.LabelRegion: "eu-west"},
			wantRequeue: 20 * time.Second, wantNodes: 4},
		{name: "a member whose agent publishes its identity, none recorded (a new cluster, or an upgrade): recorded",
			kc: st.Cluster("a", withSecret, wasReady), health: withID(ready, "uid-a"), wantReady: corev1.ConditionTrue, wantReason: v1alpha1.ReasonReady, wantVersion: "v1.35.4", wantProbe: ready.ProbeTime,
			wantLabels:  map[string]string{"team": "blue", v1alpha1.LabelClusterName: "a", v1alpha1.LabelClusterNamespace: "default", v1alpha1.LabelClusterVersion: "v1.35.4", v1alpha1.LabelRegion: "eu-west"},
			wantRequeue: 20 * time.Second, wantNodes: 4, wantID: "uid-a"},
		{name: "a Secret re-pointed at another cluster: not Ready, tainted unreachable, the recorded identity kept",
			kc: st.Cluster("a", withSecret, wasReady, recorded("uid-a")), health: changed, wantReady: corev1.ConditionFalse, wantReason: v1alpha1.ReasonClusterIdentityChanged, wantVersion: "v1.35.3", wantProbe: &probed,
			wantTaint: v1alpha1.TaintClusterUnreachable, wantLabels: map[string]string{"team": "blue", v1alpha1.LabelClusterName: "a", v1alpha1.LabelClusterNamespace: "default", v1alpha1.LabelClusterVersion: "v1.35.3"},
			wantRequeue: 20 * time.Second, wantID: "uid-a"},
		{name: "a member that does not answer: not Ready, tainted unreachable, the last good probe kept",
			kc: st.Cluster("a", withSecret, wasReady), health: unreachable, wantReady: corev1.ConditionFalse, wantReason: v1alpha1.ReasonUnreachable, wantVersion: "v1.35.3", wantProbe: &probed,
			wantTaint: v1alpha1.TaintClusterUnreachable, wantLabels: map[string]string{"team": "blue", v1alpha1.LabelClusterName: "a", v1alpha1.LabelClusterNamespace: "default", v1alpha1.LabelClusterVersion: "v1.35.3"},
			wantRequeue: 30 * time.Second},
		{name: "a watch that has just started keeps the condition: nothing written",
			kc: st.Cluster("a", withSecret, wasReady), health: cluster.Health{Unsettled: true, Next: 2 * time.Second}, unchanged: true, wantRequeue: 2 * time.Second},
		{name: "no Secret: not Ready, tainted not-ready, the connection closed",
			kc: st.Cluster("a", withSecret), noSecret: true, wantReady: corev1.ConditionFalse, wantReason: v1alpha1.ReasonSecretNotFound, wantTaint: v1alpha1.TaintClusterNotReady,
			wantLabels: map[string]string{v1alpha1.LabelClusterName: "a", v1alpha1.LabelClusterNamespace: "default"}},
		{name: "a kubeconfig the policy refuses: not Ready, and why",
			kc: st.Cluster("a", withSecret), connectErr: &cluster.ErrKubeconfigRefused{ErrorList: field.ErrorList{field.Forbidden(field.NewPath("users").Key("admin").Child("exec"), "exec plugins are not allowed")}}, wantReady: corev1.ConditionFalse, wantReason: v1alpha1.ReasonKubeconfigRefused, wantTaint: v1alpha1.TaintClusterNotReady,
			wantLabels: map[string]string{v1alpha1.LabelClusterName: "a", v1alpha1.LabelClusterNamespace: "default"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(tc.kc, ns).WithStatusSubresource(tc.kc).Build()
			src := sharedtest.NewSources()
			if !tc.noSecret {
				src = sharedtest.NewSources(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a-kubeconfig"}, Data: map[string][]byte{"kubeconfig": []byte("apiVersion: v1")}})
			}
			conns := &fakeConns{health: map[types.NamespacedName]cluster.Health{key: tc.health}, connectErr: tc.connectErr}
			rec := &eventtest.Recorder{}
			r := &Reconciler{client: c, secrets: c, watches: src, conns: conns, record: rec, log: logging.NewNopLogger(), health: cluster.HealthOptions{Interval: 30 * time.Second, Grace: 40 * time.Second}}
			before := &v1alpha1.KubernetesCluster{}
			if err := c.Get(context.Background(), key, before); err != nil {
				t.Fatal(err)
			}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			got := &v1alpha1.KubernetesCluster{}
			if err := c.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			if !meta.FinalizerExists(got, v1alpha1.FinalizerDrain) {
				t.Error("no drain finalizer")
			}
			if tc.unchanged {
				if diff := cmp.Diff(before.Status, got.Status); diff != "" {
					t.Errorf("status written while unsettled (-before,+after):\n%s", diff)
				}
				return
			}
			if got.Status.ClusterID != tc.wantID || conns.last.ClusterID != before.Status.ClusterID {
				t.Errorf("clusterID %q (Check told %q), want %q (Check told the recorded %q)", got.Status.ClusterID, conns.last.ClusterID, tc.wantID, before.Status.ClusterID)
			}
			rc := got.Status.GetCondition(xpv2.TypeReady)
			if rc.Status != tc.wantReady || string(rc.Reason) != tc.wantReason {
				t.Errorf("Ready %s (%s: %s), want %s (%s)", rc.Status, rc.Reason, rc.Message, tc.wantReady, tc.wantReason)
			}
			if got.Status.Version != tc.wantVersion || unix(got.Status.LastProbeTime) != unix(tc.wantProbe) {
				t.Errorf("version %q probed %v, want %q probed %v", got.Status.Version, got.Status.LastProbeTime, tc.wantVersion, tc.wantProbe)
			}
			if got.Status.NodeCount != tc.wantNodes {
				t.Errorf("nodeCount %d, want %d", got.Status.NodeCount, tc.wantNodes)
			}
			if diff := cmp.Diff(tc.wantLabels, got.Labels); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
			var taints []string
			for _, ta := range got.Spec.Taints {
				if ta.Key == v1alpha1.TaintClusterUnreachable || ta.Key == v1alpha1.TaintClusterNotReady {
					taints = append(taints, ta.Key)
				}
			}
			if want := []string{tc.wantTaint}; tc.wantTaint == "" && len(taints) > 0 || tc.wantTaint != "" && !cmp.Equal(want, taints) {
				t.Errorf("condition taints %v, want %q", taints, tc.wantTaint)
			}
			if len(before.Spec.Taints) > 0 && got.Spec.Taints[0].Key != before.Spec.Taints[0].Key {
				t.Errorf("the user's taint %q was dropped: %+v", before.Spec.Taints[0].Key, got.Spec.Taints)
			}
			if tc.noSecret && (len(conns.removed) != 1 || len(conns.connected) != 0) {
				t.Errorf("connections removed %v, connected %v: want the connection closed", conns.removed, conns.connected)
			}
			// An Event when the Ready reason changes (the clusters here were
			// Ready before).
			if rs := rec.Reasons(); tc.wantReason == v1alpha1.ReasonReady && len(rs) != 0 || tc.wantReason != v1alpha1.ReasonReady && (len(rs) != 1 || rs[0] != tc.wantReason) {
				t.Errorf("Events %v, want one %s, none if Ready", rs, tc.wantReason)
			}
		})
	}
}

func unix(t *metav1.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// TestSecretGoneOrUnread: a cluster being deleted whose Secret went first
// (a manifest or a namespace deleted whole) is drained through the
// connection it had, its condition kept; a Secret read that fails with no
// answer about the Secret (a server timeout) changes nothing and is tried
// again. Before, both published SecretNotFound and closed the connection:
// the first let the drain go with a Workload's old copy running in a
// member that answered; the second tainted a Ready cluster not-ready on a
// busy API server, and Workloads moved.
func TestSecretGoneOrUnread(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	withSecret := func(kc *v1alpha1.KubernetesCluster) {
		kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: "a-kubeconfig"}
	}
	ready := answering()
	cases := []struct {
		name    string
		kc      *v1alpha1.KubernetesCluster
		health  cluster.Health
		readErr error
		wantErr bool
		// gone: the member stopped answering, and the drain lets the
		// cluster go (LetGoUnreachable).
		gone bool
	}{
		{name: "deleted after its Secret: drained through its connection, probed through it", kc: st.Cluster("a", withSecret, st.Deleting(time.Now(), clusterFinalizer)), health: ready},
		{name: "deleted after its Secret, its member gone silent: the probe through the connection says so, and the drain lets it go", kc: st.Cluster("a", withSecret, st.Deleting(time.Now(), clusterFinalizer)),
			health: cluster.Health{Version: "v1.35.4", Reason: v1alpha1.ReasonUnreachable, Message: "the cluster does not answer: timeout", Next: 30 * time.Second}, gone: true},
		{name: "a Secret read that times out: nothing changes, tried again", kc: st.Cluster("a", withSecret),
			readErr: kerrors.NewServerTimeout(corev1.Resource("secrets"), "get", 1), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := st.Workload("w", st.PlacedOn("b"), leftFrom("a"))
			c := indexedClient([]client.Object{tc.kc, w, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, tc.kc, w)
			secrets := client.Reader(c)
			if tc.readErr != nil {
				secrets = interceptor.NewClient(c, interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return tc.readErr
				}})
			}
			src := sharedtest.NewSources()
			src.Unsynced[shared.CoreKey("Secret", "default", "a-kubeconfig")] = true
			ch := propagator.NewChaperon(w, w.TargetNamespace(nil), 0, propagator.Held)
			conns := &fakeConns{members: clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(ch))}, health: map[types.NamespacedName]cluster.Health{key: tc.health}}
			rec := &eventtest.Recorder{}
			r := &Reconciler{client: c, secrets: secrets, watches: src, conns: conns, record: rec, log: logging.NewNopLogger(), health: cluster.HealthOptions{Interval: 30 * time.Second, Grace: 40 * time.Second}}
			_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile: %v, want an error %v", err, tc.wantErr)
			}
			got := &v1alpha1.KubernetesCluster{}
			err = c.Get(context.Background(), key, got)
			if tc.gone {
				if err == nil && meta.FinalizerExists(got, clusterFinalizer) {
					t.Errorf("held while its member does not answer: Ready %+v", got.Status.GetCondition(xpv2.TypeReady))
				}
				if rs := rec.Reasons(); len(rs) == 0 || rs[len(rs)-1] != string(reasonLetGo) {
					t.Errorf("Events %v, want %s last", rs, reasonLetGo)
				}
				return
			}
			if err != nil {
				t.Fatalf("the cluster is gone (%v): let go while a Workload's copy is in its member", err)
			}
			if !meta.FinalizerExists(got, clusterFinalizer) {
				t.Error("the drain's finalizer went while a Workload's copy is in its member")
			}
			if rc := got.Status.GetCondition(xpv2.TypeReady); rc.Status != corev1.ConditionTrue {
				t.Errorf("Ready %s (%s: %s), want the condition it had (True)", rc.Status, rc.Reason, rc.Message)
			}
			if len(conns.removed) != 0 {
				t.Errorf("connections removed %v, want the connection kept", conns.removed)
			}
		})
	}
}

// TestProfileMadeAgain: a ClusterProfile deleted and made again under the
// same name (another cluster, maybe) never becomes the connection of the
// KubernetesCluster the deleted one made: that cluster keeps the
// connection it had, drained through it once the garbage collector
// deletes it, and says why it is not Ready meanwhile. Before, it was
// connected to the new ClusterProfile's cluster: its drain, and the
// propagator's moves, asked the wrong member, found nothing, and let the
// old copies go on running, named nowhere.
func TestProfileMadeAgain(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "east"}
	ac := access.New([]access.Provider{{Name: "eks", ExecConfig: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "aws-token", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}})
	again := &inventoryv1alpha1.ClusterProfile{TypeMeta: metav1.TypeMeta{APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "ClusterProfile"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "east", UID: "made-again"}}
	again.Status.AccessProviders = []inventoryv1alpha1.AccessProvider{{Name: "eks", Cluster: clientcmdv1.Cluster{Server: "https://another.example.com"}}}
	ownedByFirst := func(kc *v1alpha1.KubernetesCluster) {
		kc.Spec.ClusterProfileRef = &v1alpha1.ClusterProfileReference{Name: "east"}
		kc.OwnerReferences = []metav1.OwnerReference{{APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "ClusterProfile", Name: "east", UID: "first", Controller: ptr.To(true)}}
	}
	ready := answering()
	cases := []struct {
		name string
		kc   *v1alpha1.KubernetesCluster
		// wantReady is the Ready status it publishes.
		wantReady corev1.ConditionStatus
		// unread: the ClusterProfile's read times out (its watch has
		// not listed); the cluster keeps its condition, and the read is
		// tried again.
		unread bool
	}{
		{name: "a read of the ClusterProfile that times out: nothing changes, tried again", kc: st.Cluster("east", ownedByFirst), wantReady: corev1.ConditionTrue, unread: true},
		{name: "being deleted: drained through the connection it had", kc: st.Cluster("east", ownedByFirst, st.Deleting(time.Now(), clusterFinalizer)), wantReady: corev1.ConditionTrue},
		{name: "not deleted yet: not Ready, its connection kept for its drain", kc: st.Cluster("east", ownedByFirst), wantReady: corev1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := st.Workload("w", st.PlacedOn("b"), leftFrom("east"))
			c := indexedClient([]client.Object{tc.kc, w, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, tc.kc, w)
			ch := propagator.NewChaperon(w, w.TargetNamespace(nil), 0, propagator.Held)
			conns := &fakeConns{members: clustertest.Members{clustertest.NewMember("east", clustertest.WithObjects(ch))}, health: map[types.NamespacedName]cluster.Health{key: ready}}
			r := &Reconciler{client: c, secrets: c, watches: sharedtest.NewSources(again), conns: conns, record: &eventtest.Recorder{}, log: logging.NewNopLogger(),
				health: cluster.HealthOptions{Interval: 30 * time.Second, Grace: 40 * time.Second}, profiles: cluster.Profiles{Access: ac, Namespaces: []string{"default"}}}
			if tc.unread {
				src := sharedtest.NewSources()
				src.Unsynced[profileKey(tc.kc)] = true
				r.watches = src
				r.secrets = interceptor.NewClient(c, interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return kerrors.NewServerTimeout(inventoryv1alpha1.GroupVersion.WithResource("clusterprofiles").GroupResource(), "get", 1)
				}})
			}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); (err != nil) != tc.unread {
				t.Fatalf("Reconcile: %v, want an error %v", err, tc.unread)
			}
			if len(conns.connected)+len(conns.removed) != 0 {
				t.Errorf("connected %v, removed %v: want the connection it had kept, never one to the ClusterProfile made again", conns.connected, conns.removed)
			}
			got := &v1alpha1.KubernetesCluster{}
			if err := c.Get(context.Background(), key, got); err != nil {
				t.Fatalf("the cluster is gone (%v): let go while a Workload's copy is in its member", err)
			}
			if rc := got.Status.GetCondition(xpv2.TypeReady); rc.Status != tc.wantReady {
				t.Errorf("Ready %s (%s: %s), want %s", rc.Status, rc.Reason, rc.Message, tc.wantReady)
			}
		})
	}
}

// TestDesiredLabelsOfALongName: a cluster whose name is longer than a
// label value (a ClusterProfile's name may be 253 characters) gets a
// cluster-name label the API server takes, the name's hash. Before, the
// name itself: the label patch was refused, the cluster never got a
// condition, and its deletion never ended.
func TestDesiredLabelsOfALongName(t *testing.T) {
	kc := st.Cluster(strings.Repeat("a", 70))
	for k, v := range desiredLabels(kc, "v1.35.4", nil) {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	if got := desiredLabels(st.Cluster("east"), "", nil)[v1alpha1.LabelClusterName]; got != "east" {
		t.Errorf("cluster-name of east: %q, want the name itself", got)
	}
}

// removingConns are fakeConns whose Remove closes the member's connection.
type removingConns struct{ fakeConns }

func (f *removingConns) Remove(key types.NamespacedName) {
	f.fakeConns.Remove(key)
	f.members = nil
}

// TestSecretGoneJustBeforeDeletion: a Secret deleted a moment before its
// cluster (a manifest deleted with the Secret first, a namespace deleted
// whole), seen gone before the cluster's deletion is: the connection is
// kept for secretGrace, so that the drain that follows removes what placer
// left in the member. Before, that pass closed it, and the drain took the
// member for one that does not answer: let go, a Workload's old copy
// abandoned there. A Secret gone longer than that closes it, as before.
func TestSecretGoneJustBeforeDeletion(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	for name, goneFor := range map[string]time.Duration{"a moment ago: kept for the drain": 0, "longer than the grace: closed": 2 * secretGrace} {
		t.Run(name, func(t *testing.T) {
			kc := st.Cluster("a", func(kc *v1alpha1.KubernetesCluster) {
				kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: "a-kubeconfig"}
				kc.Finalizers = []string{clusterFinalizer}
				if goneFor > 0 {
					kc.Status.SetConditions(notReadyCondition(v1alpha1.ReasonSecretNotFound, "Secret default/a-kubeconfig not found"))
					kc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-goneFor))
				}
			})
			w := st.Workload("w", st.PlacedOn("b"), leftFrom("a"))
			c := indexedClient([]client.Object{kc, w, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, kc, w)
			ch := propagator.NewChaperon(w, w.TargetNamespace(nil), 0, propagator.Held)
			conns := &removingConns{fakeConns{members: clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(ch))}, health: map[types.NamespacedName]cluster.Health{key: answering()}}}
			r := &Reconciler{client: c, secrets: c, watches: sharedtest.NewSources(), conns: conns, record: &eventtest.Recorder{}, log: logging.NewNopLogger(),
				health: cluster.HealthOptions{Interval: 30 * time.Second, Grace: 40 * time.Second}}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
			if err != nil {
				t.Fatal(err)
			}
			if goneFor > 0 {
				if len(conns.removed) != 1 {
					t.Errorf("connection removed %v, want closed", conns.removed)
				}
				return
			}
			if len(conns.removed) != 0 || res.RequeueAfter <= 0 || res.RequeueAfter > secretGrace {
				t.Fatalf("connection removed %v, requeued after %s: want it kept, looked at again within %s", conns.removed, res.RequeueAfter, secretGrace)
			}
			// Now its deletion.
			if err := c.Delete(context.Background(), kc); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(context.Background(), key, &v1alpha1.KubernetesCluster{}); err != nil {
				t.Errorf("the cluster is gone (%v): let go while a Workload's copy runs in its member", err)
			}
		})
	}
}

// TestSecretGoneConnectionWithheld: a Secret gone a moment ago while the
// cluster's connection is withheld (a restart, its member's summary not
// seen yet) keeps that connection too: a connection there is, serving or
// not (Connected), not one that serves (Member), decides.
func TestSecretGoneConnectionWithheld(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	kc := st.Cluster("a", func(kc *v1alpha1.KubernetesCluster) {
		kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: "a-kubeconfig"}
		kc.Finalizers = []string{clusterFinalizer}
	})
	c := indexedClient([]client.Object{kc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}, kc)
	conns := &fakeConns{withheld: map[types.NamespacedName]bool{key: true}, health: map[types.NamespacedName]cluster.Health{key: answering()}}
	r := &Reconciler{client: c, secrets: c, watches: sharedtest.NewSources(), conns: conns, record: &eventtest.Recorder{}, log: logging.NewNopLogger(),
		health: cluster.HealthOptions{Interval: 30 * time.Second, Grace: 40 * time.Second}}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if len(conns.removed) != 0 {
		t.Errorf("connection removed %v: a withheld connection was taken for none", conns.removed)
	}
}

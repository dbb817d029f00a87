package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/promtext"
	"github.com/placer-dev/placer/internal/testenv"
)

// proxyFleet is a management cluster with its own controllers (a
// Deployment's, a Job's, the garbage collector, the node lifecycle), the
// manager as config/management deploys it, its webhook called by the API
// server, and two members in two regions.
type proxyFleet struct {
	// kubeconfig is the management cluster's, for placer's commands.
	kubeconfig string
	mgmt       *local.Cluster
	// kubelet is where the manager serves the virtual nodes' kubelet API.
	kubelet string
	cs      kubernetes.Interface
	c       client.Client
	wc      client.WithWatch
	members []*member
}

func startProxyFleet(t *testing.T) *proxyFleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The management cluster of the newest minor placer supports
	// (TestHandshake's is go.mod's), and a member of the one between.
	mgmt, err := local.Start(ctx, local.Options{Name: "mgmt", NoKwok: true, KubernetesVersion: local.KubernetesVersions[len(local.KubernetesVersions)-1]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Close() })
	cfg := mgmt.RESTConfig()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if err := local.WaitForServiceAccount(ctx, cs, "default", "default"); err != nil {
		t.Fatal(err)
	}
	comp := install(t, cfg, "management")["placer-manager"]
	ports := managerPorts{health: freeAddr(t), metrics: freeAddr(t), webhook: freeAddr(t), kubelet: freeAddr(t)}
	if err := deploy.WebhooksAt(ctx, cfg, ports.webhook); err != nil {
		t.Fatal(err)
	}
	runManager(t, managerArgs(comp, ports), t.TempDir())
	f := &proxyFleet{kubeconfig: mgmt.KubeconfigPath(), mgmt: mgmt, kubelet: ports.kubelet, cs: cs, c: testenv.Watcher(t, cfg), wc: testenv.Watcher(t, cfg)}
	for _, r := range []struct{ name, region string }{{"pa", "eu"}, {"pb", "us"}} {
		// pb runs its own kube-scheduler too, for no-reservation pods.
		opts := local.Options{Name: r.name, Scheduler: r.name == "pb"}
		if r.name == "pa" {
			opts.KubernetesVersion = "v1.36.3"
		}
		m := startMemberWith(t, opts, local.Node{Name: r.name + "-0", CPU: "8", Memory: "16Gi", Labels: map[string]string{v1alpha1.LabelRegion: r.region}})
		register(t, f.c, m, nil, "default")
		// pa lets kubectl logs, exec and attach of the tenant's pods
		// reach their delegates there; pb does not.
		if r.name == "pa" {
			if err := config.OpenStreams(ctx, m.target.Clientset, "default", "default"); err != nil {
				t.Fatal(err)
			}
		}
		f.members = append(f.members, m)
	}
	// Source pods are those of a labelled namespace.
	ns := &corev1.Namespace{}
	if err := f.c.Get(ctx, client.ObjectKey{Name: "default"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels[v1alpha1.LabelSourceNamespace] = v1alpha1.SourceNamespaceEnabled
	if err := f.c.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return f
}

// elected is a pod template of a source pod.
func elected(name string, annotations map[string]string) corev1.PodTemplateSpec {
	a := map[string]string{v1alpha1.AnnotationElect: ""}
	for k, v := range annotations {
		a[k] = v
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: a},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}}},
	}
}

// regionPod is a source pod whose node selector picks the clusters of a
// region.
// stopDelay, on a pod of a local cluster's kwok node, is how long it
// takes to stop once deleted (cluster/local's stage placer-pod-delete).
const stopDelay = "kwok.placer.dev/stop-delay"

func regionPod(name, region string) *corev1.Pod {
	tmpl := elected(name, map[string]string{v1alpha1.AnnotationUseConstraintsFromSpec: ""})
	tmpl.Spec.NodeSelector = map[string]string{v1alpha1.LabelRegion: region}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: tmpl.Labels, Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
}

// delegates lists the pods of the members that run for proxy pods
// labelled app=name, by image.
func (f *proxyFleet) delegates(t *testing.T, app string) (running map[string]int, clusters map[string]int) {
	t.Helper()
	running, clusters = map[string]int{}, map[string]int{}
	for _, m := range f.members {
		l := &corev1.PodList{}
		if err := m.client.List(context.Background(), l, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				running[p.Spec.Containers[0].Image]++
				clusters[m.name]++
			}
		}
	}
	return running, clusters
}

func TestProxyPods(t *testing.T) {
	f := startProxyFleet(t)
	ctx := context.Background()
	// A CronJob every minute, from the start: the last case counts its runs.
	cron := f.startCronJob(t)

	t.Run("every cluster has a Ready virtual node labelled as the cluster", func(t *testing.T) {
		for _, m := range f.members {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "placer.default." + m.name}}
			testenv.WaitFor(t, f.wc, node, &corev1.NodeList{}, timeout, func(n *corev1.Node) bool {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady {
						return c.Status == corev1.ConditionTrue && n.Labels[v1alpha1.LabelRegion] != ""
					}
				}
				return false
			})
			if node.Labels[v1alpha1.LabelClusterTargetName] != m.name || len(node.Spec.Taints) == 0 {
				t.Errorf("node %s: labels %v, taints %v", node.Name, node.Labels, node.Spec.Taints)
			}
		}
	})

	t.Run("a Deployment of 6 annotated replicas runs in the members, and rolls out", func(t *testing.T) {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](6), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: elected("web", nil),
			},
		}
		if err := f.c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		rolledOut := func(d *appsv1.Deployment) bool {
			return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 6 && d.Status.AvailableReplicas == 6 && d.Status.Replicas == 6
		}
		testenv.WaitFor(t, f.wc, d, &appsv1.DeploymentList{}, 3*timeout, rolledOut)
		pods := &corev1.PodList{}
		if err := f.c.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "web"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Spec.NodeName, "placer.default.") || p.Spec.SchedulerName != v1alpha1.ProxySchedulerName || p.Status.PodIP == "" {
				t.Errorf("pod %s: node %q, scheduler %q, IP %q", p.Name, p.Spec.NodeName, p.Spec.SchedulerName, p.Status.PodIP)
			}
		}
		if running, _ := f.delegates(t, "web"); running["nginx:1"] != 6 {
			t.Errorf("delegates running: %v, want 6 of nginx:1", running)
		}
		// A rolling update: the Deployment completes it, and no delegate
		// of the old template is left.
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		if err := f.c.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, f.wc, d, &appsv1.DeploymentList{}, 3*timeout, rolledOut)
		waitUntil(t, timeout, func() (bool, string) {
			running, _ := f.delegates(t, "web")
			return running["nginx:1"] == 0 && running["nginx:2"] == 6, fmt.Sprintf("delegates %v", running)
		})
	})

	t.Run("a Job completes, and a failing one ends Failed after its retries", func(t *testing.T) {
		job := func(name, code string, completions, parallelism, backoff int32) *batchv1.Job {
			tmpl := elected(name, map[string]string{"kwok.placer.dev/exit-code": code})
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec:       batchv1.JobSpec{Completions: &completions, Parallelism: &parallelism, BackoffLimit: &backoff, Template: tmpl},
			}
		}
		ok, bad := job("batch", "0", 5, 2, 6), job("crash", "1", 1, 1, 1)
		for _, j := range []*batchv1.Job{ok, bad} {
			if err := f.c.Create(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		ended := func(cond batchv1.JobConditionType) func(j *batchv1.Job) bool {
			return func(j *batchv1.Job) bool {
				for _, c := range j.Status.Conditions {
					if c.Type == cond && c.Status == corev1.ConditionTrue {
						return true
					}
				}
				return false
			}
		}
		testenv.WaitFor(t, f.wc, ok, &batchv1.JobList{}, 3*timeout, ended(batchv1.JobComplete))
		if ok.Status.Succeeded != 5 || ok.Status.Failed != 0 {
			t.Errorf("job batch: %d succeeded, %d failed; want 5, 0", ok.Status.Succeeded, ok.Status.Failed)
		}
		testenv.WaitFor(t, f.wc, bad, &batchv1.JobList{}, 3*timeout, ended(batchv1.JobFailed))
		if bad.Status.Failed != 2 {
			t.Errorf("job crash: %d failed, want 2 (backoffLimit 1)", bad.Status.Failed)
		}
	})

	t.Run("a node selector on a region picks only that region's cluster; one that fits nowhere says why", func(t *testing.T) {
		us, mars := regionPod("in-us", "us"), regionPod("on-mars", "mars")
		// Its delegate takes 4 s to stop once deleted (kwok's stage
		// placer-pod-delete): the deletion case below reads it.
		us.Annotations[stopDelay] = "4s"
		for _, p := range []*corev1.Pod{us, mars} {
			if err := f.c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		testenv.WaitFor(t, f.wc, us, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if us.Spec.NodeName != "placer.default.pb" {
			t.Errorf("in-us runs on %s, want placer.default.pb", us.Spec.NodeName)
		}
		testenv.WaitFor(t, f.wc, mars, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					return true
				}
			}
			return false
		})
		waitUntil(t, timeout, func() (bool, string) {
			events := &corev1.EventList{}
			if err := f.c.List(ctx, events, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "on-mars" && e.Reason == "FailedScheduling" {
					return strings.Contains(e.Message, "0/2 clusters are available") && strings.Contains(e.Message, "selector"), e.Message
				}
			}
			return false, "no FailedScheduling Event"
		})
		if mars.Spec.NodeName != "" {
			t.Errorf("on-mars bound to %s", mars.Spec.NodeName)
		}
		// placer explain pod/NAME answers as for a Workload.
		out, err := exec.Command(placerBinary, "explain", "pod/on-mars", "--kubeconfig="+f.kubeconfig, "-n", "default").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ClusterSelector") || !strings.Contains(string(out), "default/pa") {
			t.Errorf("placer explain pod/on-mars: %v\n%s", err, out)
		}
	})

	t.Run("kubectl logs, exec and attach of a proxy pod reach its delegate, where the member lets the tenant", f.streams)

	t.Run("a StatefulSet of 3 starts in ordinal order across clusters", func(t *testing.T) {
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](3), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template: elected("db", nil),
			},
		}
		if err := f.c.Create(ctx, sts); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, f.wc, sts, &appsv1.StatefulSetList{}, 3*timeout, func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
		var readyAt metav1.Time
		for i := range 3 {
			p := &corev1.Pod{}
			if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("db-%d", i)}, p); err != nil {
				t.Fatal(err)
			}
			// Each ordinal is created only once the one before runs Ready.
			if i > 0 && p.CreationTimestamp.Before(&readyAt) {
				t.Errorf("db-%d created at %s, before db-%d was Ready at %s", i, p.CreationTimestamp, i-1, readyAt)
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					readyAt = c.LastTransitionTime
				}
			}
		}
		// A StatefulSet's pod deleted comes back under the same name: its
		// new proxy pod is placed once the old one's Workload is gone.
		old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "default"}}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
			t.Fatal(err)
		}
		if err := f.c.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "default"}}
		testenv.WaitFor(t, f.wc, again, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning && podReady(p)
		})
		w := &v1alpha1.Workload{}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(again), w); err != nil || w.Labels[v1alpha1.LabelProxyPod] != string(again.UID) {
			t.Errorf("db-1's Workload is not the new pod's: %v, %v", err, w.Labels)
		}
	})

	t.Run("a delegate deleted in its member is replaced there; the proxy pod stays", func(t *testing.T) {
		p := &corev1.Pod{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-0"}, p); err != nil {
			t.Fatal(err)
		}
		cluster, _ := v1alpha1.ClusterOfVirtualNode(p.Spec.NodeName)
		m := memberNamed(f.members, cluster.Name)
		l := &corev1.PodList{}
		if err := m.client.List(ctx, l, client.InNamespace("default"), client.MatchingLabels{"app": "db"}); err != nil {
			t.Fatal(err)
		}
		var old *corev1.Pod
		for i := range l.Items {
			if l.Items[i].Status.PodIP == p.Status.PodIP {
				old = &l.Items[i]
			}
		}
		if old == nil {
			t.Fatalf("no delegate of db-0 (IP %s) in %s", p.Status.PodIP, m.name)
		}
		if err := m.client.Delete(ctx, old, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, timeout, func() (bool, string) {
			if err := m.client.List(ctx, l, client.InNamespace("default"), client.MatchingLabels{"app": "db"}); err != nil {
				t.Fatal(err)
			}
			for _, d := range l.Items {
				if d.Name == old.Name && d.UID != old.UID && d.Status.Phase == corev1.PodRunning {
					return true, ""
				}
			}
			return false, "no replacement of the delegate"
		})
		// The proxy pod stays, and shows its new delegate.
		var replacement corev1.Pod
		for _, d := range l.Items {
			if d.Name == old.Name && d.UID != old.UID {
				replacement = d
			}
		}
		testenv.WaitFor(t, f.wc, p, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool {
			return p.DeletionTimestamp == nil && p.Status.PodIP == replacement.Status.PodIP
		})
	})

	t.Run("a ConfigMap and a Secret the pods use follow them; deleting the Deployment cleans up every member", func(t *testing.T) {
		// Admiralty's follow case: the pods read both through envFrom.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"mode": "fast"}}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "credentials", Namespace: "default"}, Data: map[string][]byte{"token": []byte("bar")}}
		for _, o := range []client.Object{cm, secret} {
			if err := f.c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		tmpl := elected("cfg", nil)
		tmpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "credentials"}}},
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cfg"}}, Template: tmpl},
		}
		if err := f.c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, f.wc, d, &appsv1.DeploymentList{}, 3*timeout, func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 2 })
		_, clusters := f.delegates(t, "cfg")
		for name := range clusters {
			got := &corev1.ConfigMap{}
			if err := memberNamed(f.members, name).client.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil || got.Data["mode"] != "fast" {
				t.Errorf("ConfigMap in %s: %v %v", name, err, got.Data)
			}
			gotSecret := &corev1.Secret{}
			if err := memberNamed(f.members, name).client.Get(ctx, client.ObjectKeyFromObject(secret), gotSecret); err != nil || string(gotSecret.Data["token"]) != "bar" {
				t.Errorf("Secret in %s: %v", name, err)
			}
		}
		if err := f.c.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, f.wc, d, &appsv1.DeploymentList{}, 3*timeout)
		waitUntil(t, timeout, func() (bool, string) {
			_, clusters := f.delegates(t, "cfg")
			return len(clusters) == 0, fmt.Sprintf("delegates left: %v", clusters)
		})
	})

	t.Run("a no-reservation pod waits, Unschedulable, while every cluster is cordoned, and runs once one is not", func(t *testing.T) {
		// Admiralty's no-reservation case.
		cordon := func(name string, on bool) {
			t.Helper()
			kc := &v1alpha1.KubernetesCluster{}
			if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, kc); err != nil {
				t.Fatal(err)
			}
			kc.Spec.Unschedulable = on
			if err := f.c.Update(ctx, kc); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range f.members {
			cordon(m.name, true)
		}
		// Without a reservation, the member's own kube-scheduler places
		// the pod: pb's (region us).
		p := regionPod("later", "us")
		p.Annotations[v1alpha1.AnnotationNoReservation] = ""
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, timeout, func() (bool, string) {
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				t.Fatal(err)
			}
			_, c := podutil.GetPodConditionFromList(p.Status.Conditions, corev1.PodScheduled)
			w := &v1alpha1.Workload{}
			_ = f.c.Get(ctx, client.ObjectKeyFromObject(p), w)
			return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable,
				fmt.Sprintf("pod %s on %q, PodScheduled %+v; its Workload's conditions %+v", p.Status.Phase, p.Spec.NodeName, c, w.Status.Conditions)
		})
		cordon(f.members[0].name, false)
		cordon(f.members[1].name, false)
		waitUntil(t, timeout, func() (bool, string) {
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				t.Fatal(err)
			}
			w := &v1alpha1.Workload{}
			_ = f.c.Get(ctx, client.ObjectKeyFromObject(p), w)
			return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("pod %s on %q; its Workload's status %+v", p.Status.Phase, p.Spec.NodeName, w.Status)
		})
		if err := f.c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, f.wc, p, &corev1.PodList{}, timeout)
	})

	t.Run("pods not annotated, and pods of namespaces not labelled, are never touched", func(t *testing.T) {
		plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
		if err := f.c.Create(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if err := local.WaitForServiceAccount(ctx, f.cs, "plain", "default"); err != nil {
			t.Fatal(err)
		}
		unannotated := elected("plain", nil)
		unannotated.Annotations = nil
		for _, p := range []*corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "unannotated", Namespace: "default"}, Spec: unannotated.Spec},
			{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled-ns", Namespace: "plain", Annotations: elected("x", nil).Annotations}, Spec: unannotated.Spec},
		} {
			if err := f.c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			if p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Annotations[v1alpha1.AnnotationSourcePodManifest] != "" {
				t.Errorf("%s/%s was mutated: scheduler %q, annotations %v", p.Namespace, p.Name, p.Spec.SchedulerName, p.Annotations)
			}
		}
	})

	t.Run("a pod annotated after its creation, with a manifest of its own, is never placed", func(t *testing.T) {
		tmpl := elected("forged", nil)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: "default", Annotations: map[string]string{
			v1alpha1.AnnotationSourcePodManifest: `{"metadata":{"name":"forged"},"spec":{"containers":[{"name":"app","image":"evil"}]}}`,
		}}, Spec: tmpl.Spec}
		p.Spec.SchedulerName = v1alpha1.ProxySchedulerName
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Annotations[v1alpha1.AnnotationElect] = ""
		if err := f.c.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, f.wc, p, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == "UnsignedSourcePod" {
					return true
				}
			}
			return false
		})
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), &v1alpha1.Workload{}); err == nil {
			t.Error("a Workload was made from the forged manifest")
		}
	})

	t.Run("a source pod with placer's own annotation is refused at admission, naming it", func(t *testing.T) {
		tmpl := elected("bad", map[string]string{"multicluster.placer.dev/is-allowed": "true"})
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default", Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
		err := f.c.Create(ctx, p)
		if err == nil || !strings.Contains(err.Error(), "metadata.annotations[multicluster.placer.dev/is-allowed]") {
			t.Errorf("created, or refused without naming the field: %v", err)
		}
	})

	t.Run("a proxy pod's Workload is created with the propagator's finalizer, and the Workload webhook is not called for it", func(t *testing.T) {
		const hook = "workloads.placer.dev"
		calls, skipped := webhookCounts(t, f.cs, hook)
		tmpl := elected("finalized", nil)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "finalized", Namespace: "default", Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "finalized", Namespace: "default"}}
		testenv.WaitFor(t, f.wc, w, &v1alpha1.WorkloadList{}, timeout, func(*v1alpha1.Workload) bool { return true })
		if !slices.Contains(w.Finalizers, v1alpha1.FinalizerPropagator) {
			t.Errorf("the pod's Workload has finalizers %v, want %s", w.Finalizers, v1alpha1.FinalizerPropagator)
		}
		// Other proxy pods (the CronJob's) may be made meanwhile: none of
		// their Workloads calls the webhook either.
		callsAfter, skippedAfter := webhookCounts(t, f.cs, hook)
		if callsAfter != calls || skippedAfter <= skipped {
			t.Errorf("%s: %v calls and %v skipped by its matchConditions before, %v and %v after; want no call more and at least one skipped", hook, calls, skipped, callsAfter, skippedAfter)
		}
		if err := f.c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, f.wc, p, &corev1.PodList{}, timeout)
	})

	t.Run("deleting a proxy pod deletes its delegate, and the pod goes only once the delegate has stopped", func(t *testing.T) {
		us := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "in-us", Namespace: "default"}}
		if _, clusters := f.delegates(t, "in-us"); clusters["pb"] != 1 {
			t.Fatalf("delegates before the deletion: %v, want one in pb", clusters)
		}
		// kubectl delete --grace-period=5: the delegate is deleted with it.
		pb := f.members[1].target.Clientset
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		watch, err := pb.CoreV1().Pods("default").Watch(wctx, metav1.ListOptions{LabelSelector: "app=in-us"})
		if err != nil {
			t.Fatal(err)
		}
		defer watch.Stop()
		if err := f.c.Delete(ctx, us, client.GracePeriodSeconds(5)); err != nil {
			t.Fatal(err)
		}
		grace := int64(-1)
		for e := range watch.ResultChan() {
			if p, ok := e.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
				grace = *p.DeletionGracePeriodSeconds
				break
			}
		}
		if grace != 5 {
			t.Errorf("the delegate was deleted with a grace period of %d s, want the proxy pod's 5", grace)
		}
		testenv.WaitForDeletion(t, f.wc, us, &corev1.PodList{}, timeout)
		// As a pod's deletion ends when its containers have stopped, the
		// proxy pod's ends when its delegate has (it takes 4 s here):
		// a StatefulSet's next pod of that name must not start elsewhere
		// while this one stops.
		left := &corev1.PodList{}
		if err := f.members[1].client.List(ctx, left, client.InNamespace("default"), client.MatchingLabels{"app": "in-us"}); err != nil {
			t.Fatal(err)
		}
		if len(left.Items) != 0 {
			t.Errorf("the proxy pod is gone while its delegate %s still stops (deleted at %v)", left.Items[0].Name, left.Items[0].DeletionTimestamp)
		}
		waitUntil(t, timeout, func() (bool, string) {
			_, clusters := f.delegates(t, "in-us")
			return len(clusters) == 0, fmt.Sprintf("delegates left: %v", clusters)
		})
		w := &v1alpha1.Workload{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "in-us"}, w); err == nil {
			t.Errorf("the pod's Workload outlived it")
		}
	})

	t.Run("an unbound proxy pod deleted goes only once its delegate has stopped", f.unboundDeleted)

	t.Run("a proxy pod whose delegate does not stop goes once force-deleted, and its Workload with it", f.forcedWhileStopping)

	t.Run("a proxy pod deleted --cascade=orphan stops its delegate, as any pod's deletion stops its containers", func(t *testing.T) {
		// The garbage collector takes the pod's reference off its
		// Workload (the orphan finalizer) while placer lets the pod go;
		// before, when it did so first, the delegate ran on with no pod.
		// Here the real garbage collector races placer, which acted
		// first in the one run on the code before (this case passed
		// there): it shows the whole deletion works as deployed. The
		// controller's test (proxypod TestPodGone) puts the orphaning
		// first every time, and fails without the fix.
		p := regionPod("orphaning", "us")
		if err := f.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, f.wc, p, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if _, clusters := f.delegates(t, "orphaning"); clusters["pb"] != 1 {
			t.Fatalf("delegates before the deletion: %v, want one in pb", clusters)
		}
		if err := f.c.Delete(ctx, p, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, f.wc, p, &corev1.PodList{}, timeout)
		waitUntil(t, timeout, func() (bool, string) {
			_, clusters := f.delegates(t, "orphaning")
			w := &v1alpha1.Workload{}
			err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "orphaning"}, w)
			return len(clusters) == 0 && kerrors.IsNotFound(err), fmt.Sprintf("delegates left: %v; the pod's Workload: %v (%v)", clusters, w.OwnerReferences, err)
		})
	})

	t.Run("a member lost: its proxy pods move by the move policy, and the Deployment keeps its pods", f.memberLost)

	t.Run("a CronJob runs twice", func(t *testing.T) {
		waitUntil(t, 3*timeout, func() (bool, string) {
			jobs := &batchv1.JobList{}
			if err := f.c.List(ctx, jobs, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, j := range jobs.Items {
				if metav1.IsControlledBy(&j, cron) && j.Status.Succeeded == 1 {
					done++
				}
			}
			return done >= 2, fmt.Sprintf("%d of its Jobs completed", done)
		})
	})

	t.Run("no finalizer of placer's is left on the management cluster's pods, ConfigMaps, Secrets or Services", func(t *testing.T) {
		// Admiralty's no-rogue-finalizer case, after every other: placer's
		// finalizer is on proxy pods alone, and only while they are not
		// being deleted (a pod being deleted keeps it while its delegate
		// stops: a moment here).
		waitUntil(t, timeout, func() (bool, string) {
			var left []string
			for _, l := range []client.ObjectList{&corev1.PodList{}, &corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.ServiceList{}} {
				if err := f.c.List(ctx, l); err != nil {
					t.Fatal(err)
				}
				if err := meta.EachListItem(l, func(o runtime.Object) error {
					m := o.(client.Object)
					for _, fin := range m.GetFinalizers() {
						if pod, ok := o.(*corev1.Pod); ok && fin == v1alpha1.FinalizerProxyPod && pod.DeletionTimestamp == nil && pod.Spec.SchedulerName == v1alpha1.ProxySchedulerName {
							continue
						}
						if strings.Contains(fin, "placer.dev") || strings.Contains(fin, "admiralty.io") {
							left = append(left, fmt.Sprintf("%T %s/%s: %s", o, m.GetNamespace(), m.GetName(), fin))
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			return len(left) == 0, fmt.Sprintf("finalizers left: %v", left)
		})
	})
}

// unboundDeleted: the API server removes a pod no node holds at once,
// but a proxy pod is unbound until placer binds it, after its delegate
// was committed: a StatefulSet's pod deleted in between must not let the
// next pod of its name start elsewhere while its delegate runs on. Here
// the management cluster refuses the pod's binding (an admission policy
// of the test's), so that it stays unbound while its delegate runs.
func (f *proxyFleet) unboundDeleted(t *testing.T) {
	ctx := context.Background()
	name := "unbound"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "request.name != '" + name + "'", Message: "e2e: " + name + " stays unbound"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := f.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.c.Delete(context.Background(), o) })
	}
	// The policy is in force once a binding of that name is refused (a
	// dry run: admission comes before the pod is looked for).
	waitUntil(t, timeout, func() (bool, string) {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Node", Name: "placer.default.pb"}}
		err := f.cs.CoreV1().Pods("default").Bind(ctx, b, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "stays unbound"), fmt.Sprintf("a binding of %s: %v", name, err)
	})
	p := regionPod(name, "us")
	// Its delegate takes 4 s to stop once deleted.
	p.Annotations[stopDelay] = "4s"
	if err := f.c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, timeout, func() (bool, string) {
		_, clusters := f.delegates(t, name)
		return clusters["pb"] == 1, fmt.Sprintf("delegates: %v", clusters)
	})
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("the proxy pod, its delegate running: bound to %q (%v), want unbound", p.Spec.NodeName, err)
	}
	if err := f.c.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, f.wc, p, &corev1.PodList{}, timeout)
	left := &corev1.PodList{}
	if err := f.members[1].client.List(ctx, left, client.InNamespace("default"), client.MatchingLabels{"app": name}); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("the unbound proxy pod is gone while its delegate %s still stops (deleted at %v): a StatefulSet's next pod of its name could start elsewhere meanwhile", left.Items[0].Name, left.Items[0].DeletionTimestamp)
	}
	waitUntil(t, timeout, func() (bool, string) {
		_, clusters := f.delegates(t, name)
		w := &v1alpha1.Workload{}
		err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, w)
		return len(clusters) == 0 && kerrors.IsNotFound(err), fmt.Sprintf("delegates left: %v; the pod's Workload: %v", clusters, err)
	})
}

// forcedWhileStopping: a proxy pod deleted waits for its delegate to stop;
// one that does not (here it takes ten minutes; a pod on a member's lost
// node never does) is let go by kubectl delete --force, and its Workload
// stops waiting for the delegate too, so that a StatefulSet's next pod of
// its name may go ahead. Before, the Workload, being deleted already, was
// never marked gone, and its candidate's foreground deletion held it.
func (f *proxyFleet) forcedWhileStopping(t *testing.T) {
	ctx := context.Background()
	name := "stuck"
	p := regionPod(name, "us")
	p.Annotations[stopDelay] = "10m"
	if err := f.c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, f.wc, p, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	pb := f.members[1].client
	t.Cleanup(func() {
		// The delegate would stop in ten minutes: it goes now.
		_ = pb.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"), client.MatchingLabels{"app": name}, client.GracePeriodSeconds(0))
	})
	if err := f.c.Delete(ctx, p, client.GracePeriodSeconds(5)); err != nil {
		t.Fatal(err)
	}
	stopping := func() (bool, string) {
		l := &corev1.PodList{}
		if err := pb.List(ctx, l, client.InNamespace("default"), client.MatchingLabels{"app": name}); err != nil {
			t.Fatal(err)
		}
		return len(l.Items) == 1 && l.Items[0].DeletionTimestamp != nil, fmt.Sprintf("%d delegates in pb", len(l.Items))
	}
	waitUntil(t, timeout, stopping)
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the proxy pod, its delegate stopping: %v (deleted at %v), want it held, being deleted", err, p.DeletionTimestamp)
	}
	if err := f.c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, f.wc, p, &corev1.PodList{}, timeout)
	waitUntil(t, timeout, func() (bool, string) {
		w := &v1alpha1.Workload{}
		err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, w)
		return kerrors.IsNotFound(err), fmt.Sprintf("the pod's Workload: %v (finalizers %v, annotations %v)", err, w.Finalizers, w.Annotations)
	})
	if ok, msg := stopping(); !ok {
		t.Errorf("the delegate is no longer stopping (%s): the case proves nothing", msg)
	}
}

// startCronJob creates a CronJob of source pods that runs every minute.
func (f *proxyFleet) startCronJob(t *testing.T) *batchv1.CronJob {
	t.Helper()
	tmpl := elected("tick", map[string]string{"kwok.placer.dev/exit-code": "0"})
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	cron := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default"},
		Spec:       batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
	}
	if err := f.c.Create(context.Background(), cron); err != nil {
		t.Fatal(err)
	}
	return cron
}

// TestProxyPods' last case, apart so that the function stays readable:
// a member lost, its proxy pods move by the move policy, the Deployment
// keeps its pods.
func (f *proxyFleet) memberLost(t *testing.T) {
	ctx := context.Background()
	// Both replicas prefer pa; each stays 5 s on a cluster that does not
	// answer (the pod's own toleration of an unreachable node, 300 s by
	// default, is its toleration of an unreachable cluster).
	tmpl := elected("mover", map[string]string{v1alpha1.AnnotationProxyPodSchedulingConstraints: `{"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {"matchExpressions": [{"key": "multicluster.admiralty.io/cluster-target-name", "operator": "In", "values": ["pa"]}]}}]}}}`})
	tmpl.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mover", Namespace: "default"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mover"}}, Template: tmpl},
	}
	if err := f.c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, f.wc, d, &appsv1.DeploymentList{}, 3*timeout, func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 2 })
	before := &corev1.PodList{}
	if err := f.c.List(ctx, before, client.InNamespace("default"), client.MatchingLabels{"app": "mover"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range before.Items {
		if p.Annotations[v1alpha1.AnnotationRunsIn] != "default/pa" || p.Spec.NodeName != "placer.default.pa" {
			t.Fatalf("pod %s on %s runs in %q, want default/pa (preferred)", p.Name, p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationRunsIn])
		}
	}
	pa := memberNamed(f.members, "pa")
	restart := stopAPIServer(t, pa)
	waitUntil(t, 3*timeout, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := f.c.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": "mover"}); err != nil {
			t.Fatal(err)
		}
		moved := 0
		for _, p := range pods.Items {
			if p.Annotations[v1alpha1.AnnotationRunsIn] == "default/pb" && p.Status.Phase == corev1.PodRunning && podReady(&p) {
				moved++
			}
		}
		return moved == 2, fmt.Sprintf("%d of 2 proxy pods run Ready in pb", moved)
	})
	// The same pods, moved: the Deployment replaced none.
	after := &corev1.PodList{}
	if err := f.c.List(ctx, after, client.InNamespace("default"), client.MatchingLabels{"app": "mover"}); err != nil {
		t.Fatal(err)
	}
	uids := func(l *corev1.PodList) []string {
		var out []string
		for _, p := range l.Items {
			out = append(out, string(p.UID))
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(uids(before), uids(after)) {
		t.Errorf("the Deployment's pods changed: %v, then %v", uids(before), uids(after))
	}
	inPB := &corev1.PodList{}
	if err := memberNamed(f.members, "pb").client.List(ctx, inPB, client.InNamespace("default"), client.MatchingLabels{"app": "mover"}); err != nil {
		t.Fatal(err)
	}
	if len(inPB.Items) != 2 {
		t.Errorf("%d delegates in pb, want 2", len(inPB.Items))
	}
	// pa answers again: what the pods left there goes.
	restart()
	waitUntil(t, timeout, func() (bool, string) {
		_, clusters := f.delegates(t, "mover")
		return clusters["pa"] == 0, fmt.Sprintf("delegates %v", clusters)
	})
}

// waitUntil polls cond (a list across clusters no single watch covers)
// until it holds, and fails with its last word after timeout.
func waitUntil(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// webhookCounts reads the management API server's metrics: how many times
// it called a mutating webhook, and how many requests its matchConditions
// spared the call.
func webhookCounts(t *testing.T, cs kubernetes.Interface, name string) (calls, skipped float64) {
	t.Helper()
	page, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = promtext.Each(page, func(family string, l map[string]string, m *dto.Metric) {
		if l["name"] != name {
			return
		}
		if family == "apiserver_admission_webhook_admission_duration_seconds" {
			calls += float64(m.GetHistogram().GetSampleCount())
		} else {
			skipped += m.GetCounter().GetValue()
		}
	}, "apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_match_condition_exclusions_total")
	if err != nil {
		t.Fatal(err)
	}
	return calls, skipped
}

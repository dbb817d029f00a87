package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/fleetwait"
)

// sandboxPodsNamespace is where the sandbox shows ordinary pods: the
// examples' tenant, whose clusters the members are, labelled
// multicluster-scheduler=enabled.
const sandboxPodsNamespace = "default"

// showOrdinaryPods runs a Deployment and a Job through the front end for
// ordinary pods, as an Admiralty user writes them (an annotated pod
// template in a labelled namespace), and prints where each pod runs.
func showOrdinaryPods(ctx context.Context, out io.Writer, c client.WithWatch, cs kubernetes.Interface, timeout time.Duration) error {
	fmt.Fprintf(out, "\nOrdinary pods: a Deployment and a Job annotated %s in namespace %s (labelled %s=%s) ...\n",
		v1alpha1.AnnotationElect, sandboxPodsNamespace, v1alpha1.LabelSourceNamespace, v1alpha1.SourceNamespaceEnabled)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: sandboxPodsNamespace}, ns); err != nil {
		return err
	}
	orig := ns.DeepCopy()
	metav1.SetMetaDataLabel(&ns.ObjectMeta, v1alpha1.LabelSourceNamespace, v1alpha1.SourceNamespaceEnabled)
	if err := c.Patch(ctx, ns, client.MergeFrom(orig)); err != nil {
		return errors.Wrap(err, "cannot label the namespace")
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: sandboxPodsNamespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hello"}},
			Template: sourceTemplate("hello", nil)},
	}
	tmpl := sourceTemplate("count", map[string]string{"kwok.placer.dev/exit-code": "0"})
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "count", Namespace: sandboxPodsNamespace},
		Spec:       batchv1.JobSpec{Completions: ptr.To[int32](2), Parallelism: ptr.To[int32](2), Template: tmpl},
	}
	for _, o := range []client.Object{d, job} {
		if err := c.Create(ctx, o); err != nil {
			return errors.Wrapf(err, "cannot create %s", o.GetName())
		}
	}
	if err := fleetwait.Until(ctx, c, d, &appsv1.DeploymentList{}, func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 3 }); err != nil {
		return errors.Wrap(err, "Deployment hello did not become available")
	}
	fmt.Fprintf(out, "  Deployment %s/hello: %d/3 available\n", sandboxPodsNamespace, d.Status.AvailableReplicas)
	if err := fleetwait.Until(ctx, c, job, &batchv1.JobList{}, func(j *batchv1.Job) bool { return j.Status.Succeeded == 2 }); err != nil {
		return errors.Wrap(err, "Job count did not complete")
	}
	fmt.Fprintf(out, "  Job %s/count: %d/2 succeeded\n", sandboxPodsNamespace, job.Status.Succeeded)
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(sandboxPodsNamespace), client.HasLabels{"app"}); err != nil {
		return err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for _, p := range pods.Items {
		fmt.Fprintf(out, "  Pod %s/%s %s on node %s: runs in %s\n", p.Namespace, p.Name, p.Status.Phase, p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationRunsIn])
	}
	fmt.Fprintf(out, "  (kubectl get pods -n %s -o wide shows the same; kubectl get nodes, a virtual node per cluster)\n", sandboxPodsNamespace)
	// kubectl logs of a proxy pod: its delegate's log, from its member.
	for _, p := range pods.Items {
		if p.Labels["app"] != "hello" {
			continue
		}
		b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).Do(ctx).Raw()
		if err != nil {
			return errors.Wrapf(err, "cannot read the log of pod %s", p.Name)
		}
		fmt.Fprintf(out, "  kubectl logs -n %s %s: %s", p.Namespace, p.Name, b)
		break
	}
	return nil
}

// sourceTemplate is a pod template an Admiralty user writes.
func sourceTemplate(app string, annotations map[string]string) corev1.PodTemplateSpec {
	a := map[string]string{v1alpha1.AnnotationElect: ""}
	for k, v := range annotations {
		a[k] = v
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}, Annotations: a},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		}}}},
	}
}

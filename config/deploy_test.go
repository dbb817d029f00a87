package config_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/deploy"
)

// render runs kustomize on one of config/'s kustomizations, as placer
// does from its embedded copy.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := deploy.Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeploymentManifests renders the management and member
// kustomizations and has a real API server accept every object with a
// server-side dry run: schema, defaults and admission, nothing persisted.
func TestDeploymentManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, cl := freshCluster(ctx, t, "deploy")
	// Namespaced objects are dry-run into a namespace that exists.
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "placer-system"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"management": {"Namespace/placer-system", "Deployment/placer-manager", "CustomResourceDefinition/workloads.compute.placer.dev", "CustomResourceDefinition/kubernetesclusters.compute.placer.dev",
			"ClusterRole/placer-manager", "ClusterRoleBinding/placer-manager", "ServiceAccount/placer-manager",
			"ClusterRole/placer-manager-resources", "ClusterRoleBinding/placer-manager-resources",
			"ClusterRole/placer-tenant-view", "ClusterRole/placer-tenant-edit", "ClusterRole/placer-tenant-admin",
			"PodDisruptionBudget/placer-manager", "Service/placer-manager-metrics"},
		"member": {"Namespace/placer-system", "Deployment/placer-agent", "Deployment/placer-candidate-scheduler", "CustomResourceDefinition/podchaperons.multicluster.placer.dev",
			"CustomResourceDefinition/clustersummaries.multicluster.placer.dev", "ClusterRole/placer-agent", "ClusterRole/placer-candidate-scheduler",
			"ClusterRole/placer-member-access", "ClusterRole/placer-member-access-namespace", "ClusterRole/placer-member-dependencies", "ClusterRoleBinding/placer-candidate-scheduler-kube-scheduler"},
	}
	for dir, kinds := range want {
		objs := render(t, dir)
		seen := map[string]bool{}
		for _, o := range objs {
			seen[o.GetKind()+"/"+o.GetName()] = true
			if o.GetKind() == "Deployment" {
				img, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				if image := img[0].(map[string]any)["image"]; image != "ghcr.io/placer-dev/placer:latest" {
					t.Errorf("%s: %s image = %v", dir, o.GetName(), image)
				}
				// What a node has (built and loaded there, or pulled once)
				// is used, not pulled again on every start.
				if policy := img[0].(map[string]any)["imagePullPolicy"]; policy != "IfNotPresent" {
					t.Errorf("%s: %s imagePullPolicy = %v, want IfNotPresent", dir, o.GetName(), policy)
				}
			}
			if o.GetKind() == "Namespace" {
				continue // created above, for real: what the rest is dry-run into
			}
			if err := cl.Create(ctx, o, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
				t.Errorf("config/%s: the API server refuses %s %s: %v", dir, o.GetKind(), o.GetName(), err)
			}
		}
		for _, k := range kinds {
			if !seen[k] {
				t.Errorf("config/%s renders no %s", dir, k)
			}
		}
	}
}

// freshCluster starts a local cluster with nothing of placer's in it, and
// stops it when the test ends.
func freshCluster(ctx context.Context, t *testing.T, name string) (*local.Cluster, client.Client) {
	t.Helper()
	c, err := local.Start(ctx, local.Options{Name: name, NoKwok: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cl, err := client.New(c.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, cl
}

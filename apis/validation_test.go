package apis_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	computev1alpha1 "github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/testenv"
)

const workloadHead = `
apiVersion: compute.placer.dev/v1alpha1
kind: Workload
metadata: {name: w, namespace: default}
`

const template = `
  targetDeployment:
    template:
      metadata: {labels: {app: web}, annotations: {team: a}}
      spec:
        containers: [{name: app, image: pause}]
`

// workload returns a Workload manifest whose spec is the fragment plus a
// valid pod template.
func workload(spec string) string { return workloadHead + "spec:\n" + spec + template }

// clusterAffinityExpr returns a Workload with one required cluster-affinity expression.
func clusterAffinityExpr(expr string) string {
	return workload(`
  affinity:
    clusterAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        clusterSelectorTerms:
        - matchExpressions:
          - ` + expr + `
`)
}

const required = "spec.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0]"

func cluster(spec string) string {
	return `
apiVersion: compute.placer.dev/v1alpha1
kind: KubernetesCluster
metadata: {name: c, namespace: default}
spec:
` + spec
}

func TestInvalidObjectsAreRefused(t *testing.T) {
	env := testenv.Start(t)
	cases := []struct {
		name      string
		manifest  string
		wantField string
	}{
		{"operator not in enum", clusterAffinityExpr(`{key: region, operator: Near, values: [a]}`), required + ".matchExpressions[0].operator"},
		{"In without values", clusterAffinityExpr(`{key: region, operator: In}`), required + ".matchExpressions[0].values"},
		{"NotIn with empty values", clusterAffinityExpr(`{key: region, operator: NotIn, values: []}`), required + ".matchExpressions[0].values"},
		{"Exists with values", clusterAffinityExpr(`{key: region, operator: Exists, values: [a]}`), required + ".matchExpressions[0].values"},
		{"DoesNotExist with values", clusterAffinityExpr(`{key: region, operator: DoesNotExist, values: [a]}`), required + ".matchExpressions[0].values"},
		{"Gt with two values", clusterAffinityExpr(`{key: nodes, operator: Gt, values: ["1", "2"]}`), required + ".matchExpressions[0].values"},
		{"Lt with a non-integer", clusterAffinityExpr(`{key: nodes, operator: Lt, values: [ten]}`), required + ".matchExpressions[0].values"},
		{"empty expression key", clusterAffinityExpr(`{key: "", operator: Exists}`), required + ".matchExpressions[0].key"},
		{"no cluster selector terms", workload(`
  affinity:
    clusterAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        clusterSelectorTerms: []
`), "spec.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms"},
		{"matchFields on a label", workload(`
  affinity:
    clusterAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        clusterSelectorTerms:
        - matchFields: [{key: metadata.labels, operator: In, values: [a]}]
`), required + ".matchFields[0].key"},
		{"preferred weight 0", workload(`
  affinity:
    clusterAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 0, preference: {matchExpressions: [{key: a, operator: Exists}]}}
`), "spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"},
		{"preferred weight 101", workload(`
  affinity:
    clusterAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 101, preference: {matchExpressions: [{key: a, operator: Exists}]}}
`), "spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"},
		{"workload affinity weight 0", workload(`
  affinity:
    workloadAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 0, workloadAffinityTerm: {topologyKey: region}}
`), "spec.affinity.workloadAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"},
		{"empty topologyKey", workload(`
  affinity:
    workloadAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: "", labelSelector: {matchLabels: {app: db}}}
`), "spec.affinity.workloadAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
		{"missing topologyKey", workload(`
  affinity:
    workloadAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: db}}}
`), "spec.affinity.workloadAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
		{"label selector operator", workload(`
  affinity:
    workloadAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, labelSelector: {matchExpressions: [{key: app, operator: Near, values: [a]}]}}
`), "spec.affinity.workloadAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator"},
		{"bad namespace in term", workload(`
  affinity:
    workloadAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, namespaces: [Not_A_Namespace]}
`), "spec.affinity.workloadAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]"},
		{"negative replicas", workloadHead + `
spec:
  targetDeployment:
    replicas: -1
    template: {spec: {containers: [{name: app, image: pause}]}}
`, "spec.targetDeployment.replicas"},
		{"override without a name", workload("  overrides: [{clusterSelector: {}, args: [a]}]\n"), "spec.overrides[0].name"},
		{"override name not a DNS label", workload("  overrides: [{name: Eu_Mirror, clusterSelector: {}, args: [a]}]\n"), "spec.overrides[0].name"},
		{"two overrides of one name", workload("  overrides: [{name: a, clusterSelector: {}, args: [a]}, {name: a, clusterSelector: {}, args: [b]}]\n"), "spec.overrides[1]"},
		{"override that changes nothing", workload("  overrides: [{name: a, clusterSelector: {}}]\n"), "spec.overrides[0]"},
		{"override without a cluster selector", workload("  overrides: [{name: a, args: [x]}]\n"), "spec.overrides[0].clusterSelector"},
		{"override selector operator", workload("  overrides: [{name: a, clusterSelector: {matchExpressions: [{key: region, operator: Near, values: [x]}]}, args: [x]}]\n"), "spec.overrides[0].clusterSelector.matchExpressions[0].operator"},
		{"override image without a part", workload("  overrides: [{name: a, clusterSelector: {}, image: {}}]\n"), "spec.overrides[0].image"},
		{"override image registry with a path", workload("  overrides: [{name: a, clusterSelector: {}, image: {registry: \"mirror.example.com/x\"}}]\n"), "spec.overrides[0].image.registry"},
		{"override image registry that is a single name", workload("  overrides: [{name: a, clusterSelector: {}, image: {registry: mirror}}]\n"), "spec.overrides[0].image.registry"},
		{"override image tag with a colon", workload("  overrides: [{name: a, clusterSelector: {}, image: {tag: \"1:2\"}}]\n"), "spec.overrides[0].image.tag"},
		{"override image repository in capitals", workload("  overrides: [{name: a, clusterSelector: {}, image: {repository: Team/App}}]\n"), "spec.overrides[0].image.repository"},
		{"override env without a name", workload("  overrides: [{name: a, clusterSelector: {}, env: [{value: x}]}]\n"), "spec.overrides[0].env[0].name"},
		{"override resources empty", workload("  overrides: [{name: a, clusterSelector: {}, resources: {}}]\n"), "spec.overrides[0].resources"},
		{"override resources not a quantity", workload("  overrides: [{name: a, clusterSelector: {}, resources: {requests: {cpu: lots}}}]\n"), "spec.overrides[0].resources.requests.cpu"},
		{"override nodeSelector key", workload("  overrides: [{name: a, clusterSelector: {}, nodeSelector: {\"a b\": x}}]\n"), "spec.overrides[0].nodeSelector"},
		{"override label of placer's own", workload("  overrides: [{name: a, clusterSelector: {}, labels: {compute.placer.dev/x: y}}]\n"), "spec.overrides[0].labels"},
		{"override annotation of placer's own", workload("  overrides: [{name: a, clusterSelector: {}, annotations: {multicluster.placer.dev/is-allowed: \"true\"}}]\n"), "spec.overrides[0].annotations"},
		{"resource of apiVersion v1 that is neither Secret nor ConfigMap", workload("  resources: [{apiVersion: v1, kind: Pod, name: x}]\n"), "spec.resources[0].kind"},
		{"resource of no apiVersion that is neither Secret nor ConfigMap", workload("  resources: [{kind: ServiceAccount, name: x}]\n"), "spec.resources[0].kind"},
		{"resource without a name", workload("  resources: [{kind: Secret}]\n"), "spec.resources[0].name"},
		{"resource name not a DNS subdomain", workload("  resources: [{kind: Secret, name: Db_Password}]\n"), "spec.resources[0].name"},
		{"resource kind not a kind", workload("  resources: [{apiVersion: database.example.org/v1alpha1, kind: postgres, name: x}]\n"), "spec.resources[0].kind"},
		{"resource apiVersion not a group version", workload("  resources: [{apiVersion: \"database/example/v1\", kind: PostgreSQLInstance, name: x}]\n"), "spec.resources[0].apiVersion"},
		{"fanOut 0", workload("  placement: {fanOut: 0}\n"), "spec.placement.fanOut"},
		{"fanOut 17", workload("  placement: {fanOut: 17}\n"), "spec.placement.fanOut"},
		{"unknown placement mode", workload("  placement: {mode: Sometimes}\n"), "spec.placement.mode"},
		{"NoReservation with fanOut 2", workload("  placement: {mode: NoReservation, fanOut: 2}\n"), "spec.placement.fanOut"},
		{"unknown rebalance policy", workload("  placement: {rebalance: Always}\n"), "spec.placement.rebalance"},
		{"target cluster name not DNS-1123", workload("  targetCluster: {name: Bad_Name}\n"), "spec.targetCluster.name"},
		{"target cluster without name", workload("  targetCluster: {namespace: default}\n"), "spec.targetCluster.name"},
		{"target cluster namespace not DNS-1123", workload("  targetCluster: {name: east, namespace: Not.OK}\n"), "spec.targetCluster.namespace"},
		{"target namespace not DNS-1123", workload("  targetNamespace: UPPER\n"), "spec.targetNamespace"},
		{"schedulerName with a space", workload("  schedulerName: my scheduler\n"), "spec.schedulerName"},
		{"toleration effect", workload("  clusterTolerations: [{key: a, operator: Exists, effect: Evict}]\n"), "spec.clusterTolerations[0].effect"},
		{"toleration operator", workload("  clusterTolerations: [{key: a, operator: Maybe}]\n"), "spec.clusterTolerations[0].operator"},
		{"toleration Exists with a value", workload("  clusterTolerations: [{key: a, operator: Exists, value: b}]\n"), "spec.clusterTolerations[0].value"},
		{"toleration without key needs Exists", workload("  clusterTolerations: [{operator: Equal, value: b}]\n"), "spec.clusterTolerations[0].operator"},
		{"no targetDeployment", workloadHead + "spec: {schedulerName: x}\n", "spec.targetDeployment"},
		{"pod template without containers", workloadHead + "spec: {targetDeployment: {template: {spec: {}}}}\n", "spec.targetDeployment.template.spec.containers"},
		{"workload name not DNS-1123", strings.Replace(workload(""), "name: w,", "name: W_1,", 1), "metadata.name"},
		{"pod template with an empty container list", workloadHead + "spec: {targetDeployment: {template: {spec: {containers: []}}}}\n", "spec.targetDeployment.template.spec.containers"},
		{"cluster selector key not a label key", workload("  clusterSelector: {\"bad key!\": a}\n"), "spec.clusterSelector"},
		{"cluster selector key name over 63 characters", workload("  clusterSelector: {" + strings.Repeat("k", 64) + ": a}\n"), "spec.clusterSelector"},
		{"cluster selector value not a label value", workload("  clusterSelector: {region: \"-east-\"}\n"), "spec.clusterSelector.region"},
		{"cluster selector value over 63 characters", workload("  clusterSelector: {region: " + strings.Repeat("v", 64) + "}\n"), "spec.clusterSelector.region"},
		{"affinity key with a space", clusterAffinityExpr(`{key: "a b", operator: Exists}`), required + ".matchExpressions[0].key"},
		{"affinity key name over 63 characters", clusterAffinityExpr(`{key: example.com/` + strings.Repeat("k", 64) + `, operator: Exists}`), required + ".matchExpressions[0].key"},
		{"affinity key with two slashes", clusterAffinityExpr(`{key: a/b/c, operator: Exists}`), required + ".matchExpressions[0].key"},
		{"affinity value not a label value", clusterAffinityExpr(`{key: region, operator: In, values: ["us east"]}`), required + ".matchExpressions[0].values[0]"},
		{"affinity value over 63 characters", clusterAffinityExpr(`{key: region, operator: In, values: [` + strings.Repeat("v", 64) + `]}`), required + ".matchExpressions[0].values[0]"},
		{"Gt with a negative number", clusterAffinityExpr(`{key: nodes, operator: Gt, values: ["-5"]}`), required + ".matchExpressions[0].values[0]"},
		{"matchFields with two values", workload(`
  affinity:
    clusterAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        clusterSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [east, west]}]
`), required + ".matchFields[0].values"},
		{"matchFields with Exists", workload(`
  affinity:
    clusterAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        clusterSelectorTerms:
        - matchFields: [{key: metadata.name, operator: Exists}]
`), required + ".matchFields[0].values"},
		{"matchFields value not a cluster name", workload(`
  affinity:
    clusterAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        clusterSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [East_1]}]
`), required + ".matchFields[0].values[0]"},
		{"preferred term key not a label key", workload(`
  affinity:
    clusterAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 10, preference: {matchExpressions: [{key: "a b", operator: Exists}]}}
`), "spec.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key"},
		{"workload affinity matchLabels key", workload(`
  affinity:
    workloadAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, labelSelector: {matchLabels: {"a b": db}}}
`), "spec.affinity.workloadAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels"},
		{"workload affinity matchLabels value", workload(`
  affinity:
    workloadAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, labelSelector: {matchLabels: {app: "d b"}}}
`), "spec.affinity.workloadAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels.app"},
		{"label selector expression key", workload(`
  affinity:
    workloadAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, labelSelector: {matchExpressions: [{key: "-app", operator: Exists}]}}
`), "spec.affinity.workloadAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].key"},
		{"label selector expression value", workload(`
  affinity:
    workloadAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, labelSelector: {matchExpressions: [{key: app, operator: In, values: ["a/b"]}]}}
`), "spec.affinity.workloadAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values[0]"},
		{"label selector In without values", workload(`
  affinity:
    workloadAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: region, labelSelector: {matchExpressions: [{key: app, operator: In}]}}
`), "spec.affinity.workloadAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values"},
		{"topologyKey not a label key", workload(`
  affinity:
    workloadAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: "topology region"}
`), "spec.affinity.workloadAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
		{"namespaceSelector key not a label key", workload(`
  affinity:
    workloadAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 5, workloadAffinityTerm: {topologyKey: region, namespaceSelector: {matchLabels: {"t!": a}}}}
`), "spec.affinity.workloadAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].workloadAffinityTerm.namespaceSelector.matchLabels"},
		{"strategy type not in enum", workloadHead + `
spec:
  targetDeployment:
    strategy: {type: Foo}
    template: {spec: {containers: [{name: app, image: pause}]}}
`, "spec.targetDeployment.strategy.type"},
		{"maxSurge neither a number nor a percentage", workloadHead + `
spec:
  targetDeployment:
    strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: abc}}
    template: {spec: {containers: [{name: app, image: pause}]}}
`, "spec.targetDeployment.strategy.rollingUpdate.maxSurge"},
		{"negative maxUnavailable", workloadHead + `
spec:
  targetDeployment:
    strategy: {rollingUpdate: {maxUnavailable: -1}}
    template: {spec: {containers: [{name: app, image: pause}]}}
`, "spec.targetDeployment.strategy.rollingUpdate.maxUnavailable"},
		{"maxUnavailable over 100%", workloadHead + `
spec:
  targetDeployment:
    strategy: {rollingUpdate: {maxUnavailable: 150%}}
    template: {spec: {containers: [{name: app, image: pause}]}}
`, "spec.targetDeployment.strategy.rollingUpdate.maxUnavailable"},
		{"Recreate with rollingUpdate", workloadHead + `
spec:
  targetDeployment:
    strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}
    template: {spec: {containers: [{name: app, image: pause}]}}
`, "spec.targetDeployment.strategy.rollingUpdate"},
		{"placer's handshake annotation in the template", workloadHead + `
spec:
  targetDeployment:
    template:
      metadata: {annotations: {multicluster.placer.dev/is-allowed: "true"}}
      spec: {containers: [{name: app, image: pause}]}
`, "spec.targetDeployment.template.metadata.annotations"},
		{"placer's label in the template", workloadHead + `
spec:
  targetDeployment:
    template:
      metadata: {labels: {multicluster.placer.dev/workload-uid: x}}
      spec: {containers: [{name: app, image: pause}]}
`, "spec.targetDeployment.template.metadata.labels"},
		{"Service port 70000", workload("  targetService: {ports: [{port: 70000}]}\n"), "spec.targetService.ports"},
		{"Service port 0", workload("  targetService: {ports: [{port: 0}]}\n"), "spec.targetService.ports"},
		{"Service targetPort 70000", workload("  targetService: {ports: [{port: 80, targetPort: 70000}]}\n"), "spec.targetService.ports"},
		{"Service type not supported", workload("  targetService: {type: Foo, ports: [{port: 80}]}\n"), "spec.targetService.type"},
		{"Service name (the Workload's) over 63 characters", strings.Replace(workload("  targetService: {ports: [{port: 80}]}\n"), "name: w,", "name: "+strings.Repeat("w", 64)+",", 1), "targetService must be named"},
		{"Service name (the Workload's) with a dot", strings.Replace(workload("  targetService: {ports: [{port: 80}]}\n"), "name: w,", "name: web.v1,", 1), "targetService must be named"},
		{"targetNamespaces key not a namespace", cluster("  connectionSecretRef: {name: s}\n  targetNamespaces: {Team_A: apps}\n"), "spec.targetNamespaces"},
		{"targetNamespaces value not a namespace", cluster("  connectionSecretRef: {name: s}\n  targetNamespaces: {team-a: Apps.Prod}\n"), "spec.targetNamespaces.team-a"},
		{"cluster podSecurity not a level", cluster("  connectionSecretRef: {name: s}\n  podSecurity: lenient\n"), "spec.podSecurity"},
		{"cluster taint key with a space", cluster("  connectionSecretRef: {name: s}\n  taints: [{key: \"a b\", effect: NoSchedule}]\n"), "spec.taints[0].key"},
		{"cluster provider with a space", cluster("  connectionSecretRef: {name: s}\n  provider: \"my cloud\"\n"), "spec.provider"},
		{"cluster without connectionSecretRef or clusterProfileRef", cluster("  provider: aws\n"), "exactly one of connectionSecretRef and clusterProfileRef"},
		{"cluster with both connectionSecretRef and clusterProfileRef", cluster("  connectionSecretRef: {name: s}\n  clusterProfileRef: {name: p}\n"), "exactly one of connectionSecretRef and clusterProfileRef"},
		{"clusterProfileRef not a name", cluster("  clusterProfileRef: {name: \"Not A Name\"}\n"), "spec.clusterProfileRef.name"},
		{"connectionSecretRef without name", cluster("  connectionSecretRef: {key: kubeconfig}\n"), "spec.connectionSecretRef.name"},
		{"connectionSecretRef with empty name", cluster("  connectionSecretRef: {name: \"\"}\n"), "spec.connectionSecretRef.name"},
		{"cluster taint effect", cluster("  connectionSecretRef: {name: s}\n  taints: [{key: a, effect: Evict}]\n"), "spec.taints[0].effect"},
		{"cluster taint without key", cluster("  connectionSecretRef: {name: s}\n  taints: [{key: \"\", effect: NoSchedule}]\n"), "spec.taints[0].key"},
		{"chaperon without containers", `
apiVersion: multicluster.placer.dev/v1alpha1
kind: PodChaperon
metadata: {name: p, namespace: default}
spec: {}
`, "spec.containers"},
	}
	if len(cases) < 60 {
		t.Fatalf("want at least 60 invalid manifests, have %d", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := decode(t, tc.manifest)
			err := env.Client.Create(context.Background(), u)
			if err == nil {
				_ = env.Client.Delete(context.Background(), u)
				t.Fatalf("the API server accepted an invalid %s", u.GetKind())
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error does not name %s:\n%v", tc.wantField, err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, decode(t, workload(""))); err != nil {
		t.Fatal(err)
	}
	w := &computev1alpha1.Workload{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "w"}, w); err != nil {
		t.Fatal(err)
	}
	if w.Spec.SchedulerName != computev1alpha1.DefaultSchedulerName {
		t.Errorf("schedulerName = %q, want %q", w.Spec.SchedulerName, computev1alpha1.DefaultSchedulerName)
	}
	if w.Spec.Placement.FanOut != 1 || w.Spec.Placement.Mode != computev1alpha1.PlacementModeReserve || w.Spec.Placement.Rebalance != computev1alpha1.RebalanceNever {
		t.Errorf("placement = %+v, want fanOut 1, mode Reserve and rebalance Never", w.Spec.Placement)
	}
	if md := w.Spec.TargetDeployment.Template.ObjectMeta; md.Labels["app"] != "web" || md.Annotations["team"] != "a" {
		t.Errorf("the pod template's metadata was pruned: %+v", md)
	}
	if w.Spec.TargetDeployment.Replicas == nil || *w.Spec.TargetDeployment.Replicas != 1 {
		t.Errorf("replicas = %v, want 1", w.Spec.TargetDeployment.Replicas)
	}
	if err := env.Client.Create(ctx, decode(t, cluster("  connectionSecretRef: {name: s}\n"))); err != nil {
		t.Fatal(err)
	}
	c := &computev1alpha1.KubernetesCluster{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "c"}, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.ConnectionSecretRef.Key != "kubeconfig" {
		t.Errorf("connectionSecretRef.key = %q, want kubeconfig", c.Spec.ConnectionSecretRef.Key)
	}
	// A cluster reached through a Secret is never switched to a
	// ClusterProfile (whose credentials are the admin's), nor back.
	c.Spec.ConnectionSecretRef, c.Spec.ClusterProfileRef = nil, &computev1alpha1.ClusterProfileReference{Name: "p"}
	if err := env.Client.Update(ctx, c); err == nil || !strings.Contains(err.Error(), "clusterProfileRef cannot be added or removed") {
		t.Errorf("switching a cluster to a ClusterProfile: %v, want refused", err)
	}
}

func TestExamplesAreAccepted(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	count := 0
	for _, f := range files {
		for _, u := range decodeFile(t, f) {
			if ns := u.GetNamespace(); ns != "" {
				err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			if err := env.Client.Create(ctx, u); err != nil {
				t.Errorf("%s: %s %s refused: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			count++
		}
	}
	t.Logf("applied %d objects from %d files", count, len(files))
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, manifest)
	}
	return u
}

// decodeFile reads every object of a multi-document YAML file.
func decodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

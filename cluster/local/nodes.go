package local

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KwokNodeAnnotation marks the nodes kwok manages; the same key is kwok's
// conventional taint, which keeps real workloads off fake nodes.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// KwokTaint is kwok's conventional taint for fake nodes.
var KwokTaint = corev1.Taint{Key: KwokNodeAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}

// KwokToleration tolerates KwokTaint.
var KwokToleration = corev1.Toleration{Key: KwokNodeAnnotation, Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}

// Node describes a kwok node to add.
type Node struct {
	Name   string
	CPU    string // e.g. "4"
	Memory string // e.g. "16Gi"
	Pods   string // defaults to "110"
	// Extended resources, e.g. {"nvidia.com/gpu": "8"}.
	Extended map[string]string
	Labels   map[string]string
	Taints   []corev1.Taint
}

// Object returns the Node object kwok will manage.
func (n Node) Object() (*corev1.Node, error) {
	res := corev1.ResourceList{}
	add := func(name corev1.ResourceName, v string) error {
		if v == "" {
			return nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return errors.Wrapf(err, "node %s: bad quantity for %s", n.Name, name)
		}
		res[name] = q
		return nil
	}
	pods := n.Pods
	if pods == "" {
		pods = "110"
	}
	if err := add(corev1.ResourceCPU, n.CPU); err != nil {
		return nil, err
	}
	if err := add(corev1.ResourceMemory, n.Memory); err != nil {
		return nil, err
	}
	if err := add(corev1.ResourcePods, pods); err != nil {
		return nil, err
	}
	for k, v := range n.Extended {
		if err := add(corev1.ResourceName(k), v); err != nil {
			return nil, err
		}
	}
	labels := map[string]string{
		"type":                   "kwok",
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}, nil
}

// AddNodes creates kwok nodes in the cluster.
func (c *Cluster) AddNodes(ctx context.Context, nodes ...Node) error {
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	for _, n := range nodes {
		obj, err := n.Object()
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return errors.Wrapf(err, "cannot create node %s", n.Name)
		}
	}
	return nil
}

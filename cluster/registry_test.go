package cluster

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// TestChaperonHandlers: a chaperon's change goes to the OnChaperon
// handler whatever the chaperon, and to an AlsoOnChaperon handler only
// for the chaperons it takes (all, when it takes no filter).
func TestChaperonHandlers(t *testing.T) {
	r := &Registry{}
	var main, proxies, every []string
	r.OnChaperon(func(w types.NamespacedName) { main = append(main, w.Name) })
	r.AlsoOnChaperon(func(w types.NamespacedName) { proxies = append(proxies, w.Name) }, func(ch *mcv1alpha1.PodChaperon) bool {
		return ch.Annotations[mcv1alpha1.AnnotationMirrorStatus] == mcv1alpha1.MirrorStatusFull
	})
	r.AlsoOnChaperon(func(w types.NamespacedName) { every = append(every, w.Name) }, nil)
	proxy := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mcv1alpha1.AnnotationMirrorStatus: mcv1alpha1.MirrorStatusFull}}}
	r.chaperonChanged(proxy, types.NamespacedName{Namespace: "apps", Name: "web-1"})
	r.chaperonChanged(&mcv1alpha1.PodChaperon{}, types.NamespacedName{Namespace: "apps", Name: "batch"})
	if want := []string{"web-1", "batch"}; !slices.Equal(main, want) || !slices.Equal(every, want) {
		t.Errorf("OnChaperon saw %v, an unfiltered AlsoOnChaperon %v; want %v both", main, every, want)
	}
	if want := []string{"web-1"}; !slices.Equal(proxies, want) {
		t.Errorf("the proxy pods' handler saw %v, want %v: only the chaperon that mirrors a pod's whole status", proxies, want)
	}
}

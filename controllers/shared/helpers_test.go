package shared

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWrittenWorkloads: the copy a controller wrote stands in for the
// cache's older one until the cache has caught up.
func TestWrittenWorkloads(t *testing.T) {
	var c WrittenWorkloads
	key := types.NamespacedName{Namespace: "default", Name: "w"}
	at := func(rv string, uid types.UID) *v1alpha1.Workload {
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"}}
		w.ResourceVersion, w.UID = rv, uid
		return w
	}
	if got := c.Latest(key, at("5", "u")); got.ResourceVersion != "5" {
		t.Fatalf("nothing written: got %s, want the cache's 5", got.ResourceVersion)
	}
	c.Remember(at("7", "u"))
	if got := c.Latest(key, at("5", "u")); got.ResourceVersion != "7" {
		t.Errorf("cache behind the write: got %s, want the written 7", got.ResourceVersion)
	}
	if got := c.Latest(key, at("9", "u")); got.ResourceVersion != "9" {
		t.Errorf("cache past the write: got %s, want the cache's 9", got.ResourceVersion)
	}
	if got := c.Latest(key, at("5", "u")); got.ResourceVersion != "5" {
		t.Errorf("the written copy was not forgotten once the cache caught up: got %s", got.ResourceVersion)
	}
	c.Remember(at("7", "u"))
	if got := c.Latest(key, at("3", "other")); got.UID != "other" {
		t.Errorf("a Workload of the same name recreated: got uid %s, want the cache's", got.UID)
	}
}

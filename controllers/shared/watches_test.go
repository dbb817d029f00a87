package shared

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/propagator"
)

// enqueued records what a watch enqueued, and lets a test wait for it.
type enqueued struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]int
	ch   chan struct{}
}

func newEnqueued() *enqueued {
	return &enqueued{seen: map[types.NamespacedName]int{}, ch: make(chan struct{}, 100)}
}

func (e *enqueued) add(k types.NamespacedName) {
	e.mu.Lock()
	e.seen[k]++
	e.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	default:
	}
}

func (e *enqueued) count(k types.NamespacedName) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[k]
}

// waitFor waits until cond holds, woken by each enqueue.
func (e *enqueued) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-e.ch:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestObjectWatches runs the per-object watches against a real API server:
// a user learns an object's absence from the first list and every change
// after it; two users share one watch, which stops with the last; a kind
// the server does not serve, and one the identity may not read, say why.
func TestObjectWatches(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t)
	ctx := context.Background()
	newWatches := func(cfg *rest.Config, e *enqueued) *ObjectWatches {
		t.Helper()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		o := NewObjectWatches(dyn, mapper, e.add)
		t.Cleanup(o.Close)
		return o
	}
	e := newEnqueued()
	o := newWatches(env.Config, e)
	o.retry = 0
	u1, u2 := types.NamespacedName{Namespace: "default", Name: "one"}, types.NamespacedName{Namespace: "default", Name: "two"}
	key := CoreKey(propagator.KindSecret, "default", "watched")

	o.Use(u1, []ObjectKey{key})
	e.waitFor(t, "the first list to enqueue the user", func() bool { return e.count(u1) > 0 })
	if obj, synced, err := o.Get(key); obj != nil || !synced || err != nil {
		t.Fatalf("get before the Secret exists = %v, %v, %v; want nil, synced", obj, synced, err)
	}

	o.Use(u2, []ObjectKey{key})
	before1, before2 := e.count(u1), e.count(u2)
	// Another Secret is nobody's business: created first, so that a
	// watch that saw it would have seen it before the named one.
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "watched"}, StringData: map[string]string{"k": "v"}}
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "both users to learn of the Secret", func() bool { return e.count(u1) > before1 && e.count(u2) > before2 })
	o.mu.Lock()
	held := o.watches[key].inf.GetStore().ListKeys()
	o.mu.Unlock()
	if !slices.Equal(held, []string{"default/watched"}) {
		t.Errorf("the watch of Secret watched holds %v, want only default/watched", held)
	}
	got := &corev1.Secret{}
	if found, synced, err := GetTyped(o, key, got); !found || !synced || err != nil || string(got.Data["k"]) != "v" {
		t.Fatalf("getTyped = %v, %v, %v, data %v", found, synced, err, got.Data)
	}
	if _, synced, _ := o.Get(CoreKey(propagator.KindSecret, "default", "other")); synced {
		t.Error("a Secret no user named is watched")
	}

	o.Forget(u1)
	before2 = e.count(u2)
	s.StringData = map[string]string{"k": "w"}
	if err := env.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the remaining user to learn of the edit", func() bool { return e.count(u2) > before2 })
	o.Forget(u2)
	o.mu.Lock()
	left := len(o.watches)
	o.mu.Unlock()
	if left != 0 {
		t.Errorf("%d watches left after every user let go", left)
	}

	// A kind the API server does not serve.
	unknown := ObjectKey{GVK: schema.GroupVersionKind{Group: "database.example.org", Version: "v1alpha1", Kind: "PostgreSQLInstance"}, Namespace: "default", Name: "pg"}
	o.Use(u1, []ObjectKey{unknown})
	if _, synced, err := o.Get(unknown); synced || err == nil || !strings.Contains(err.Error(), "does not serve") {
		t.Errorf("get of a kind not served = synced %v, %v; want why", synced, err)
	}
	// Served once its CRD is there: the next use starts the watch.
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "postgresqlinstances.database.example.org"},
		"spec": map[string]any{
			"group": "database.example.org", "scope": "Namespaced",
			"names": map[string]any{"plural": "postgresqlinstances", "singular": "postgresqlinstance", "kind": "PostgreSQLInstance", "listKind": "PostgreSQLInstanceList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the claim's watch to start and list once its kind is served", func() bool {
		o.Use(u1, []ObjectKey{unknown})
		_, synced, _ := o.Get(unknown)
		return synced
	})

	// An identity that may not read ConfigMaps: its users learn why, once.
	denied := newEnqueued()
	od := newWatches(env.UserConfig(t, "no-rights"), denied)
	cm := CoreKey(propagator.KindConfigMap, "default", "settings")
	od.Use(u1, []ObjectKey{cm})
	denied.waitFor(t, "the refused list to enqueue the user", func() bool { return denied.count(u1) > 0 })
	// The reflector retries (after 0.8 s, then more); the user heard once.
	time.Sleep(3 * time.Second)
	if n := denied.count(u1); n != 1 {
		t.Errorf("the refused watch enqueued its user %d times, want once", n)
	}
	if _, synced, err := od.Get(cm); synced || err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("get as an identity without rights = synced %v, %v; want Forbidden", synced, err)
	}
}

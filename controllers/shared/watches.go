package shared

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/placer-dev/placer/internal/informers"
)

// ErrNotServed: the API server does not serve a kind (yet: a CRD may come).
var ErrNotServed = errors.New("the management cluster does not serve")

// ObjectKey names one object of the management cluster.
type ObjectKey struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

func (k ObjectKey) String() string { return k.GVK.Kind + " " + k.Namespace + "/" + k.Name }

// ObjectWatches keeps one watch per object that something (a user: a
// KubernetesCluster, a Workload) reads, each a name field selector in its
// namespace, as the kubelet watches the Secrets and ConfigMaps of the pods
// bound to it: the manager never lists or caches objects nobody named
// (tenants' other Secrets), and a change reaches its users at once. RBAC
// cannot say "only referenced Secrets"; this is how placer keeps to it.
// A watch stops when its last user lets go.
type ObjectWatches struct {
	dyn     dynamic.Interface
	mapper  meta.RESTMapper
	enqueue func(types.NamespacedName)

	// retry is how soon a watch that could not start is tried again.
	retry time.Duration

	mu      sync.Mutex
	watches map[ObjectKey]*objectWatch
	users   map[types.NamespacedName][]ObjectKey
	closed  bool
}

type objectWatch struct {
	inf   toolscache.SharedInformer
	stop  chan struct{}
	users map[types.NamespacedName]bool
	// err is why the watch cannot start (a kind the API server does not
	// serve), or the last error of its list or watch (Forbidden).
	err error
	// failed: when it could not start (inf is nil).
	failed time.Time
}

func NewObjectWatches(dyn dynamic.Interface, mapper meta.RESTMapper, enqueue func(types.NamespacedName)) *ObjectWatches {
	return &ObjectWatches{dyn: dyn, mapper: mapper, enqueue: enqueue, retry: 30 * time.Second, watches: map[ObjectKey]*objectWatch{}, users: map[types.NamespacedName][]ObjectKey{}}
}

// Use sets the objects user reads: watches start for the new ones, and
// those no one reads any more stop. Their events (and their first list)
// enqueue every user.
func (o *ObjectWatches) Use(user types.NamespacedName, keys []ObjectKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		// The manager is stopping; a reconcile still running starts nothing.
		return
	}
	want := map[ObjectKey]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for _, k := range o.users[user] {
		if !want[k] {
			o.release(user, k)
		}
	}
	for k := range want {
		w := o.watches[k]
		switch {
		case w == nil:
			w = o.start(k)
			o.watches[k] = w
		case w.inf == nil && time.Since(w.failed) >= o.retry:
			// It could not start (a kind not served): try again, now and
			// then (discovery is a round trip, under the lock).
			users := w.users
			w = o.start(k)
			w.users = users
			o.watches[k] = w
		}
		w.users[user] = true
	}
	if len(keys) == 0 {
		delete(o.users, user)
		return
	}
	o.users[user] = keys
}

// Forget lets go of everything user reads.
func (o *ObjectWatches) Forget(user types.NamespacedName) { o.Use(user, nil) }

// release drops user from k's watch, stopping it when it was the last.
// The lock is held.
func (o *ObjectWatches) release(user types.NamespacedName, k ObjectKey) {
	w := o.watches[k]
	if w == nil {
		return
	}
	delete(w.users, user)
	if len(w.users) == 0 {
		if w.stop != nil {
			close(w.stop)
		}
		delete(o.watches, k)
	}
}

// start begins watching k. The lock is held.
func (o *ObjectWatches) start(k ObjectKey) *objectWatch {
	w := &objectWatch{users: map[types.NamespacedName]bool{}}
	m, err := o.mapper.RESTMapping(k.GVK.GroupKind(), k.GVK.Version)
	if err != nil {
		w.err, w.failed = fmt.Errorf("%w %s: %w", ErrNotServed, k.GVK, err), time.Now()
		return w
	}
	sel := fields.OneTermEqualSelector("metadata.name", k.Name).String()
	w.inf = dynamicinformer.NewFilteredDynamicInformer(o.dyn, m.Resource, k.Namespace, 0, nil,
		func(opts *metav1.ListOptions) { opts.FieldSelector = sel }).Informer()
	w.stop = make(chan struct{})
	_ = w.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *toolscache.Reflector, err error) {
		toolscache.DefaultWatchErrorHandler(ctx, r, err)
		o.mu.Lock()
		first := w.err == nil
		w.err = err
		users := usersOf(w)
		o.mu.Unlock()
		if first {
			// Once, so that the users say why they wait; the reflector
			// retries with its own backoff.
			o.notify(users)
		}
	})
	_, _ = w.inf.AddEventHandler(informers.OnEvery(func(*unstructured.Unstructured) {
		o.mu.Lock()
		w.err = nil
		users := usersOf(w)
		o.mu.Unlock()
		o.notify(users)
	}))
	go w.inf.Run(w.stop)
	go func() {
		// An object that does not exist has no event: its users learn it
		// from the first list.
		if toolscache.WaitForCacheSync(w.stop, w.inf.HasSynced) {
			o.mu.Lock()
			w.err = nil
			users := usersOf(w)
			o.mu.Unlock()
			o.notify(users)
		}
	}()
	return w
}

func usersOf(w *objectWatch) []types.NamespacedName {
	return slices.Collect(maps.Keys(w.users))
}

func (o *ObjectWatches) notify(users []types.NamespacedName) {
	for _, u := range users {
		o.enqueue(u)
	}
}

// Get returns k from its watch once it has listed: nil when it does not
// exist. synced is false before (and without a watch), with the error
// that keeps it from listing, if any. The object is the watch's: it must
// not be changed.
func (o *ObjectWatches) Get(k ObjectKey) (obj *unstructured.Unstructured, synced bool, err error) {
	o.mu.Lock()
	w := o.watches[k]
	var werr error
	if w != nil {
		werr = w.err
	}
	o.mu.Unlock()
	if w == nil {
		return nil, false, nil
	}
	if w.inf == nil || !w.inf.HasSynced() {
		return nil, false, werr
	}
	item, exists, err := w.inf.GetStore().GetByKey(k.Namespace + "/" + k.Name)
	if err != nil || !exists {
		return nil, true, nil
	}
	obj, _ = item.(*unstructured.Unstructured)
	return obj, true, nil
}

// Close stops every watch.
func (o *ObjectWatches) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for k, w := range o.watches {
		if w.stop != nil {
			close(w.stop)
		}
		delete(o.watches, k)
	}
	o.users = map[types.NamespacedName][]ObjectKey{}
}

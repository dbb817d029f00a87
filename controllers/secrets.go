package controllers

import (
	"sync"

	"github.com/placer-dev/placer/internal/informers"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// secretWatches keeps, per KubernetesCluster, a watch of exactly the Secret
// it references (a name field selector in its namespace): the manager
// never lists or caches other Secrets, and a rotated kubeconfig reaches the
// cluster controller at once. RBAC cannot say "only referenced Secrets";
// this is how placer keeps to it.
type secretWatches struct {
	cs      kubernetes.Interface
	enqueue func(types.NamespacedName)

	mu     sync.Mutex
	m      map[types.NamespacedName]*secretWatch
	closed bool
}

type secretWatch struct {
	secret types.NamespacedName
	inf    toolscache.SharedInformer
	stop   chan struct{}
}

func newSecretWatches(cs kubernetes.Interface, enqueue func(types.NamespacedName)) *secretWatches {
	return &secretWatches{cs: cs, enqueue: enqueue, m: map[types.NamespacedName]*secretWatch{}}
}

// ensure watches secret for the cluster, replacing a watch of another one.
func (s *secretWatches) ensure(cluster, secret types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// The manager is stopping; a reconcile still running starts nothing.
		return
	}
	if w, ok := s.m[cluster]; ok {
		if w.secret == secret {
			return
		}
		close(w.stop)
	}
	lw := toolscache.NewListWatchFromClient(s.cs.CoreV1().RESTClient(), "secrets", secret.Namespace, fields.OneTermEqualSelector("metadata.name", secret.Name))
	inf := toolscache.NewSharedInformer(lw, &corev1.Secret{}, 0)
	_, _ = inf.AddEventHandler(informers.OnEvery(func(*corev1.Secret) { s.enqueue(cluster) }))
	w := &secretWatch{secret: secret, inf: inf, stop: make(chan struct{})}
	go inf.Run(w.stop)
	s.m[cluster] = w
}

// get returns the cluster's Secret from its watch, nil if there is none,
// once the watch has synced; synced is false before (and without a watch).
// The Secret is the watch's: it must not be changed.
func (s *secretWatches) get(cluster types.NamespacedName) (secret *corev1.Secret, synced bool) {
	s.mu.Lock()
	w := s.m[cluster]
	s.mu.Unlock()
	if w == nil || !w.inf.HasSynced() {
		return nil, false
	}
	o, exists, err := w.inf.GetStore().GetByKey(w.secret.Namespace + "/" + w.secret.Name)
	if err != nil || !exists {
		return nil, true
	}
	secret, _ = o.(*corev1.Secret)
	return secret, true
}

// remove stops the cluster's watch.
func (s *secretWatches) remove(cluster types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[cluster]; ok {
		close(w.stop)
		delete(s.m, cluster)
	}
}

// close stops every watch.
func (s *secretWatches) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for k, w := range s.m {
		close(w.stop)
		delete(s.m, k)
	}
}

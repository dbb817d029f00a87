package main

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/internal/testenv"
)

// TestCacheKeepsNoManagedFields: a component's cache hands out copies
// without managedFields (none of placer reads them), and an update made
// from such a copy keeps what the API server records of every writer.
func TestCacheKeepsNoManagedFields(t *testing.T) {
	env := testenv.Start(t)
	var f clientFlags
	cmd := &cobra.Command{Use: "component"}
	f.register(cmd, false)
	if err := cmd.Flags().Parse([]string{"--health-probe-bind-address=0", "--metrics-bind-address=0"}); err != nil {
		t.Fatal(err)
	}
	mgr, err := f.newManager(env.Config, "placer-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fields", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	if err := env.Client.Create(ctx, cm, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(cm), got) == nil, nil
	}); err != nil {
		t.Fatalf("the cache never held the ConfigMap: %v", err)
	}
	if len(got.ManagedFields) != 0 {
		t.Errorf("the cache's copy keeps %d managedFields entries", len(got.ManagedFields))
	}
	got.Data["b"] = "2"
	if err := mgr.GetClient().Update(ctx, got, client.FieldOwner("component")); err != nil {
		t.Fatal(err)
	}
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatal(err)
	}
	owners := map[string]bool{}
	for _, m := range live.ManagedFields {
		owners[m.Manager] = true
	}
	if !owners["someone"] || !owners["component"] {
		t.Errorf("managedFields after an update from the cache's copy name %v, want both writers", owners)
	}
}

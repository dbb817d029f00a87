package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// TestLogFlags: a component's log level and format come from its flags,
// and klog (through which client-go and leader election log) writes
// through the same logger, in the same format.
func TestLogFlags(t *testing.T) {
	logs := func(args ...string) (infoEnabled bool, lines []string) {
		t.Helper()
		var f clientFlags
		cmd := &cobra.Command{Use: "component"}
		f.register(cmd, false)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		log := f.logger(&buf)
		defer klog.ClearLogger()
		log.Info("from placer")
		klog.InfoS("from klog")
		klog.Flush()
		return log.V(0).Enabled(), strings.Split(strings.TrimSpace(buf.String()), "\n")
	}
	isJSON := func(line string) bool { return json.Unmarshal([]byte(line), &map[string]any{}) == nil }

	info, lines := logs()
	if !info || len(lines) != 2 || !isJSON(lines[0]) || !isJSON(lines[1]) || !strings.Contains(lines[1], "from klog") {
		t.Errorf("by default: info enabled %v, lines %q; want info, and both lines JSON, klog's included", info, lines)
	}
	info, _ = logs("--zap-log-level=error")
	if info {
		t.Error("--zap-log-level=error: info is still enabled")
	}
	_, lines = logs("--zap-encoder=console")
	if len(lines) != 2 || isJSON(lines[0]) || isJSON(lines[1]) {
		t.Errorf("--zap-encoder=console: lines %q, want two console lines", lines)
	}
	_, lines = logs("--development")
	if len(lines) != 2 || isJSON(lines[0]) {
		t.Errorf("--development: lines %q, want console lines", lines)
	}
}

// syncedAfter is a cache that has synced once closed is closed.
type syncedAfter chan struct{}

func (c syncedAfter) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c:
		return true
	case <-ctx.Done():
		return false
	}
}

// TestReadyWhenCachesSynced: /readyz fails until the caches have listed,
// within its second, and passes after.
func TestReadyWhenCachesSynced(t *testing.T) {
	c := make(syncedAfter)
	check := cachesSynced(c)
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	if err := check(req); err == nil {
		t.Error("ready before the caches synced")
	}
	close(c)
	if err := check(req); err != nil {
		t.Errorf("not ready once the caches synced: %v", err)
	}
}

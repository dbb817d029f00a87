package config_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
)

// installLine is an install command of the README: kubectl [--context X]
// apply [--server-side] -k config/DIR.
var installLine = regexp.MustCompile(`^kubectl (?:--context \S+ )?apply (--server-side )?-k (config/\S+)`)

// lastAppliedLimit is the size limit of all annotations of an object, which
// client-side 'kubectl apply' fills with the whole object.
const lastAppliedLimit = 262144

// TestREADMEInstall runs the README's install commands against a fresh
// cluster, with the machine's kubectl when there is one and the same
// server-side apply through client-go otherwise, and checks every object
// of both kustomizations is there afterwards. Each object would also fit
// client-side apply's annotation.
func TestREADMEInstall(t *testing.T) {
	root := testenv.RepoRoot(t)
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type install struct{ line, dir string }
	var installs []install
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := installLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			if m[1] == "" {
				t.Errorf("README: %q is a client-side apply; say --server-side", sc.Text())
			}
			installs = append(installs, install{line: sc.Text(), dir: m[2]})
		}
	}
	if len(installs) < 2 {
		t.Fatalf("README has %d install commands (kubectl apply -k config/…), want the management and the member one", len(installs))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, cl := freshCluster(ctx, t, "fresh")
	kubectl, _ := exec.LookPath("kubectl")
	for _, in := range installs {
		objs, err := deploy.Render(strings.TrimPrefix(in.dir, "config/"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if b, _ := json.Marshal(o.Object); len(b) >= lastAppliedLimit {
				t.Errorf("%s %s is %d bytes: too large for client-side apply's annotation (%d)", o.GetKind(), o.GetName(), len(b), lastAppliedLimit)
			}
		}
		if kubectl != "" {
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.KubeconfigPath(), "apply", "--server-side", "-k", filepath.Join(root, in.dir))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", in.line, err, out)
			}
			t.Logf("%s (with %s):\n%s", in.line, kubectl, out)
		} else if err := deploy.ApplyAll(ctx, c.RESTConfig(), objs); err != nil {
			t.Fatalf("%s (server-side apply through client-go; no kubectl here): %v", in.line, err)
		}
		for _, o := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			if err := cl.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				t.Errorf("%s: %s %s is not there: %v", in.line, o.GetKind(), o.GetName(), err)
			}
		}
	}
}

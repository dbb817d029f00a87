package candidate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"github.com/placer-dev/placer/internal/skew"
)

// DefaultVersionCheck is how often the candidate scheduler asks its
// member's version, to start again as the one its new version needs after
// an upgrade (/version has no watch).
const DefaultVersionCheck = 10 * time.Minute

// envPicked names the kube-scheduler version a candidate scheduler was
// started for, so that a misplaced binary fails rather than starting the
// next one again.
const envPicked = "PLACER_CANDIDATE_PICKED"

// OwnMinor is the minor version of this binary's kube-scheduler ("1.35"),
// as Kubernetes' own code says it.
func OwnMinor() string { return kubeversion.DefaultKubeBinaryVersion }

// minorOf returns a version's "MAJOR.MINOR".
func minorOf(version string) string {
	major, minor := skew.MajorMinor(version)
	return fmt.Sprintf("%d.%d", major, minor)
}

// RunPicked runs the candidate scheduler the member's version needs, by
// Kubernetes' version-skew policy (skew.CandidateFor): this binary's own,
// or the placer-candidate-MINOR in o.BinariesDir, started in this
// process's place with the same arguments. When the member's version
// changes to one that needs another, it starts again the same way. When
// no candidate scheduler may run against it, it exits, saying why, and the
// kubelet's back-off starts it again.
func RunPicked(ctx context.Context, o Options) error {
	if o.Serving != nil {
		// What it says before kube-scheduler starts is logged as it will.
		if err := applyLogFlags(o.Serving); err != nil {
			return err
		}
		o.logsApplied = true
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	version, err := memberVersion(cfg)
	if err != nil {
		return err
	}
	own, want := OwnMinor(), skew.CandidateFor(version)
	switch {
	case want == "":
		// The kubelet starts it again, with its back-off: once the member
		// is of a version one build serves, that one runs.
		return errors.New(skew.UnsupportedVersion(version))
	case minorOf(want) != own:
		if picked := os.Getenv(envPicked); picked != "" {
			return fmt.Errorf("started as the candidate scheduler built with kube-scheduler %s for a member at %s, but this one is built with kube-scheduler %s", picked, version, own)
		}
		return o.startInstead(want, version)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	changed := make(chan bool, 1)
	go func() {
		c := waitForChange(runCtx, cfg, o.VersionCheck, version, want)
		changed <- c
		if c {
			stop()
		}
	}()
	err = Run(runCtx, o)
	// Run ended by itself, or for the change: the watch ends too.
	stop()
	if err != nil || ctx.Err() != nil || !<-changed {
		return err
	}
	// The member's version changed to one another build serves.
	return o.startInstead("", version)
}

// waitForChange returns true once the member's version needs another
// candidate scheduler than want, checking every interval (never when 0),
// and false when ctx ends first. It must read so twice in a row: during a
// rolling upgrade of a control plane of several API servers, /version
// answers from the old ones and the new ones by turns.
func waitForChange(ctx context.Context, cfg *rest.Config, every time.Duration, version, want string) bool {
	if every <= 0 {
		<-ctx.Done()
		return false
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	changed := 0
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		now, err := memberVersion(cfg)
		if err != nil {
			klog.ErrorS(err, "Cannot read the member's version")
			continue
		}
		if skew.CandidateFor(now) == want {
			changed = 0
			continue
		}
		if changed++; changed >= 2 {
			klog.InfoS("The member's version changed; starting the candidate scheduler it needs", "was", version, "now", now)
			return true
		}
	}
}

func memberVersion(cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("cannot reach the member: %w", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("cannot read the member's version: %w", err)
	}
	return info.GitVersion, nil
}

// startInstead replaces this process by the candidate scheduler built with
// kube-scheduler want, with the same arguments; by this binary again when
// want is "" (it picks anew).
func (o Options) startInstead(want, version string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this binary: %w", err)
	}
	path := self
	if want != "" {
		dir := o.BinariesDir
		if dir == "" {
			dir = filepath.Dir(self)
		}
		name := skew.CandidateBinary(want)
		if want == skew.CandidateSchedulerVersion {
			// Back to the placer binary's own, beside the others.
			name = "placer"
		}
		path = filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("the member is %s, which needs the candidate scheduler built with kube-scheduler %s (%s), and there is none in %s: run placer's image, which holds every one beside /placer, or give their folder (--candidate-schedulers-dir)", version, want, name, dir)
		}
		klog.InfoS("Starting the candidate scheduler this member's version needs", "member", version, "kubeScheduler", want, "binary", path)
	}
	// It picks anew without what it was started for.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envPicked+"=") })
	if want != "" {
		env = append(env, envPicked+"="+want)
	}
	return execv(path, append([]string{path}, os.Args[1:]...), env)
}

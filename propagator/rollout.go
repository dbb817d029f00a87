package propagator

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// Step is one step of a rolling update in the committed cluster.
type Step struct {
	// Delete are outdated chaperons to delete now.
	Delete []*mcv1alpha1.PodChaperon
	// Create are the replicas that get a chaperon from the current template
	// beside their outdated one (surge).
	Create []int
}

// Rollout returns the next step toward the current pod template in one
// unit (st is ObserveUnit's reading of it), following the strategy as a
// Deployment of the unit's replicas does: maxSurge and maxUnavailable
// resolve against the unit's count, as a member Deployment of a divided
// workload resolves them against its own replicas. Recreate deletes every outdated
// chaperon at once. RollingUpdate (the default, 25% / 25%) first deletes
// the outdated chaperons of replicas whose new pod is Ready, then starts
// new chaperons beside outdated ones while at most maxSurge (rounded up)
// chaperons exceed the replica count, then deletes outdated chaperons while
// at most maxUnavailable (rounded down) replicas have no Ready pod. Both
// zero means maxUnavailable 1. Replicas are taken in index order.
func Rollout(w *v1alpha1.Workload, u v1alpha1.PlacementUnit, st State) Step {
	step := Step{}
	if len(st.Outdated) == 0 {
		return step
	}
	strategy := w.Spec.TargetDeployment.Strategy
	if strategy.Type == "Recreate" {
		for _, ch := range st.Outdated {
			// A batch pod that ended ran once: a new template does not
			// run its replica again, and its count stays.
			if !podutil.IsPodPhaseTerminal(ch.Status.Phase) {
				step.Delete = append(step.Delete, ch)
			}
		}
		return step
	}
	n := u.Count
	maxSurge, maxUnavailable := intstr.FromString("25%"), intstr.FromString("25%")
	if ru := strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			maxSurge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable = *ru.MaxUnavailable
		}
	}
	// As the Deployment controller resolves them (both zero: unavailable 1).
	s32, u32, err := deploymentutil.ResolveFenceposts(&maxSurge, &maxUnavailable, int32(n))
	if err != nil {
		// Refused by the API server's schema; an older object rolls one at a time.
		s32, u32 = 0, 1
	}
	surge, unavailable := int(s32), int(u32)

	total := 0
	var waiting []int // replicas with only outdated chaperons
	for _, i := range u.Replicas() {
		r := st.replicas[i]
		if r == nil {
			continue
		}
		total += len(r.outdated)
		if r.current != nil {
			total++
		}
		switch {
		case len(r.outdated) == 0:
		case r.current != nil && r.currentReady:
			step.Delete = append(step.Delete, r.outdated...)
			total -= len(r.outdated)
		case r.current == nil && (r.succeeded || r.failed):
			// A batch pod that ended ran once: left as it ended.
			total -= len(r.outdated)
		case r.current == nil:
			waiting = append(waiting, i)
		}
	}
	budget := surge - (total - n)
	for len(waiting) > 0 && budget > 0 {
		step.Create = append(step.Create, waiting[0])
		waiting, budget = waiting[1:], budget-1
	}
	budget = unavailable - (n - st.Ready)
	for _, i := range waiting {
		r := st.replicas[i]
		if r.ready {
			if budget <= 0 {
				continue
			}
			budget--
		}
		// An outdated replica that is not Ready costs no availability.
		step.Delete = append(step.Delete, r.outdated...)
	}
	return step
}

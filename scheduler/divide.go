package scheduler

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Division spreads one Workload's replicas over several clusters: the
// scheduling half of "Divided" and "Duplicated" placement. It is pure: the
// cycle's ranking, each cluster's room and what the Workload holds now go
// in; the shares, and why, come out.
//
// Divided apportions by Webster's method (Sainte-Laguë): the next replica
// goes to the cluster with the largest weight/(2n+1), n being the replicas
// it has. Webster's method is unbiased between large and small clusters
// (D'Hondt favours large ones), and, being a divisor method applied one
// replica at a time, it is house-monotone: a Workload scaled up never loses
// a replica anywhere (the flaw of largest-remainder rounding, karmada#6735),
// and continuing from the present shares gives what dividing afresh would.
// Ties go to the better-ranked cluster: the higher score, then the hash of
// the Workload's UID and the cluster's key that ranks equal clusters.

// DivisionMode is how a Workload's replicas spread over clusters.
type DivisionMode string

// Division modes.
const (
	// Divided splits the replicas across the selected clusters.
	Divided DivisionMode = "Divided"
	// Duplicated runs every replica in each selected cluster.
	Duplicated DivisionMode = "Duplicated"
)

// StaticWeight gives the clusters its selector matches a weight. A cluster
// that several select takes the largest.
type StaticWeight struct {
	Selector labels.Selector
	Weight   int64
}

// SpreadConstraint bounds the number of domains of a topology (the values
// of a cluster label) the replicas are spread over.
type SpreadConstraint struct {
	// TopologyKey is the cluster label whose values are the domains;
	// clusters without it take no share.
	TopologyKey string
	// MinGroups domains at least hold a replica; 0 sets no minimum.
	MinGroups int
	// MaxGroups domains at most hold a replica; 0 sets no maximum.
	MaxGroups int
}

// DivisionPolicy is what the Workload asks of the division.
type DivisionPolicy struct {
	Mode DivisionMode
	// StaticWeights weigh clusters by label; none weighs each cluster by
	// its room (dynamic weights), a cluster whose room is unknown as if it
	// had room for every replica.
	StaticWeights []StaticWeight
	Spread        []SpreadConstraint
}

// DivisionInput is what the division starts from.
type DivisionInput struct {
	// Replicas to place.
	Replicas int
	// Ranked are the feasible clusters, best first (Result.Ranked).
	Ranked []ClusterScore
	// Room is how many more replicas each cluster has room for (RoomFor),
	// beyond those in Current; a cluster not in it has room unknown.
	Room map[types.NamespacedName]int
	// Current are the replicas each cluster holds now. Divided keeps them
	// where it may, so that a change moves the fewest replicas: scaling up
	// only adds, scaling down only removes. Empty divides afresh.
	Current map[types.NamespacedName]int
}

// Share is one cluster's part of a division.
type Share struct {
	Cluster  types.NamespacedName
	Replicas int
	// Weight the share was apportioned by.
	Weight int64
	// Why the cluster has this share, for status and explain.
	Why string
}

// Division is the outcome.
type Division struct {
	// Shares, in the order of the ranking; none when Reason is set.
	Shares []Share
	// Unplaced replicas are those no selected cluster had room for.
	Unplaced int
	// Excluded holds, for each feasible cluster that takes no share
	// whatever the replicas, why.
	Excluded map[types.NamespacedName]string
	// Reason says why no division meets the policy; empty when one does.
	Reason string
}

// maxDynamicWeight bounds a weight by room.
const maxDynamicWeight = 1 << 30

// divCand is a cluster the division may use.
type divCand struct {
	key    types.NamespacedName
	rank   int
	weight int64
	// limit is the most replicas the cluster may hold; -1 when unknown.
	limit   int
	domains []string
	n       int
	seed    bool
}

// Divide divides in.Replicas over in.Ranked as the policy asks.
func Divide(in DivisionInput, p DivisionPolicy) Division {
	d := Division{Excluded: map[types.NamespacedName]string{}}
	if in.Replicas == 0 {
		// Nothing to place: no share anywhere.
		return d
	}
	for i, c := range p.Spread {
		if p.Mode != Duplicated && c.MinGroups > in.Replicas {
			d.Reason = fmt.Sprintf("spreadConstraints[%d]: minGroups %d needs at least %d replicas; there are %d", i, c.MinGroups, c.MinGroups, in.Replicas)
			return d
		}
	}
	cands := eligible(in, p, d.Excluded)
	chosen, reason := selectDomains(cands, p.Spread, d.Excluded)
	if reason != "" {
		d.Reason = reason
		return d
	}
	if p.Mode == Duplicated {
		for _, c := range chosen {
			c.n = in.Replicas
		}
	} else if d.Unplaced = apportion(chosen, p.Spread, in.Replicas); d.Unplaced < 0 {
		// The seeds every minGroups needs outnumber the replicas (several
		// constraints, each wanting domains of its own).
		d.Reason, d.Unplaced = fmt.Sprintf("the spread constraints' minGroups need %d replicas in domains of their own; there are %d", in.Replicas-d.Unplaced, in.Replicas), 0
		return d
	}
	slices.SortFunc(chosen, func(a, b *divCand) int { return a.rank - b.rank })
	d.Shares = shares(chosen, p, in.Replicas)
	return d
}

// eligible are the clusters that may take a share, those holding replicas
// now first (so that a change keeps them), then in the ranking's order; the
// others go into excluded with the reason.
func eligible(in DivisionInput, p DivisionPolicy, excluded map[types.NamespacedName]string) []*divCand {
	var out []*divCand
	for i := range in.Ranked {
		ci := in.Ranked[i].Cluster
		c := &divCand{key: ci.Key, rank: i, limit: -1, n: in.Current[ci.Key]}
		if room, ok := in.Room[ci.Key]; ok {
			c.limit = c.n + max(room, 0)
		}
		if why := c.admit(ci, in.Replicas, p); why != "" {
			excluded[ci.Key] = why
			continue
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b *divCand) int {
		if (a.n > 0) != (b.n > 0) {
			if a.n > 0 {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// admit sets the candidate's weight and domains, or says why the cluster
// takes no share.
func (c *divCand) admit(ci *ClusterInfo, replicas int, p DivisionPolicy) string {
	switch {
	case c.limit == 0:
		return "no room for a replica"
	case p.Mode == Duplicated && c.limit >= 0 && c.limit < replicas:
		return fmt.Sprintf("room for %d of the %d replicas, and Duplicated runs all of them in each cluster", c.limit, replicas)
	}
	for _, s := range p.Spread {
		v, ok := ci.Labels[s.TopologyKey]
		if !ok {
			return fmt.Sprintf("no label %s, the topologyKey of a spread constraint", s.TopologyKey)
		}
		c.domains = append(c.domains, v)
	}
	switch {
	case p.Mode == Duplicated:
		c.weight = 1
	case len(p.StaticWeights) > 0:
		for _, w := range p.StaticWeights {
			if w.Selector.Matches(ci.Labels) && w.Weight > c.weight {
				c.weight = w.Weight
			}
		}
		if c.weight == 0 {
			return "no static weight above 0 selects it"
		}
	case c.limit > 0:
		// Bounded, so that weight × (2n+1) never overflows.
		c.weight = int64(min(c.limit, maxDynamicWeight))
	default:
		c.weight = int64(max(replicas, 1))
	}
	return ""
}

// domainCounts counts, per spread constraint, the selected clusters in
// each domain.
type domainCounts []map[string]int

func newDomainCounts(spread []SpreadConstraint) domainCounts {
	out := make(domainCounts, len(spread))
	for i := range out {
		out[i] = map[string]int{}
	}
	return out
}

// overMax is the first spread constraint whose maxGroups adding c would
// break; -1 when none.
func (dc domainCounts) overMax(c *divCand, spread []SpreadConstraint) int {
	for i, s := range spread {
		if s.MaxGroups > 0 && dc[i][c.domains[i]] == 0 && len(dc[i]) >= s.MaxGroups {
			return i
		}
	}
	return -1
}

// opens reports whether c brings a domain some minGroups still needs.
func (dc domainCounts) opens(c *divCand, spread []SpreadConstraint) bool {
	for i, s := range spread {
		if len(dc[i]) < s.MinGroups && dc[i][c.domains[i]] == 0 {
			return true
		}
	}
	return false
}

func (dc domainCounts) add(c *divCand, delta int) {
	for i, v := range c.domains {
		if dc[i][v] += delta; dc[i][v] == 0 {
			delete(dc[i], v)
		}
	}
}

// selectDomains picks the clusters the replicas may go to: first, in
// order, one for each domain some minGroups still needs (a seed, which will
// hold a replica), then every other that keeps each maxGroups. Greedy in
// the candidates' order: the best-ranked domains win.
func selectDomains(cands []*divCand, spread []SpreadConstraint, excluded map[types.NamespacedName]string) ([]*divCand, string) {
	if len(cands) == 0 {
		return nil, "no feasible cluster may take a share"
	}
	dc := newDomainCounts(spread)
	var chosen []*divCand
	for _, c := range cands {
		if dc.opens(c, spread) && dc.overMax(c, spread) < 0 {
			c.seed = true
			dc.add(c, 1)
			chosen = append(chosen, c)
		}
	}
	for i, s := range spread {
		if len(dc[i]) < s.MinGroups {
			return nil, fewDomains(i, s, cands)
		}
	}
	for _, c := range cands {
		if c.seed {
			continue
		}
		if i := dc.overMax(c, spread); i >= 0 {
			s := spread[i]
			excluded[c.key] = fmt.Sprintf("its %s %s would be domain %d of spreadConstraints[%d], whose maxGroups is %d", s.TopologyKey, c.domains[i], len(dc[i])+1, i, s.MaxGroups)
			continue
		}
		dc.add(c, 1)
		chosen = append(chosen, c)
	}
	return chosen, ""
}

// fewDomains says why spread constraint i cannot have its minGroups.
func fewDomains(i int, s SpreadConstraint, cands []*divCand) string {
	var all []string
	for _, c := range cands {
		if !slices.Contains(all, c.domains[i]) {
			all = append(all, c.domains[i])
		}
	}
	if len(all) < s.MinGroups {
		return fmt.Sprintf("spreadConstraints[%d]: minGroups %d of %s, but only %d domain(s) have a cluster that may take a share: %s",
			i, s.MinGroups, s.TopologyKey, len(all), strings.Join(all, ", "))
	}
	return fmt.Sprintf("spreadConstraints[%d]: minGroups %d of %s cannot be met within the other constraints' maxGroups (domains with a cluster that may take a share: %s)",
		i, s.MinGroups, s.TopologyKey, strings.Join(all, ", "))
}

// apportion gives the chosen clusters replicas in all, by Webster's
// method, starting from what they hold (within their limit) and a replica
// for each seed; it returns how many found no room.
func apportion(chosen []*divCand, spread []SpreadConstraint, replicas int) int {
	dc := newDomainCounts(spread)
	total := 0
	for _, c := range chosen {
		if c.limit >= 0 {
			c.n = min(c.n, c.limit)
		}
		if c.seed && c.n == 0 {
			c.n = 1
		}
		if c.n > 0 {
			dc.add(c, 1)
		}
		total += c.n
	}
	for ; total > replicas; total-- {
		c := lastSeat(chosen, dc, spread)
		if c == nil {
			break
		}
		if c.n--; c.n == 0 {
			dc.add(c, -1)
		}
	}
	h := newSeatHeap(chosen)
	for ; total < replicas && h.Len() > 0; total++ {
		c := h.items[0]
		c.n++
		if c.limit >= 0 && c.n >= c.limit {
			h.pop()
		} else {
			h.fix()
		}
	}
	return replicas - total
}

// lastSeat is the cluster whose last replica Webster's method values
// least (the smallest weight/(2n-1)), the worse-ranked on a tie: the one
// to remove when scaling down. A cluster whose last replica keeps a domain
// some minGroups needs keeps it.
func lastSeat(chosen []*divCand, dc domainCounts, spread []SpreadConstraint) *divCand {
	var worst *divCand
	for _, c := range chosen {
		if c.n == 0 || (c.n == 1 && needed(c, dc, spread)) {
			continue
		}
		if worst == nil {
			worst = c
			continue
		}
		// c.weight/(2c.n-1) <= worst.weight/(2worst.n-1), ties to the later rank.
		l, r := c.weight*int64(2*worst.n-1), worst.weight*int64(2*c.n-1)
		if l < r || l == r && c.rank > worst.rank {
			worst = c
		}
	}
	return worst
}

// needed reports whether c is the last holder in a domain of a spread
// constraint that has no domain to spare.
func needed(c *divCand, dc domainCounts, spread []SpreadConstraint) bool {
	for i, s := range spread {
		if dc[i][c.domains[i]] == 1 && len(dc[i]) <= s.MinGroups {
			return true
		}
	}
	return false
}

// seatHeap orders clusters by the Webster quotient of their next replica,
// weight/(2n+1), largest first, then by rank; full clusters are left out.
type seatHeap struct{ items []*divCand }

func newSeatHeap(chosen []*divCand) *seatHeap {
	h := &seatHeap{}
	for _, c := range chosen {
		if c.limit < 0 || c.n < c.limit {
			h.items = append(h.items, c)
		}
	}
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	return h
}

func (h *seatHeap) Len() int { return len(h.items) }

// before reports whether a's next replica comes before b's.
func (h *seatHeap) before(a, b *divCand) bool {
	l, r := a.weight*int64(2*b.n+1), b.weight*int64(2*a.n+1)
	return l > r || l == r && a.rank < b.rank
}

func (h *seatHeap) down(i int) {
	n := len(h.items)
	for {
		best, l, r := i, 2*i+1, 2*i+2
		if l < n && h.before(h.items[l], h.items[best]) {
			best = l
		}
		if r < n && h.before(h.items[r], h.items[best]) {
			best = r
		}
		if best == i {
			return
		}
		h.items[i], h.items[best] = h.items[best], h.items[i]
		i = best
	}
}

// fix restores the order after the top's count grew.
func (h *seatHeap) fix() { h.down(0) }

// pop removes the top.
func (h *seatHeap) pop() {
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
}

// shares are the clusters given replicas, with why.
func shares(chosen []*divCand, p DivisionPolicy, replicas int) []Share {
	var sum int64
	for _, c := range chosen {
		sum += c.weight
	}
	var out []Share
	for _, c := range chosen {
		if c.n == 0 {
			continue
		}
		why := fmt.Sprintf("Duplicated: all %d replicas", replicas)
		if p.Mode != Duplicated {
			kind := "room"
			if len(p.StaticWeights) > 0 {
				kind = "static"
			}
			why = fmt.Sprintf("%d of %d replicas by %s weight %d of %d", c.n, replicas, kind, c.weight, sum)
			if c.limit >= 0 && c.n == c.limit {
				why += ", as many as it has room for"
			}
		}
		if c.seed {
			why += "; the first of its domain a spread constraint's minGroups needs"
		}
		out = append(out, Share{Cluster: c.key, Replicas: c.n, Weight: c.weight, Why: why})
	}
	return out
}

// RoomFor estimates how many replicas asking for perReplica a cluster has
// room for, from its summary (allocatable less requested, placed but
// unbound replicas included); -1 when the summary or the requests do not
// bound it.
func RoomFor(c *ClusterInfo, perReplica corev1.ResourceList) int {
	alloc := c.Cluster.Status.Allocatable
	if alloc == nil {
		return -1
	}
	room := -1
	for name, want := range perReplica {
		have, ok := alloc[name]
		if !ok || want.IsZero() || name == corev1.ResourcePods || name == corev1.ResourceEphemeralStorage {
			continue
		}
		free := have.DeepCopy()
		free.Sub(c.Requested[name])
		n := 0
		if free.Sign() > 0 {
			n = int(free.MilliValue() / want.MilliValue())
		}
		if room < 0 || n < room {
			room = n
		}
	}
	return room
}

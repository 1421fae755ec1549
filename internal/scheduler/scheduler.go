// Package scheduler decides when, and in what order, waiting runs are
// dispatched.
//
// Placement decides where an environment goes and must stay a pure function
// of the manifest, because af up, status, logs and down each work it out on
// their own and have to agree. The scheduler is the other half: it orders
// runs and holds them back when their organization is at its limit. It is
// just as pure — the same Input always gives the same Output — so the
// control plane's batch dispatch and the Terraform resource, which calls
// Single with the one run it has, can never disagree about a run's place.
// Neither looks at cluster capacity or health; the caller that owns those
// simply stops taking runs from the front of Output.Dispatch when it is full.
package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Kind is what triggered a run. It is a string rather than a closed enum so
// new triggers can be scheduled before the scheduler learns to rank them.
type Kind string

const (
	PullRequest Kind = "pull_request"
	Nightly     Kind = "nightly"
)

// basePriority ranks kinds: someone is waiting on a pull request, nobody is
// waiting on a nightly run at the moment it is queued. A kind the scheduler
// does not know has no claim to go ahead of either; aging still gets it
// dispatched (see Schedule for the bound).
func basePriority(k Kind) int64 {
	switch k {
	case PullRequest:
		return 2
	case Nightly:
		return 1
	default:
		return 0
	}
}

// maxBase is the highest basePriority; aging saturates below
// math.MaxInt64-maxBase so that adding the base can never wrap a long-waiting
// run round to the lowest priority.
const maxBase = 2

const (
	// FallbackLimit is the per-organization limit when neither Limits nor
	// DefaultLimit sets one. Two, so one long nightly run in flight cannot
	// hold up an organization's pull requests, yet one organization cannot
	// fill the control plane before its neighbours get a turn.
	FallbackLimit = 2

	// FallbackAgingStep is the aging step when Input.AgingStep is not set:
	// a nightly run then goes ahead of every pull request queued ten or
	// more minutes after it.
	FallbackAgingStep = 10 * time.Minute
)

// Run is one run waiting to be dispatched.
type Run struct {
	ID           string
	Organization string
	Kind         Kind
	EnqueuedAt   time.Time
}

// Input is everything a scheduling decision may depend on. Now is passed in,
// not read from the clock, so that a decision can be replayed and tested.
type Input struct {
	Waiting []Run

	// InFlight is the number of runs each organization already has
	// executing; they count against its limit.
	InFlight map[string]int

	// Limits caps each organization's runs in flight. A limit of zero or
	// less means "not set", never "paused": an unset attribute arrives as
	// zero, and it must not park an organization's runs for ever.
	Limits map[string]int

	// DefaultLimit applies to organizations without a limit of their own;
	// zero or less means FallbackLimit.
	DefaultLimit int

	Now time.Time

	// AgingStep is how long a run must wait to gain one level of priority;
	// zero or less means FallbackAgingStep.
	AgingStep time.Duration
}

// Placement is a run's place in the queue. Round k holds the k-th run of
// every organization, so a run in round k has k-1 runs of its own
// organization ahead of it. Position is 1-based over all runs, the
// dispatched ones first, so it is the number the Terraform resource records
// and a person can read off.
type Placement struct {
	RunID        string
	Organization string
	Round        int
	Position     int
}

// OrgAtLimit is why a run waits. It is the only reason: there is no
// cluster-wide cap here, so every organization with room gets a run in
// every round and no run is ever held back behind other organizations.
type OrgAtLimit struct {
	Organization string
	InFlight     int // including the runs this decision dispatches
	Limit        int
}

func (r OrgAtLimit) String() string {
	return fmt.Sprintf("organization %s has %d in flight, limit %d", r.Organization, r.InFlight, r.Limit)
}

// Queued is a run that is not dispatched now.
type Queued struct {
	Placement
	Reason OrgAtLimit
}

// Output is a scheduling decision.
type Output struct {
	// Dispatch is in dispatch order: a caller that runs out of room stops
	// part way and still has dispatched fairly.
	Dispatch []Placement
	// Waiting is in the order the runs would go if every organization had
	// room.
	Waiting []Queued
}

type entry struct {
	run        Run
	priority   int64
	round      int
	dispatched bool
	reason     *OrgAtLimit
}

// Schedule orders the waiting runs and dispatches as many as the
// organizations' limits allow.
//
// Fair share: dispatch goes in rounds, each taking at most one run from each
// organization, so an organization with a thousand queued runs gets no more
// turns than one with a single run. Within a round organizations go by the
// priority of the run they put forward, then its enqueue time, then
// organization name — a total order, so nothing depends on map iteration or
// input order.
//
// Within an organization runs go by effective priority: the kind's base
// priority plus one for every full AgingStep waited (a run enqueued after Now
// has waited nothing), then enqueue time, then ID. Aging is what keeps a
// nightly run from starving behind an endless stream of pull requests.
//
// The bound: among runs enqueued no later than Now, a run of base priority b
// enqueued at T is never behind a later run of its organization whose base
// priority is not higher, nor behind one of base priority b' > b enqueued at
// or after T + (b'-b)·AgingStep: by then it has aged at least as much as the
// other run's head start, and ties go to the earlier enqueue. So a nightly
// run waits only for the runs of its organization enqueued before
// EnqueuedAt + AgingStep (a run of unknown kind, before EnqueuedAt +
// 2·AgingStep); with its organization dispatching L runs per decision it is
// dispatched within ceil((that many + 1) / L) decisions, however many pull
// requests keep arriving.
//
// An organization's limit counts runs in flight plus runs dispatched here and
// is never exceeded; an organization already over it (its limit was lowered)
// dispatches nothing.
func Schedule(in Input) Output {
	step := in.AgingStep
	if step <= 0 {
		step = FallbackAgingStep
	}

	// Sorting pointers, not the entries themselves, keeps the moves cheap.
	entries := make([]entry, len(in.Waiting))
	byOrg := make(map[string][]*entry)
	for i, r := range in.Waiting {
		entries[i] = entry{run: r, priority: effectivePriority(r, in.Now, step)}
		byOrg[r.Organization] = append(byOrg[r.Organization], &entries[i])
	}

	all := make([]*entry, 0, len(entries))
	for org, runs := range byOrg {
		slices.SortFunc(runs, withinOrganization)
		limit := in.limit(org)
		// A negative count is the caller's bookkeeping error; reading it as
		// zero keeps the limit meaning runs actually executing.
		inFlight := max(0, in.InFlight[org])
		n := min(len(runs), max(0, limit-inFlight))
		reason := &OrgAtLimit{Organization: org, InFlight: inFlight + n, Limit: limit}
		for i, e := range runs {
			e.round = i + 1
			e.dispatched = i < n
			e.reason = reason
		}
		all = append(all, runs...)
	}
	slices.SortFunc(all, queueOrder)

	var out Output
	for i, e := range all {
		p := Placement{RunID: e.run.ID, Organization: e.run.Organization, Round: e.round, Position: i + 1}
		if e.dispatched {
			out.Dispatch = append(out.Dispatch, p)
		} else {
			out.Waiting = append(out.Waiting, Queued{Placement: p, Reason: *e.reason})
		}
	}
	return out
}

// Single is Schedule for the one run the engine has, so the Terraform
// resource and the control plane's batch dispatch cannot disagree. A nil
// reason means dispatch now; otherwise the run waits, and the reason is what
// to tell the user.
func Single(run Run, inFlight int, limit int, now time.Time) (Placement, *OrgAtLimit) {
	out := Schedule(Input{
		Waiting:      []Run{run},
		InFlight:     map[string]int{run.Organization: inFlight},
		DefaultLimit: limit,
		Now:          now,
	})
	if len(out.Dispatch) == 1 {
		return out.Dispatch[0], nil
	}
	q := out.Waiting[0]
	return q.Placement, &q.Reason
}

func (in Input) limit(org string) int {
	if l := in.Limits[org]; l > 0 {
		return l
	}
	if in.DefaultLimit > 0 {
		return in.DefaultLimit
	}
	return FallbackLimit
}

func effectivePriority(r Run, now time.Time, step time.Duration) int64 {
	wait := max(0, now.Sub(r.EnqueuedAt))
	// A zero EnqueuedAt with a tiny step would otherwise overflow.
	aging := min(int64(wait/step), math.MaxInt64-maxBase)
	return basePriority(r.Kind) + aging
}

// withinOrganization sorts the most urgent run first. Kind is the last
// tie-break only so that even duplicate IDs cannot make the order depend on
// the input order.
func withinOrganization(a, b *entry) int {
	if c := cmp.Compare(b.priority, a.priority); c != 0 {
		return c
	}
	if c := a.run.EnqueuedAt.Compare(b.run.EnqueuedAt); c != 0 {
		return c
	}
	if c := cmp.Compare(a.run.ID, b.run.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.run.Kind, b.run.Kind)
}

// queueOrder puts dispatched runs first, then goes round by round. An
// organization has at most one run per round, so the organization name makes
// the order total.
func queueOrder(a, b *entry) int {
	if a.dispatched != b.dispatched {
		if a.dispatched {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.round, b.round); c != 0 {
		return c
	}
	if c := cmp.Compare(b.priority, a.priority); c != 0 {
		return c
	}
	if c := a.run.EnqueuedAt.Compare(b.run.EnqueuedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.run.Organization, b.run.Organization)
}

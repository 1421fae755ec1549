package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

func run(id, org string, kind Kind, enqueued time.Time) Run {
	return Run{ID: id, Organization: org, Kind: kind, EnqueuedAt: enqueued}
}

func at(id, org string, round, pos int) Placement {
	return Placement{RunID: id, Organization: org, Round: round, Position: pos}
}

func wait(id, org string, round, pos, inFlight, limit int) Queued {
	return Queued{Placement: at(id, org, round, pos), Reason: OrgAtLimit{Organization: org, InFlight: inFlight, Limit: limit}}
}

func TestSchedule(t *testing.T) {
	big := map[string]int{"a": 100, "b": 100, "z": 100}
	tests := []struct {
		name         string
		in           Input
		wantDispatch []Placement
		wantWaiting  []Queued
	}{
		{
			name: "empty input",
			in:   Input{Now: now},
		},
		{
			name: "pull request goes before nightly",
			in: Input{Now: now, Limits: big, AgingStep: 10 * time.Minute, Waiting: []Run{
				run("n", "a", Nightly, ago(5*time.Minute)),
				run("pr", "a", PullRequest, ago(1*time.Minute)),
			}},
			wantDispatch: []Placement{at("pr", "a", 1, 1), at("n", "a", 2, 2)},
		},
		{
			name: "nightly goes before pull requests queued a full step after it",
			in: Input{Now: now, Limits: big, AgingStep: 10 * time.Minute, Waiting: []Run{
				run("pr", "a", PullRequest, ago(10*time.Minute)),
				run("n", "a", Nightly, ago(20*time.Minute)),
			}},
			wantDispatch: []Placement{at("n", "a", 1, 1), at("pr", "a", 2, 2)},
		},
		{
			name: "less than a step of head start is not enough",
			in: Input{Now: now, Limits: big, AgingStep: 10 * time.Minute, Waiting: []Run{
				run("pr", "a", PullRequest, ago(21*time.Minute)),
				run("n", "a", Nightly, ago(25*time.Minute)),
			}},
			wantDispatch: []Placement{at("pr", "a", 1, 1), at("n", "a", 2, 2)},
		},
		{
			name: "unset aging step falls back",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("pr", "a", PullRequest, ago(FallbackAgingStep)),
				run("n", "a", Nightly, ago(2*FallbackAgingStep)),
			}},
			wantDispatch: []Placement{at("n", "a", 1, 1), at("pr", "a", 2, 2)},
		},
		{
			name: "unknown kind goes after nightly",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("d", "a", "deploy", ago(time.Minute)),
				run("n", "a", Nightly, ago(time.Minute)),
			}},
			wantDispatch: []Placement{at("n", "a", 1, 1), at("d", "a", 2, 2)},
		},
		{
			name: "equal priority goes by enqueue time then ID",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("y", "a", PullRequest, ago(time.Minute)),
				run("x", "a", PullRequest, ago(time.Minute)),
				run("z", "a", PullRequest, ago(2*time.Minute)),
			}},
			wantDispatch: []Placement{at("z", "a", 1, 1), at("x", "a", 2, 2), at("y", "a", 3, 3)},
		},
		{
			name: "a run enqueued in the future has waited nothing",
			in: Input{Now: now, Limits: big, AgingStep: time.Minute, Waiting: []Run{
				run("d", "a", "deploy", now),
				run("n", "a", Nightly, now.Add(time.Hour)),
			}},
			wantDispatch: []Placement{at("n", "a", 1, 1), at("d", "a", 2, 2)},
		},
		{
			name: "a run waiting since the zero time does not wrap round",
			in: Input{Now: now, Limits: big, AgingStep: time.Nanosecond, Waiting: []Run{
				run("pr", "a", PullRequest, now),
				run("old", "a", PullRequest, time.Time{}),
			}},
			wantDispatch: []Placement{at("old", "a", 1, 1), at("pr", "a", 2, 2)},
		},
		{
			name: "one run per organization per round",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("a1", "a", PullRequest, ago(5*time.Minute)),
				run("a2", "a", PullRequest, ago(4*time.Minute)),
				run("a3", "a", PullRequest, ago(3*time.Minute)),
				run("b1", "b", PullRequest, ago(1*time.Minute)),
			}},
			wantDispatch: []Placement{at("a1", "a", 1, 1), at("b1", "b", 1, 2), at("a2", "a", 2, 3), at("a3", "a", 3, 4)},
		},
		{
			name: "within a round the more urgent head goes first",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("a1", "a", Nightly, ago(5*time.Minute)),
				run("z1", "z", PullRequest, ago(1*time.Minute)),
			}},
			wantDispatch: []Placement{at("z1", "z", 1, 1), at("a1", "a", 1, 2)},
		},
		{
			name: "within a round equal heads go by enqueue time",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("a1", "a", PullRequest, ago(1*time.Minute)),
				run("z1", "z", PullRequest, ago(2*time.Minute)),
			}},
			wantDispatch: []Placement{at("z1", "z", 1, 1), at("a1", "a", 1, 2)},
		},
		{
			name: "within a round identical heads go by organization name",
			in: Input{Now: now, Limits: big, Waiting: []Run{
				run("1", "z", PullRequest, ago(time.Minute)),
				run("2", "a", PullRequest, ago(time.Minute)),
			}},
			wantDispatch: []Placement{at("2", "a", 1, 1), at("1", "z", 1, 2)},
		},
		{
			name: "runs in flight count against the limit",
			in: Input{Now: now, Limits: map[string]int{"a": 2}, InFlight: map[string]int{"a": 1}, Waiting: []Run{
				run("a1", "a", PullRequest, ago(3*time.Minute)),
				run("a2", "a", PullRequest, ago(2*time.Minute)),
				run("a3", "a", PullRequest, ago(1*time.Minute)),
			}},
			wantDispatch: []Placement{at("a1", "a", 1, 1)},
			wantWaiting:  []Queued{wait("a2", "a", 2, 2, 2, 2), wait("a3", "a", 3, 3, 2, 2)},
		},
		{
			name: "an organization over its limit dispatches nothing",
			in: Input{Now: now, Limits: map[string]int{"a": 2}, InFlight: map[string]int{"a": 5}, Waiting: []Run{
				run("a1", "a", PullRequest, ago(time.Minute)),
			}},
			wantWaiting: []Queued{wait("a1", "a", 1, 1, 5, 2)},
		},
		{
			name: "a negative in-flight count reads as zero",
			in: Input{Now: now, Limits: map[string]int{"a": 1}, InFlight: map[string]int{"a": -3}, Waiting: []Run{
				run("a1", "a", PullRequest, ago(2*time.Minute)),
				run("a2", "a", PullRequest, ago(time.Minute)),
			}},
			wantDispatch: []Placement{at("a1", "a", 1, 1)},
			wantWaiting:  []Queued{wait("a2", "a", 2, 2, 1, 1)},
		},
		{
			name: "listed limit, then default, and zero means not set",
			in: Input{Now: now, Limits: map[string]int{"a": 1, "b": 0}, DefaultLimit: 3,
				InFlight: map[string]int{"a": 1, "b": 3, "c": 2}, Waiting: []Run{
					run("a1", "a", PullRequest, ago(3*time.Minute)),
					run("b1", "b", PullRequest, ago(2*time.Minute)),
					run("c1", "c", PullRequest, ago(1*time.Minute)),
				}},
			wantDispatch: []Placement{at("c1", "c", 1, 1)},
			wantWaiting:  []Queued{wait("a1", "a", 1, 2, 1, 1), wait("b1", "b", 1, 3, 3, 3)},
		},
		{
			name: "no limit anywhere falls back",
			in: Input{Now: now, Waiting: []Run{
				run("a1", "a", PullRequest, ago(3*time.Minute)),
				run("a2", "a", PullRequest, ago(2*time.Minute)),
				run("a3", "a", PullRequest, ago(1*time.Minute)),
			}},
			wantDispatch: []Placement{at("a1", "a", 1, 1), at("a2", "a", 2, 2)},
			wantWaiting:  []Queued{wait("a3", "a", 3, 3, FallbackLimit, FallbackLimit)},
		},
		{
			name: "waiting runs follow dispatched ones, round by round",
			in: Input{Now: now, Limits: map[string]int{"a": 2, "b": 1}, InFlight: map[string]int{"a": 2}, Waiting: []Run{
				run("a1", "a", PullRequest, ago(5*time.Minute)),
				run("a2", "a", PullRequest, ago(3*time.Minute)),
				run("b1", "b", PullRequest, ago(4*time.Minute)),
				run("b2", "b", PullRequest, ago(2*time.Minute)),
			}},
			wantDispatch: []Placement{at("b1", "b", 1, 1)},
			wantWaiting:  []Queued{wait("a1", "a", 1, 2, 2, 2), wait("a2", "a", 2, 3, 2, 2), wait("b2", "b", 2, 4, 1, 1)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Schedule(tc.in)
			if !reflect.DeepEqual(got.Dispatch, tc.wantDispatch) {
				t.Errorf("Dispatch\n got %+v\nwant %+v", got.Dispatch, tc.wantDispatch)
			}
			if !reflect.DeepEqual(got.Waiting, tc.wantWaiting) {
				t.Errorf("Waiting\n got %+v\nwant %+v", got.Waiting, tc.wantWaiting)
			}
		})
	}
}

func TestOrgAtLimitString(t *testing.T) {
	got := OrgAtLimit{Organization: "acme", InFlight: 3, Limit: 3}.String()
	if want := "organization acme has 3 in flight, limit 3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSingle(t *testing.T) {
	r := run("r1", "acme", Nightly, ago(time.Hour))
	tests := []struct {
		name       string
		inFlight   int
		limit      int
		wantReason *OrgAtLimit
	}{
		{name: "room", inFlight: 2, limit: 3},
		{name: "at limit", inFlight: 3, limit: 3, wantReason: &OrgAtLimit{Organization: "acme", InFlight: 3, Limit: 3}},
		{name: "unset limit falls back, room", inFlight: FallbackLimit - 1, limit: 0},
		{name: "unset limit falls back, full", inFlight: FallbackLimit, limit: 0,
			wantReason: &OrgAtLimit{Organization: "acme", InFlight: FallbackLimit, Limit: FallbackLimit}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, reason := Single(r, tc.inFlight, tc.limit, now)
			if want := at("r1", "acme", 1, 1); p != want {
				t.Errorf("placement %+v, want %+v", p, want)
			}
			if !reflect.DeepEqual(reason, tc.wantReason) {
				t.Errorf("reason %v, want %v", reason, tc.wantReason)
			}
		})
	}
}

// forSeeds runs a property over 200 seeds; each seed is its own subtest, so
// a failure names the seed and -run 'TestX/seed=N' replays it.
func forSeeds(t *testing.T, property func(t *testing.T, rng *rand.Rand)) {
	t.Helper()
	for seed := uint64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("reproduce: go test ./internal/scheduler/ -run '^%s$' (seed %d)", t.Name(), seed)
				}
			})
			property(t, rand.New(rand.NewPCG(seed, 0)))
		})
	}
}

// randomInput uses whole-minute enqueue times over a short span so that
// priority and enqueue-time ties, where order bugs hide, are common.
func randomInput(rng *rand.Rand) Input {
	kinds := []Kind{PullRequest, Nightly, "deploy"}
	steps := []time.Duration{0, time.Minute, 10 * time.Minute, time.Hour}
	in := Input{
		Now:          now,
		InFlight:     map[string]int{},
		Limits:       map[string]int{},
		DefaultLimit: rng.IntN(4),
		AgingStep:    steps[rng.IntN(len(steps))],
	}
	orgs := 1 + rng.IntN(12)
	for o := range orgs {
		org := fmt.Sprintf("org-%02d", o)
		if rng.IntN(2) == 0 {
			in.InFlight[org] = rng.IntN(6) - 1
		}
		if rng.IntN(2) == 0 {
			in.Limits[org] = rng.IntN(5)
		}
	}
	for i := range rng.IntN(150) {
		in.Waiting = append(in.Waiting, Run{
			ID:           fmt.Sprintf("run-%d", i),
			Organization: fmt.Sprintf("org-%02d", rng.IntN(orgs)),
			Kind:         kinds[rng.IntN(len(kinds))],
			EnqueuedAt:   now.Add(time.Duration(rng.IntN(125)-120) * time.Minute),
		})
	}
	return in
}

// The properties restate the rules from the outside rather than calling
// into the implementation, so a bug there cannot hide in the check.

func limitOf(in Input, org string) int {
	switch {
	case in.Limits[org] > 0:
		return in.Limits[org]
	case in.DefaultLimit > 0:
		return in.DefaultLimit
	default:
		return FallbackLimit
	}
}

func roomOf(in Input, org string) int {
	return max(0, limitOf(in, org)-max(0, in.InFlight[org]))
}

func countByOrg(runs []Run) map[string]int {
	n := map[string]int{}
	for _, r := range runs {
		n[r.Organization]++
	}
	return n
}

func TestPropertyLimitNeverExceeded(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		in := randomInput(rng)
		out := Schedule(in)
		dispatched := map[string]int{}
		for _, p := range out.Dispatch {
			dispatched[p.Organization]++
		}
		for _, org := range slices.Sorted(maps.Keys(countByOrg(in.Waiting))) {
			if d := dispatched[org]; d > roomOf(in, org) {
				t.Errorf("%s: dispatched %d with %d in flight, limit %d", org, d, in.InFlight[org], limitOf(in, org))
			}
		}
		// Waiting for nothing would be as wrong as exceeding the limit.
		for _, q := range out.Waiting {
			org := q.Organization
			want := OrgAtLimit{Organization: org, InFlight: max(0, in.InFlight[org]) + dispatched[org], Limit: limitOf(in, org)}
			if dispatched[org] < roomOf(in, org) || q.Reason != want {
				t.Errorf("%s waits with reason %q; dispatched %d, room %d, want reason %q", q.RunID, q.Reason, dispatched[org], roomOf(in, org), want)
			}
		}
	})
}

func TestPropertyFairShare(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		in := randomInput(rng)
		out := Schedule(in)
		waiting := countByOrg(in.Waiting)
		orgs := slices.Sorted(maps.Keys(waiting))
		got := map[string]int{}
		for _, p := range out.Dispatch {
			k := got[p.Organization]
			for _, other := range orgs {
				owed := min(k, waiting[other], roomOf(in, other))
				if other != p.Organization && got[other] < owed {
					t.Fatalf("%s got run %d (%s, position %d) while %s, with room and runs waiting, had %d",
						p.Organization, k+1, p.RunID, p.Position, other, got[other])
				}
			}
			got[p.Organization]++
		}
	})
}

func TestPropertyEveryRunPlacedInOrder(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		in := randomInput(rng)
		out := Schedule(in)
		step := in.AgingStep
		if step <= 0 {
			step = FallbackAgingStep
		}
		base := map[Kind]int64{PullRequest: 2, Nightly: 1}
		byID := map[string]Run{}
		for _, r := range in.Waiting {
			byID[r.ID] = r
		}
		placed := slices.Clone(out.Dispatch)
		for _, q := range out.Waiting {
			placed = append(placed, q.Placement)
		}
		if len(placed) != len(in.Waiting) {
			t.Fatalf("placed %d runs, %d waiting", len(placed), len(in.Waiting))
		}
		type last struct {
			round    int
			priority int64
			enqueued time.Time
		}
		prev := map[string]last{}
		seen := map[string]bool{}
		for i, p := range placed {
			r, ok := byID[p.RunID]
			switch {
			case !ok || seen[p.RunID]:
				t.Fatalf("position %d: run %q unknown or placed twice", i+1, p.RunID)
			case p.Position != i+1:
				t.Fatalf("run %s at index %d has position %d", p.RunID, i, p.Position)
			case p.Organization != r.Organization:
				t.Fatalf("run %s placed under %s, belongs to %s", p.RunID, p.Organization, r.Organization)
			}
			seen[p.RunID] = true
			pr := base[r.Kind] + int64(max(0, now.Sub(r.EnqueuedAt))/step)
			before := prev[p.Organization]
			if p.Round != before.round+1 {
				t.Fatalf("run %s of %s in round %d after round %d", p.RunID, p.Organization, p.Round, before.round)
			}
			if before.round > 0 && (pr > before.priority || pr == before.priority && r.EnqueuedAt.Before(before.enqueued)) {
				t.Fatalf("run %s of %s (priority %d) placed after a less urgent run (priority %d)", p.RunID, p.Organization, pr, before.priority)
			}
			prev[p.Organization] = last{p.Round, pr, r.EnqueuedAt}
		}
	})
}

func TestPropertyDeterministic(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		in := randomInput(rng)
		want := Schedule(in)

		shuffled := in
		shuffled.Waiting = slices.Clone(in.Waiting)
		rng.Shuffle(len(shuffled.Waiting), func(i, j int) {
			shuffled.Waiting[i], shuffled.Waiting[j] = shuffled.Waiting[j], shuffled.Waiting[i]
		})
		shuffled.InFlight = maps.Clone(in.InFlight)
		shuffled.Limits = maps.Clone(in.Limits)
		if got := Schedule(shuffled); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled input changed the output\n got %+v\nwant %+v", got, want)
		}
	})
}

// TestPropertyNoStarvation drives Schedule decision after decision while
// pull requests keep arriving faster than the organization can run them, and
// checks that a nightly (or unknown-kind) run still goes within the bound in
// Schedule's doc comment.
func TestPropertyNoStarvation(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		steps := []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute}
		ticks := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}
		step, tick := steps[rng.IntN(len(steps))], ticks[rng.IntN(len(ticks))]
		limit := 1 + rng.IntN(3)
		arrivals := limit + 1 + rng.IntN(3) // the backlog grows without end

		kind, headStart := Nightly, 1 // pull request base minus this kind's base
		if rng.IntN(4) == 0 {
			kind, headStart = "deploy", 2
		}
		start := now
		victim := run("victim", "acme", kind, start)
		horizon := start.Add(time.Duration(headStart) * step)

		waiting := []Run{victim}
		ahead := 0 // acme runs enqueued before horizon: all that may go first
		id := 0
		add := func(org string, enqueued time.Time) {
			id++
			waiting = append(waiting, run(fmt.Sprintf("pr-%d", id), org, PullRequest, enqueued))
			if org == "acme" && enqueued.Before(horizon) {
				ahead++
			}
		}
		for range rng.IntN(30) {
			add("acme", start.Add(-time.Duration(rng.IntN(60)+1)*time.Minute))
		}

		clock := start
		for decision := 1; ; decision++ {
			out := Schedule(Input{
				Waiting:   waiting,
				Limits:    map[string]int{"acme": limit, "other": 3},
				Now:       clock,
				AgingStep: step,
			})
			gone := map[string]bool{}
			for _, p := range out.Dispatch {
				gone[p.RunID] = true
			}
			if gone["victim"] {
				if bound := (ahead + 1 + limit - 1) / limit; decision > bound {
					t.Fatalf("%s run dispatched at decision %d, bound %d (%d ahead, limit %d)", kind, decision, bound, ahead, limit)
				}
				return
			}
			// Every acme run that can go first exists once the clock
			// passes the horizon, so from then on the bound is final.
			if bound := (ahead + 1 + limit - 1) / limit; !clock.Before(horizon) && decision >= bound {
				t.Fatalf("%s run still waiting after %d decisions, bound %d (%d ahead, limit %d, step %v, %d arrivals per %v)",
					kind, decision, bound, ahead, limit, step, arrivals, tick)
			}
			waiting = slices.DeleteFunc(waiting, func(r Run) bool { return gone[r.ID] })
			clock = clock.Add(tick)
			for i := range arrivals {
				add("acme", clock.Add(-tick+time.Duration(i+1)*tick/time.Duration(arrivals)))
			}
			for range rng.IntN(4) {
				add("other", clock)
			}
		}
	})
}

func BenchmarkSchedule(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 0))
	kinds := []Kind{PullRequest, Nightly, "deploy"}
	in := Input{Now: now, InFlight: map[string]int{}, Limits: map[string]int{}, DefaultLimit: 3, AgingStep: 10 * time.Minute}
	for o := range 500 {
		org := fmt.Sprintf("org-%03d", o)
		in.InFlight[org] = rng.IntN(4)
		if o%5 == 0 {
			in.Limits[org] = 1 + rng.IntN(8)
		}
	}
	for i := range 10_000 {
		in.Waiting = append(in.Waiting, Run{
			ID:           fmt.Sprintf("run-%05d", i),
			Organization: fmt.Sprintf("org-%03d", rng.IntN(500)),
			Kind:         kinds[rng.IntN(len(kinds))],
			EnqueuedAt:   now.Add(-time.Duration(rng.IntN(24*60)) * time.Minute),
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		Schedule(in)
	}
}

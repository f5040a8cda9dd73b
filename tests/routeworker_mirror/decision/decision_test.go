package decision

import (
	"errors"
	"strings"
	"testing"
)

const evID = "0b5c5f0e-7d5e-4a43-9a55-3c7f0d6f2a10"

func input(route Route, d Delivery) Input {
	return Input{
		Worker:   Worker{Name: "iu_outbound_default"},
		Event:    Event{ID: evID, Domain: "iu", Type: "unit_version_created", Stream: "main"},
		Route:    route,
		Delivery: d,
	}
}

// The status table — skipped (no route), disabled (route disabled,
// whatever its dry_run), dry_run (enabled + dry_run, the seam is never consulted), and for
// enabled + not dry_run the seam decides: sent, or failed + dead letter with the SQLSTATE.
func TestDecide_StatusTable(t *testing.T) {
	t.Parallel()
	r := func(enabled, dry bool) Route {
		return Route{Found: true, Enabled: enabled, DryRun: dry, Key: "uv_main", Kind: "outbound"}
	}
	cases := []struct {
		name       string
		route      Route
		delivery   Delivery
		status     Status
		deadLetter bool
		code       string
		routeKey   string
	}{
		{"no route", Route{}, SeamFailClosed(), StatusSkipped, false, "", ""},
		{"no route ignores a stray route key", Route{Key: "ignored", Enabled: true}, SeamFailClosed(), StatusSkipped, false, "", ""},
		{"disabled, dry-run", r(false, true), SeamFailClosed(), StatusDisabled, false, "", "uv_main"},
		{"disabled, live", r(false, false), SeamFailClosed(), StatusDisabled, false, "", "uv_main"},
		{"enabled dry-run never consults the seam", r(true, true), Delivery{Outcome: OutcomeSent}, StatusDryRun, false, "", "uv_main"},
		{"enabled dry-run, seam failing", r(true, true), SeamFailClosed(), StatusDryRun, false, "", "uv_main"},
		{"live, seam fails closed", r(true, false), SeamFailClosed(), StatusFailed, true, "0A000", "uv_main"},
		{"live, seam fails otherwise", r(true, false), Delivery{Outcome: OutcomeFailed, SQLState: "57014"}, StatusFailed, true, "57014", "uv_main"},
		{"live, seam sent", r(true, false), Delivery{Outcome: OutcomeSent}, StatusSent, false, "", "uv_main"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(input(c.route, c.delivery))
			if !d.Claimed {
				t.Fatal("an in-domain event must be claimed")
			}
			if d.Status != c.status || d.DeadLetter != c.deadLetter || d.ErrorCode != c.code || d.RouteKey != c.routeKey {
				t.Fatalf("got status=%s deadLetter=%v code=%q routeKey=%q, want %s %v %q %q",
					d.Status, d.DeadLetter, d.ErrorCode, d.RouteKey, c.status, c.deadLetter, c.code, c.routeKey)
			}
		})
	}
}

// The idempotency key is iu_wrk:{worker}:{route_key}:{event_id}, with "none"
// for route_key when no route matched.
func TestDecide_IdempotencyKey(t *testing.T) {
	t.Parallel()
	d := Decide(input(Route{Found: true, Enabled: true, DryRun: true, Key: "uv_main"}, SeamFailClosed()))
	if want := "iu_wrk:iu_outbound_default:uv_main:" + evID; d.IdempotencyKey != want {
		t.Errorf("key = %q, want %q", d.IdempotencyKey, want)
	}
	d = Decide(input(Route{}, SeamFailClosed()))
	if want := "iu_wrk:iu_outbound_default:none:" + evID; d.IdempotencyKey != want {
		t.Errorf("no-route key = %q, want %q", d.IdempotencyKey, want)
	}
	if got := IdempotencyKey("w", "", "e"); got != "iu_wrk:w:none:e" {
		t.Errorf("IdempotencyKey with empty route = %q", got)
	}
}

// Workers with different names are independent consumers — the same event and
// route give different keys, so their attempts never collide.
func TestDecide_KeysDifferPerWorker(t *testing.T) {
	t.Parallel()
	a := input(Route{Found: true, Enabled: true, DryRun: true, Key: "k"}, SeamFailClosed())
	b := a
	b.Worker.Name = "other_worker"
	if Decide(a).IdempotencyKey == Decide(b).IdempotencyKey {
		t.Fatal("two workers must not share an idempotency key")
	}
}

// A worker claims only its own domain ('iu' by default); an event of
// another domain gets no attempt and no dead letter, whatever its route says.
func TestDecide_OutOfDomainIsNotClaimed(t *testing.T) {
	t.Parallel()
	for _, dom := range []string{"system", "ops", "IU", ""} {
		in := input(Route{Found: true, Enabled: true, DryRun: false, Key: "k"}, SeamFailClosed())
		in.Event.Domain = dom
		d := Decide(in)
		if d.Claimed || d.Status != "" || d.IdempotencyKey != "" || d.DeadLetter || d.Reason != "out_of_domain" {
			t.Errorf("domain %q: got %+v, want an unclaimed decision", dom, d)
		}
	}
	// A worker registered for another domain claims that domain and not 'iu'.
	in := input(Route{}, SeamFailClosed())
	in.Worker.Domain = "ops"
	if Decide(in).Claimed {
		t.Error("an 'ops' worker must not claim an 'iu' event")
	}
	in.Event.Domain = "ops"
	if d := Decide(in); !d.Claimed || d.Status != StatusSkipped {
		t.Errorf("an 'ops' worker must claim an 'ops' event, got %+v", d)
	}
}

// The dual gate is fail-closed — either gate closed claims
// nothing; both open behaves like Decide.
func TestDecideGated_DualFailClosedGate(t *testing.T) {
	t.Parallel()
	in := input(Route{Found: true, Enabled: true, DryRun: true, Key: "k"}, SeamFailClosed())
	for _, g := range []Gates{{}, {Master: true}, {Worker: true}} {
		if d := DecideGated(g, in); d.Claimed || d.Reason != "gated" || d.Status != "" {
			t.Errorf("gates %+v: got %+v, want a gated no-op", g, d)
		}
	}
	if d := DecideGated(Gates{Master: true, Worker: true}, in); d != Decide(in) {
		t.Errorf("open gates: got %+v, want %+v", d, Decide(in))
	}
}

// The zero Delivery is a failure, never a delivery — a caller that forgets to
// model the seam gets the fail-closed answer.
func TestDecide_ZeroDeliveryFailsClosed(t *testing.T) {
	t.Parallel()
	d := Decide(input(Route{Found: true, Enabled: true, Key: "k"}, Delivery{}))
	if d.Status != StatusFailed || !d.DeadLetter {
		t.Fatalf("got %+v, want failed + dead letter", d)
	}
}

// Inputs the SQL refuses (fn_iu_require_name, the iu_outbound_route CHECK) are refused here too.
func TestInput_Validate(t *testing.T) {
	t.Parallel()
	ok := input(Route{Found: true, Key: "k"}, SeamFailClosed())
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
	type badCase struct {
		in   Input
		want error
	}
	bad := map[string]badCase{}
	w := ok
	w.Worker.Name = ""
	bad["empty worker"] = badCase{w, ErrWorkerName}
	e := ok
	e.Event.ID = ""
	bad["empty event id"] = badCase{e, ErrEventID}
	for _, key := range []string{"", "none", " ", "\t\n", strings.Repeat("k", MaxNameBytes+1)} {
		r := ok
		r.Route.Key = key
		bad["route key "+key] = badCase{r, ErrRouteKey}
	}
	for name, c := range bad {
		if err := c.in.Validate(); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
	for _, name := range []string{" ", strings.Repeat("w", MaxNameBytes+1)} {
		w := ok
		w.Worker.Name = name
		bad["worker "+name] = badCase{w, ErrWorkerName}
	}
	c := ok
	c.Worker.Name = "a:b"
	bad["worker with a colon"] = badCase{c, ErrWorkerColon}
	// A route key may hold ':' (the SQL allows it; the key stays unambiguous).
	colon := ok
	colon.Route.Key = "a:b"
	if err := colon.Validate(); err != nil {
		t.Errorf("route key with a colon refused: %v", err)
	}
	// No route: the route key is not looked at.
	if err := input(Route{Key: "a:b"}, SeamFailClosed()).Validate(); err != nil {
		t.Errorf("no-route input refused: %v", err)
	}
}

func TestOutcome_String(t *testing.T) {
	t.Parallel()
	if OutcomeSent.String() != "sent" || OutcomeFailed.String() != "failed" || Outcome(9).String() != "Outcome(9)" {
		t.Fatal("Outcome.String")
	}
}

package decision

import (
	"errors"
	"fmt"
	"strings"
)

// Status is the iu_route_attempt.status the worker writes for one claimed event.
type Status string

// The five statuses of iu_route_attempt (its status CHECK constraint).
const (
	StatusDryRun   Status = "dry_run"
	StatusDisabled Status = "disabled"
	StatusSkipped  Status = "skipped"
	StatusFailed   Status = "failed"
	StatusSent     Status = "sent"
)

// NoRouteKey stands for the route key inside an idempotency key when no route matched.
const NoRouteKey = "none"

// DefaultDomain is the event domain a worker consumes unless registered otherwise.
const DefaultDomain = "iu"

// SQLStateFeatureNotSupported is what the unbuilt delivery seam raises.
const SQLStateFeatureNotSupported = "0A000"

// Event is the part of an event_outbox row the decision reads.
type Event struct {
	ID     string // event_outbox.id (uuid text)
	Domain string
	Type   string
	Stream string
}

// Worker is a named route worker and the event domain its cursor consumes.
type Worker struct {
	Name   string
	Domain string // "" means DefaultDomain
}

// Route is the iu_outbound_route row resolved for (domain, type, stream), if any.
type Route struct {
	Found   bool
	Enabled bool
	DryRun  bool
	Key     string
	Kind    string
}

// Outcome is what the delivery seam did for an enabled, non-dry-run route.
type Outcome int

const (
	// OutcomeFailed: the seam (or anything on the way) raised; Delivery.SQLState says what.
	OutcomeFailed Outcome = iota
	// OutcomeSent: the seam delivered. Unreachable today (the seam fails closed).
	OutcomeSent
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSent:
		return "sent"
	case OutcomeFailed:
		return "failed"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Delivery is the seam's outcome. Its zero value is a failure without a SQLSTATE; use
// SeamFailClosed for today's seam.
type Delivery struct {
	Outcome  Outcome
	SQLState string // for OutcomeFailed
}

// SeamFailClosed is the outcome of today's fn_iu_route_deliver: it raises 0A000.
func SeamFailClosed() Delivery {
	return Delivery{Outcome: OutcomeFailed, SQLState: SQLStateFeatureNotSupported}
}

// Gates are the two fail-closed switches; the worker runs only when both are open.
type Gates struct {
	Master bool // iu_core.routes_enabled
	Worker bool // iu_core.route_worker_enabled
}

// Open reports whether both gates are open.
func (g Gates) Open() bool { return g.Master && g.Worker }

// Input is one (worker, event) decision to make.
type Input struct {
	Worker   Worker
	Event    Event
	Route    Route
	Delivery Delivery // read only when the route is enabled and not dry-run
}

// Decision is the worker's answer for one (worker, event).
type Decision struct {
	// Claimed is false when the event is outside the worker's domain (or the gates are
	// closed, see DecideGated); then nothing else is set: no attempt, no dead letter.
	Claimed        bool
	Status         Status
	IdempotencyKey string
	RouteKey       string // "" when no route matched
	RouteKind      string // "" when no route matched
	DeadLetter     bool
	ErrorCode      string // the SQLSTATE of a failed attempt
	// Reason says why an event was not claimed ("out_of_domain", "gated").
	Reason string
}

// MaxNameBytes bounds every name the SQL indexes (worker names, route keys, domains):
// fn_iu_require_name refuses longer ones with 22023, far below btree's row-size limit.
const MaxNameBytes = 200

// blankCutset is what the SQL treats as blank (btrim with these characters), so a name of
// spaces, tabs or newlines is as absent as an empty one.
const blankCutset = " \t\r\n\f\v"

// Errors of Validate.
var (
	ErrWorkerName  = errors.New("decision: worker name required (non-blank, at most 200 bytes)")
	ErrWorkerColon = errors.New("decision: worker name may not contain ':' (it is part of the idempotency key)")
	ErrEventID     = errors.New("decision: event id required")
	ErrRouteKey    = errors.New("decision: a found route needs a non-blank route key of at most 200 bytes that is not \"none\"")
)

// ValidName reports whether the SQL accepts s as a name (fn_iu_require_name): not blank,
// at most MaxNameBytes bytes.
func ValidName(s string) bool {
	return strings.Trim(s, blankCutset) != "" && len(s) <= MaxNameBytes
}

// ValidateWorkerName refuses what fn_iu_route_worker_register and fn_iu_route_worker_run
// refuse (22023): a blank or over-long name, or one with ':'.
func ValidateWorkerName(name string) error {
	if !ValidName(name) {
		return ErrWorkerName
	}
	if strings.Contains(name, ":") {
		return ErrWorkerColon
	}
	return nil
}

// ValidRouteKey reports whether the CHECK on iu_outbound_route.route_key accepts key:
// a name (ValidName) other than the "none" placeholder. Any other text, ':' included, is
// fine: the event id is fixed-length and last in the idempotency key.
func ValidRouteKey(key string) bool {
	return ValidName(key) && key != NoRouteKey
}

// Validate rejects inputs the SQL rejects too: a worker name fn_iu_route_worker_run
// refuses, an empty event id, and a route key the iu_outbound_route CHECK refuses.
func (in Input) Validate() error {
	if err := ValidateWorkerName(in.Worker.Name); err != nil {
		return err
	}
	if in.Event.ID == "" {
		return ErrEventID
	}
	if in.Route.Found && !ValidRouteKey(in.Route.Key) {
		return ErrRouteKey
	}
	return nil
}

// IdempotencyKey builds iu_wrk:{worker}:{route_key}:{event_id}; an empty routeKey
// (no route matched) becomes "none".
func IdempotencyKey(worker, routeKey, eventID string) string {
	if routeKey == "" {
		routeKey = NoRouteKey
	}
	return "iu_wrk:" + worker + ":" + routeKey + ":" + eventID
}

// domain returns the worker's domain, DefaultDomain when unset.
func (w Worker) domain() string {
	if w.Domain == "" {
		return DefaultDomain
	}
	return w.Domain
}

// Claims reports whether the worker claims events of this domain.
func (w Worker) Claims(e Event) bool { return e.Domain == w.domain() }

// Decide applies the decision contract to one (worker, event) with both gates open.
func Decide(in Input) Decision {
	if !in.Worker.Claims(in.Event) {
		return Decision{Reason: "out_of_domain"}
	}
	d := Decision{Claimed: true}
	if in.Route.Found {
		d.RouteKey, d.RouteKind = in.Route.Key, in.Route.Kind
	}
	d.IdempotencyKey = IdempotencyKey(in.Worker.Name, d.RouteKey, in.Event.ID)
	switch {
	case !in.Route.Found:
		d.Status = StatusSkipped
	case !in.Route.Enabled:
		d.Status = StatusDisabled
	case in.Route.DryRun:
		d.Status = StatusDryRun
	case in.Delivery.Outcome == OutcomeSent:
		d.Status = StatusSent
	default:
		d.Status, d.DeadLetter, d.ErrorCode = StatusFailed, true, in.Delivery.SQLState
	}
	return d
}

// DecideGated is Decide behind the dual fail-closed gate: with either gate closed the
// run is a no-op and nothing is claimed.
func DecideGated(g Gates, in Input) Decision {
	if !g.Open() {
		return Decision{Reason: "gated"}
	}
	return Decide(in)
}

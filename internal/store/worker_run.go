package store

import (
	"encoding/json"
	"time"
)

// WorkerRun is the summary fn_iu_route_worker_run returns (and stores as the cursor's
// last_run_summary). It has three shapes, told apart by busy and gated:
//
//	busy   another run of the worker holds its cursor: nothing was done (reason says so)
//	gated  a gate is closed: a clean no-op (reason names the gate, gates their values)
//	ran    a batch was routed: the counts, the window bookkeeping and who holds it open
//
// Every shape carries the worker, gated, busy, the three totals and one count per
// iu_route_attempt status, so a caller can always add them up.
type WorkerRun struct {
	Worker      string `json:"worker"`
	EventDomain string `json:"event_domain,omitempty" contract:"gated,ran"`
	Gated       bool   `json:"gated"`
	Busy        bool   `json:"busy"`
	Reason      string `json:"reason,omitempty" contract:"busy,gated"`
	// LockHeldBy names the sessions holding the worker's lock when the run is busy (a run in
	// progress, a reset, or any session that took its advisory lock).
	LockHeldBy []LockHolder `json:"lock_held_by,omitempty" contract:"busy"`
	Gates      *Gates       `json:"gates,omitempty" contract:"gated"`
	BatchLimit int          `json:"batch_limit,omitempty" contract:"ran"`

	Claimed         int64 `json:"claimed"`          // events read from the outbox
	AttemptsWritten int64 `json:"attempts_written"` // iu_route_attempt rows written
	DeadLettered    int64 `json:"dead_lettered"`    // events that failed into the dead letters

	// one count per attempt status (see Statuses)
	DryRun   int64 `json:"dry_run"`
	Disabled int64 `json:"disabled"`
	Skipped  int64 `json:"skipped"`
	Failed   int64 `json:"failed"`
	Sent     int64 `json:"sent"`

	AlreadyAttempted int64            `json:"already_attempted,omitempty" contract:"ran"` // claimed events whose attempt existed (a re-scan)
	CaughtUp         bool             `json:"caught_up,omitempty" contract:"ran"`
	WindowOpen       bool             `json:"window_open,omitempty" contract:"ran"`
	WindowsOpened    int64            `json:"windows_opened,omitempty" contract:"ran"`
	WindowsClosed    int64            `json:"windows_closed,omitempty" contract:"ran"`
	Fallback         bool             `json:"fallback,omitempty" contract:"ran"`        // the page failed and events were decided one by one
	Idle             bool             `json:"idle,omitempty" contract:"ran"`            // nothing claimed, no window open: the run wrote nothing but a due beat
	FallbackError    string           `json:"fallback_error,omitempty"`                 // only when fallback: why the page failed
	HeldOpenCount    int              `json:"held_open_count,omitempty" contract:"ran"` // transactions holding the window open
	HeldOpenBy       []WindowHolder   `json:"held_open_by,omitempty" contract:"ran"`
	RunAt            time.Time        `json:"run_at,omitempty" contract:"ran"`
	ByStatus         map[string]int64 `json:"-"` // the non-zero status counts, by status
	Raw              json.RawMessage  `json:"-"` // the document as the SQL returned it
}

// Gates are the two switches a gated run found (both must be exactly 'true' to route).
type Gates struct {
	RoutesEnabled      bool `json:"iu_core.routes_enabled"`
	RouteWorkerEnabled bool `json:"iu_core.route_worker_enabled"`
}

// WindowHolder is one transaction that holds a worker's window open: its events are not
// visible yet, so the cursor cannot move past them. pid and the session fields are null
// for a prepared transaction, which has no backend; prepared_gid is null otherwise.
type WindowHolder struct {
	TxID            string     `json:"txid"`
	PID             *int       `json:"pid"`
	Usename         *string    `json:"usename"`
	ApplicationName *string    `json:"application_name"`
	State           *string    `json:"state"`
	XactStart       *time.Time `json:"xact_start"`
	XactAgeSeconds  *float64   `json:"xact_age_seconds"`
	PreparedGID     *string    `json:"prepared_gid"`
}

func (r *WorkerRun) contractShape() string {
	switch {
	case r.Busy:
		return "busy"
	case r.Gated:
		return "gated"
	}
	return "ran"
}

// Statuses are the iu_route_attempt statuses, in the order the runner reports them.
var Statuses = []string{"dry_run", "disabled", "skipped", "failed", "sent"}

// ParseWorkerRun reads a run summary: every key of its shape must be there; keys this
// runner does not know are ignored (see the contract notes in contract.go).
func ParseWorkerRun(raw []byte) (WorkerRun, error) { return parseWorkerRun(raw, lenient) }

func parseWorkerRun(raw []byte, strictKeys bool) (WorkerRun, error) {
	var r WorkerRun
	if err := decode("fn_iu_route_worker_run summary", raw, &r, strictKeys); err != nil {
		return WorkerRun{}, err
	}
	r.Raw = append(json.RawMessage(nil), raw...)
	r.ByStatus = map[string]int64{}
	for i, n := range []int64{r.DryRun, r.Disabled, r.Skipped, r.Failed, r.Sent} {
		if n > 0 {
			r.ByStatus[Statuses[i]] = n
		}
	}
	return r, nil
}

package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// StaleCheck is what fn_queue_stale_check returns: how many executors it looked at and
// what it did about the silent ones. Every count is always present.
type StaleCheck struct {
	Checked    int64 `json:"checked"`    // executors not paused
	Stale      int64 `json:"stale"`      // of those, silent past their threshold
	Emitted    int64 `json:"emitted"`    // silent alerts written (first, repeat, escalation)
	Escalated  int64 `json:"escalated"`  // of those, warning -> critical inside the window
	Suppressed int64 `json:"suppressed"` // stale, but already alerted inside the window
	Recovered  int64 `json:"recovered"`  // recovery events written
	// AheadReset counts beats stamped ahead of the clock (the server's clock stepped back
	// since) that the check reset to the clock, as if the executor beat when it was noticed.
	AheadReset    int64 `json:"ahead_reset"`
	Paused        int64 `json:"paused"`         // paused executors (never alerted)
	SkippedLocked int64 `json:"skipped_locked"` // candidates neither decided nor alerted (0 since contended alerts exist)
	// Contended counts the silent alerts written while another session held the executor's
	// alert-state row (it keeps a stale-check's transaction open): sent anyway, from the
	// committed state; BlockedBy names the sessions that held the rows.
	Contended    int64           `json:"contended"`
	BlockedBy    []LockHolder    `json:"blocked_by"`
	FloorSeconds int64           `json:"floor_seconds"` // the global threshold floor in force (0: none)
	CheckedAt    time.Time       `json:"checked_at"`
	Alerts       []StaleAlert    `json:"alerts"` // one per event written
	Raw          json.RawMessage `json:"-"`      // the document as the SQL returned it
}

// StaleAlert is one event the check wrote: a silent alert (alert says first, repeat or
// escalation; severity warning or critical) or a recovery (recovered true, severity info).
type StaleAlert struct {
	ExecutorID string `json:"executor_id"`
	Severity   string `json:"severity"`
	EventID    string `json:"event_id"`
	Alert      string `json:"alert,omitempty"`
	Recovered  bool   `json:"recovered,omitempty"`
	Contended  bool   `json:"contended,omitempty"` // written without the executor's alert-state row (another session held it)
}

// LockHolder is a session that holds a lock the package met (iu_core.fn_iu_session_describe):
// pid and login always; the application, state and transaction start when the package
// owner may see them (superuser or pg_read_all_stats), else null.
type LockHolder struct {
	PID             int64      `json:"pid"`
	Usename         *string    `json:"usename"`
	ApplicationName *string    `json:"application_name"`
	State           *string    `json:"state"`
	XactStart       *time.Time `json:"xact_start"`
	XactAgeSeconds  *float64   `json:"xact_age_seconds"`
}

// Describe is the holder as log attributes.
func (h LockHolder) Describe() string {
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Usename != nil {
		s += ", login " + *h.Usename
	}
	if h.ApplicationName != nil && *h.ApplicationName != "" {
		s += ", application " + *h.ApplicationName
	}
	if h.State != nil {
		s += ", " + *h.State
	}
	if h.XactAgeSeconds != nil {
		s += fmt.Sprintf(", transaction open %.0f s", *h.XactAgeSeconds)
	}
	return s
}

// ParseStaleCheck reads a stale-check result (missing keys fail, unknown keys are ignored).
func ParseStaleCheck(raw []byte) (StaleCheck, error) { return parseStaleCheck(raw, lenient) }

func parseStaleCheck(raw []byte, strictKeys bool) (StaleCheck, error) {
	var r StaleCheck
	if err := decode("fn_queue_stale_check() result", raw, &r, strictKeys); err != nil {
		return StaleCheck{}, err
	}
	r.Raw = append(json.RawMessage(nil), raw...)
	return r, nil
}

package store

import (
	"encoding/json"
	"time"
)

// StaleCheck is what fn_queue_stale_check returns: how many executors it looked at and
// what it did about the silent ones. Every count is always present.
type StaleCheck struct {
	Checked       int64           `json:"checked"`        // executors not paused
	Stale         int64           `json:"stale"`          // of those, silent past their threshold
	Emitted       int64           `json:"emitted"`        // silent alerts written (first, repeat, escalation)
	Escalated     int64           `json:"escalated"`      // of those, warning -> critical inside the window
	Suppressed    int64           `json:"suppressed"`     // stale, but already alerted inside the window
	Recovered     int64           `json:"recovered"`      // recovery events written
	Paused        int64           `json:"paused"`         // paused executors (never alerted)
	SkippedLocked int64           `json:"skipped_locked"` // rows another check or a beat held: left to it
	FloorSeconds  int64           `json:"floor_seconds"`  // the global threshold floor in force (0: none)
	CheckedAt     time.Time       `json:"checked_at"`
	Alerts        []StaleAlert    `json:"alerts"` // one per event written
	Raw           json.RawMessage `json:"-"`      // the document as the SQL returned it
}

// StaleAlert is one event the check wrote: a silent alert (alert says first, repeat or
// escalation; severity warning or critical) or a recovery (recovered true, severity info).
type StaleAlert struct {
	ExecutorID string `json:"executor_id"`
	Severity   string `json:"severity"`
	EventID    string `json:"event_id"`
	Alert      string `json:"alert,omitempty"`
	Recovered  bool   `json:"recovered,omitempty"`
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

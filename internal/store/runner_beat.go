package store

import (
	"encoding/json"
	"time"
)

// RunnerBeat is what fn_queue_runner_beat returns. Two shapes:
//
//	beat  the runner's row was beaten (created on the first beat; took_over when it took
//	      the row from a runner process that had stopped beating; released when this beat
//	      handed the row back)
//	held  another runner process of the same id holds the row and beat it less than 30 s
//	      ago: nothing was written; held_by names it
type RunnerBeat struct {
	ExecutorID    string          `json:"executor_id"`
	Beat          bool            `json:"beat"`
	Held          bool            `json:"held"`
	Created       bool            `json:"created,omitempty" contract:"beat"`
	TookOver      bool            `json:"took_over,omitempty" contract:"beat"`
	Released      bool            `json:"released,omitempty" contract:"beat"`
	OwnerRole     string          `json:"owner_role,omitempty" contract:"beat"`
	RegisteredVia string          `json:"registered_via,omitempty" contract:"beat"`
	LastBeatAt    *time.Time      `json:"last_beat_at,omitempty" contract:"beat"`
	HeldBy        *RunnerHolder   `json:"held_by,omitempty" contract:"held"`
	Raw           json.RawMessage `json:"-"`
}

// RunnerHolder is the runner process that holds a runner row: its instance (one uuid per
// process), its login, its last beat, the pid and host it reported, and when the row is
// free for another process if it does not beat again.
type RunnerHolder struct {
	Instance    string    `json:"instance"`
	SessionUser string    `json:"session_user"`
	LastBeatAt  time.Time `json:"last_beat_at"`
	PID         *int64    `json:"pid"`
	Host        *string   `json:"host"`
	FreeAt      time.Time `json:"free_at"`
}

func (r RunnerBeat) contractShape() string {
	if r.Held {
		return "held"
	}
	return "beat"
}

// ParseRunnerBeat reads a runner beat result (missing keys fail, unknown keys are ignored).
func ParseRunnerBeat(raw []byte) (RunnerBeat, error) { return parseRunnerBeat(raw, lenient) }

func parseRunnerBeat(raw []byte, strictKeys bool) (RunnerBeat, error) {
	var r RunnerBeat
	if err := decode("fn_queue_runner_beat() result", raw, &r, strictKeys); err != nil {
		return RunnerBeat{}, err
	}
	r.Raw = append(json.RawMessage(nil), raw...)
	return r, nil
}

package store

import "encoding/json"

// Reap is what fn_job_reap_expired_leases returns: the running jobs whose lease expired,
// requeued while attempts remain, dead-lettered otherwise (reaped = requeued + dead_lettered).
type Reap struct {
	Reaped       int64           `json:"reaped"`
	Requeued     int64           `json:"requeued"`
	DeadLettered int64           `json:"dead_lettered"`
	Raw          json.RawMessage `json:"-"` // the document as the SQL returned it
}

// ParseReap reads a reaper result (missing keys fail, unknown keys are ignored).
func ParseReap(raw []byte) (Reap, error) { return parseReap(raw, lenient) }

func parseReap(raw []byte, strictKeys bool) (Reap, error) {
	var r Reap
	if err := decode("fn_job_reap_expired_leases() result", raw, &r, strictKeys); err != nil {
		return Reap{}, err
	}
	r.Raw = append(json.RawMessage(nil), raw...)
	return r, nil
}

package store

import "testing"

// Rule: the summary's spec keys are read whether per-status counts are top-level or nested.
func TestParseWorkerRun(t *testing.T) {
	r, err := ParseWorkerRun([]byte(`{"worker":"w","gated":false,"busy":false,"claimed":500,"attempts_written":500,"dead_lettered":2,"dry_run":490,"by_status":{"failed":2,"skipped":8}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Worker != "w" || r.Claimed != 500 || r.DeadLettered != 2 || r.ByStatus["dry_run"] != 490 || r.ByStatus["failed"] != 2 || r.ByStatus["skipped"] != 8 {
		t.Fatalf("%+v", r)
	}
	r, err = ParseWorkerRun([]byte(`{"worker":"w","gated":true,"reason":"master gate closed","claimed":0}`))
	if err != nil || !r.Gated || r.Reason == "" {
		t.Fatalf("%+v %v", r, err)
	}
}

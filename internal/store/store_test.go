package store

import (
	"strings"
	"testing"
)

const ranSummary = `{"worker":"w","event_domain":"iu","gated":false,"busy":false,"batch_limit":500,
 "claimed":500,"attempts_written":500,"dead_lettered":2,"dry_run":490,"disabled":0,"skipped":8,"failed":2,"sent":0,
 "already_attempted":0,"caught_up":false,"window_open":true,"windows_opened":1,"windows_closed":0,"fallback":false,"idle":false,
 "held_open_count":1,"held_open_by":[{"txid":"7","pid":42,"usename":"u","application_name":"a","state":"idle in transaction",
 "xact_start":"2026-01-01T00:00:00Z","xact_age_seconds":1.5,"prepared_gid":null}],"run_at":"2026-01-01T00:00:01Z"}`

// Rule: a run summary is read from the keys the SQL emits: the per-status counts are the
// top-level keys named after the statuses (ByStatus holds the non-zero ones).
func TestParseWorkerRun(t *testing.T) {
	r, err := ParseWorkerRun([]byte(ranSummary))
	if err != nil {
		t.Fatal(err)
	}
	if r.Worker != "w" || r.Claimed != 500 || r.DeadLettered != 2 || r.ByStatus["dry_run"] != 490 || r.ByStatus["failed"] != 2 ||
		r.ByStatus["skipped"] != 8 || len(r.ByStatus) != 3 || len(r.HeldOpenBy) != 1 || *r.HeldOpenBy[0].PID != 42 {
		t.Fatalf("%+v", r)
	}
	r, err = ParseWorkerRun([]byte(`{"worker":"w","event_domain":"iu","gated":true,"busy":false,"reason":"master_gate_closed",
		"gates":{"iu_core.routes_enabled":false,"iu_core.route_worker_enabled":true},
		"claimed":0,"attempts_written":0,"dead_lettered":0,"dry_run":0,"disabled":0,"skipped":0,"failed":0,"sent":0}`))
	if err != nil || !r.Gated || r.Reason == "" || r.Gates == nil || r.Gates.RoutesEnabled || !r.Gates.RouteWorkerEnabled {
		t.Fatalf("%+v %v", r, err)
	}
}

// Rule: a key the document must carry and does not is an error naming the key, at the
// top level, in the keys of the document's shape, and inside nested objects; a renamed
// key never reads as zero.
func TestMissingKeysFail(t *testing.T) {
	for name, c := range map[string]struct{ doc, key string }{
		"renamed count":          {strings.Replace(ranSummary, `"sent":0`, `"sent_count":0`, 1), `"sent"`},
		"key of the ran shape":   {strings.Replace(ranSummary, `"caught_up":false,`, ``, 1), `"caught_up"`},
		"key of a window holder": {strings.Replace(ranSummary, `"pid":42,`, ``, 1), `"pid"`},
		"gated without gates": {`{"worker":"w","event_domain":"iu","gated":true,"busy":false,"reason":"x",
			"claimed":0,"attempts_written":0,"dead_lettered":0,"dry_run":0,"disabled":0,"skipped":0,"failed":0,"sent":0}`, `"gates"`},
	} {
		_, err := ParseWorkerRun([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err = %v, want one naming %s", name, err, c.key)
		}
	}
	if _, err := ParseReap([]byte(`{"reaped":0,"requeued":0}`)); err == nil || !strings.Contains(err.Error(), `"dead_lettered"`) {
		t.Errorf("reap without dead_lettered: %v", err)
	}
}

// Rule: the runner ignores a key it does not know (a database migrated by a newer release
// must not stop it), the contract test refuses it (so the struct learns every key).
func TestUnknownKeys(t *testing.T) {
	doc := []byte(`{"reaped":1,"requeued":1,"dead_lettered":0,"lease_tokens_cleared":1}`)
	if r, err := ParseReap(doc); err != nil || r.Reaped != 1 {
		t.Fatalf("lenient: %+v %v", r, err)
	}
	if _, err := parseReap(doc, strict); err == nil || !strings.Contains(err.Error(), "lease_tokens_cleared") {
		t.Fatalf("strict: %v", err)
	}
	if _, err := parseWorkerRun([]byte(strings.Replace(ranSummary, `"sent":0`, `"sent":0,"queued":0`, 1)), strict); err == nil {
		t.Fatal("strict decode accepted an unknown key")
	}
}

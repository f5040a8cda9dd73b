package queuehealth

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: every bad input the review of issue 21 found ends in a clear error: 22023, a message
// that starts with the public function's name and names the argument, and nothing written.
// Before: a two-dimensional array reached array_position (a raw 0A000, "searching for
// elements in multidimensional arrays is not supported") or a subscript (a silent NULL); a
// time zone PostgreSQL does not know raised its own unprefixed "time zone ... not
// recognized" inside the bulk-replay filters; a tab-only or megabyte-long dead-letter
// resolution or job-kind pause reason was stored (the reason cut at 2,000 characters).
func TestClearErrors_TheInputsOfIssue21(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	exe := asRole(t, db, "dot_executor")
	admin := asRole(t, db, "workflow_admin")
	db.Exec(t, `INSERT INTO job_dead_letter (id, job_id, job_kind, event_domain, job_snapshot, attempts, last_error)
	            VALUES ('00000000-0000-0000-0000-0000000000d1', gen_random_uuid(), 'k', 'iu', '{"payload": {}}', 3, 'x')`)
	megabyte := strings.Repeat("x", 1<<20)
	u1, u2 := "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
	twoD := `'{{` + u1 + `},{` + u2 + `}}'::uuid[]`
	oneD := `'{` + u1 + `,` + u2 + `}'::uuid[]`
	cases := []struct {
		name, sql string
		args      []any
		q         querier
		prefix    string
	}{
		{"complete_many: 2-D job ids", `SELECT fn_job_complete_many('w', ` + twoD + `, ` + oneD + `)`, nil, exe,
			"fn_job_complete_many: p_job_ids must be a one-dimensional array"},
		{"complete_many: 2-D lease tokens", `SELECT fn_job_complete_many('w', ` + oneD + `, ` + twoD + `)`, nil, exe,
			"fn_job_complete_many: p_lease_tokens must be a one-dimensional array"},
		{"fail_many: 2-D job ids", `SELECT fn_job_fail_many('w', ` + twoD + `, ` + oneD + `)`, nil, exe,
			"fn_job_fail_many: p_job_ids must be a one-dimensional array"},
		{"fail_many: 2-D lease tokens", `SELECT fn_job_fail_many('w', ` + oneD + `, ` + twoD + `)`, nil, exe,
			"fn_job_fail_many: p_lease_tokens must be a one-dimensional array"},
		{"fail_many: 2-D errors", `SELECT fn_job_fail_many('w', ` + oneD + `, ` + oneD + `, '{{a},{b}}'::text[])`, nil, exe,
			"fn_job_fail_many: p_errors must be a one-dimensional array"},
		{"enqueue_many: 2-D dedupe keys", `SELECT fn_job_enqueue_many('k', 'iu', '[{}, {}]', NULL, '{{a},{b}}'::text[])`, nil, exe,
			"fn_job_enqueue_many: p_dedupe_keys must be a one-dimensional array"},
		{"enqueue_many: dedupe keys numbered from 5", `SELECT fn_job_enqueue_many('k', 'iu', '[{}, {}]', NULL, '[5:6]={a,b}'::text[])`, nil, exe,
			"fn_job_enqueue_many: p_dedupe_keys must be a one-dimensional array numbered from 1"},
		{"claim: 2-D job kinds", `SELECT * FROM fn_job_claim('w', '{{k},{j}}'::text[])`, nil, exe,
			"fn_job_claim: p_job_kinds must be a one-dimensional array"},
		{"register: 2-D domain scope", `SELECT fn_queue_heartbeat_register('e', 'Agent', '{{iu},{x}}'::text[], 10, 30)`, nil, admin,
			"fn_queue_heartbeat_register: p_domain_scope must be a one-dimensional array"},
		{"route bulk replay: unknown time zone in failed_after", `SELECT fn_iu_route_dead_letter_replay_many($1::jsonb)`,
			[]any{`{"failed_after": "2026-01-01 00:00 Mars/Phobos"}`}, admin,
			"fn_iu_route_dead_letter_replay_many: filter key failed_after is not a timestamp"},
		{"route bulk replay: unknown time zone in failed_before", `SELECT fn_iu_route_dead_letter_replay_many($1::jsonb)`,
			[]any{`{"failed_before": "2026-01-01 00:00 Mars/Phobos"}`}, admin,
			"fn_iu_route_dead_letter_replay_many: filter key failed_before is not a timestamp"},
		{"job bulk replay: unknown time zone in failed_after", `SELECT fn_job_dead_letter_replay_many($1::jsonb)`,
			[]any{`{"failed_after": "2026-01-01 00:00 Mars/Phobos"}`}, admin,
			"fn_job_dead_letter_replay_many: filter key failed_after is not a timestamp"},
		{"job bulk replay: unknown time zone in failed_before", `SELECT fn_job_dead_letter_replay_many($1::jsonb)`,
			[]any{`{"failed_before": "2026-01-01 00:00 Mars/Phobos"}`}, admin,
			"fn_job_dead_letter_replay_many: filter key failed_before is not a timestamp"},
		{"resolve: tab-only resolution", `SELECT fn_job_dead_letter_resolve('00000000-0000-0000-0000-0000000000d1', E'\t\t')`, nil, admin,
			"fn_job_dead_letter_resolve: p_resolution required"},
		{"resolve: 1 MB resolution", `SELECT fn_job_dead_letter_resolve('00000000-0000-0000-0000-0000000000d1', $1)`, []any{megabyte}, admin,
			"fn_job_dead_letter_resolve: p_resolution is 1048576 bytes long, at most 1000 allowed"},
		{"kind pause: tab-only reason", `SELECT fn_job_kind_pause('k', E'\t')`, nil, admin,
			"fn_job_kind_pause: p_reason required"},
		{"kind pause: 1 MB reason", `SELECT fn_job_kind_pause('k', $1)`, []any{megabyte}, admin,
			"fn_job_kind_pause: p_reason is 1048576 bytes long, at most 1000 allowed"},
	}
	for _, c := range cases {
		var e *pgconn.PgError
		_, err := c.q.Exec(ctx(t), c.sql, c.args...)
		if !errors.As(err, &e) || e.Code != "22023" || !strings.HasPrefix(e.Message, c.prefix) {
			t.Errorf("%s: got %v, want 22023 starting with %q", c.name, err, c.prefix)
		}
	}
	for what, q := range map[string]string{
		"jobs":                  `SELECT count(*) FROM job_queue`,
		"heartbeats":            `SELECT count(*) FROM queue_heartbeat`,
		"paused kinds":          `SELECT count(*) FROM job_kind_pause`,
		"resolved dead letters": `SELECT count(*) FROM job_dead_letter WHERE resolved_at IS NOT NULL`,
	} {
		if n := count(t, db, q); n != 0 {
			t.Errorf("refused calls wrote %d %s", n, what)
		}
	}

	// The gap ratio (the figure alerts report) has no value where no ratio exists: NULL for a
	// cadence that is not positive (was 22012, division by zero) or an infinite time (was
	// 22008, interval out of range), never an error in the middle of a stale-check or a view.
	var zero, inf, fine *float64
	db.QueryRow(t, `SELECT iu_core.fn_queue_heartbeat_gap_ratio(now() - interval '1 minute', 0, now())::float8,
	                       iu_core.fn_queue_heartbeat_gap_ratio('-infinity', 60, now())::float8,
	                       iu_core.fn_queue_heartbeat_gap_ratio(now() - interval '90 seconds', 60, now())::float8`, nil, &zero, &inf, &fine)
	if zero != nil || inf != nil || fine == nil || *fine != 1.5 {
		t.Fatalf("gap ratio: cadence 0 -> %v, -infinity -> %v (want NULL both), 90 s at 60 s -> %v (want 1.5)", zero, inf, fine)
	}
}

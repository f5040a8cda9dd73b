package jobqueue

import (
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// jobFunctions is the job queue's surface with the group roles that may execute each
// function: executors work jobs, operators do what changes what every executor sees (reap,
// prune, pause a kind, dead letters); internal helpers and trigger functions are granted
// to nobody.
var jobFunctions = pgtest.GrantMatrix{
	"fn_job_reap_expired_leases()":                                                          {"workflow_admin"},
	"fn_job_dead_letter_replay(uuid,text)":                                                  {"workflow_admin"},
	"fn_job_dead_letter_resolve(uuid,text,text)":                                            {"workflow_admin"},
	"fn_job_enqueue(text,text,jsonb,timestamptz,text,integer)":                              {"dot_executor"},
	"fn_job_claim(text,text[],integer,integer)":                                             {"dot_executor"},
	"fn_job_complete(uuid,text)":                                                            {"dot_executor"},
	"fn_job_fail(uuid,text,text)":                                                           {"dot_executor"},
	"iu_core.fn_job_lease_row(text,uuid,text,uuid)":                                         nil,
	"iu_core.fn_job_dedupe_refuse_other(text,text,text,text)":                               nil,
	"iu_core.fn_job_dedupe_held_elsewhere(text,text,text)":                                  nil,
	"iu_core.fn_job_dead_letter_insert(uuid)":                                               nil,
	"iu_core.fn_job_dead_letter_guard()":                                                    nil,
	"fn_job_complete(uuid,text,uuid)":                                                       {"dot_executor"},
	"fn_job_fail(uuid,text,text,uuid)":                                                      {"dot_executor"},
	"fn_job_extend_lease(uuid,text,uuid,integer)":                                           {"dot_executor"},
	"fn_job_enqueue_many(text,text,jsonb,timestamptz,text[],integer)":                       {"dot_executor"},
	"fn_job_complete_many(text,uuid[],uuid[])":                                              {"dot_executor"},
	"fn_job_fail_many(text,uuid[],uuid[],text[])":                                           {"dot_executor"},
	"fn_job_prune(integer)":                                                                 {"workflow_admin"},
	"fn_job_kind_pause(text,text,text)":                                                     {"workflow_admin"},
	"fn_job_kind_resume(text,text)":                                                         {"workflow_admin"},
	"fn_job_dead_letter_replay_many(jsonb,integer)":                                         {"workflow_admin"},
	"iu_core.fn_job_require_process_after(text,timestamptz)":                                nil,
	"iu_core.fn_job_require_range(text,text,integer,integer,integer)":                       nil,
	"iu_core.fn_job_require_dedupe_horizon(text,timestamptz)":                               nil, // a key's horizon
	"iu_core.fn_job_dedupe_horizon_seconds()":                                               nil,
	"iu_core.fn_job_max_lease_seconds()":                                                    nil, // a lease's total
	"iu_core.fn_job_refusal_reason(job_queue,text,uuid)":                                    nil,
	"iu_core.fn_job_holds_lease(job_queue,text,uuid)":                                       nil,
	"iu_core.fn_job_retry_delay(integer)":                                                   nil,
	"iu_core.fn_job_error_text(text)":                                                       nil,
	"iu_core.fn_job_require_batch(text,text,uuid[],uuid[])":                                 nil,
	"iu_core.fn_job_complete_one(text,uuid,text,uuid)":                                      nil,
	"iu_core.fn_job_dead_letter_matches(job_dead_letter,text,text,timestamptz,timestamptz)": nil, // bulk replay
	"iu_core.fn_job_new_id()":                                                               nil,
	"iu_core.fn_job_fail_one(text,uuid,text,text,uuid)":                                     nil,
}

// Rule: PUBLIC executes none of them; each group role executes exactly its share; every
// SECURITY DEFINER one pins search_path = pg_catalog, pg_temp; no fn_job_* function exists
// outside the matrix.
func TestJobRoles_GrantMatrixAndPinnedSearchPath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	pgtest.RequireGrants(t, db, jobFunctions, `fn\_job\_%`)
}

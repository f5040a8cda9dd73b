-- 018_job_queue_lease_rules.sql
--
-- job_queue's two rules over several columns move from table CHECKs into a domain over a
-- composite of those columns, and job_queue's payload domain gets a refusing branch, both
-- for the single enqueue's rate (issue 23). A table migration: once released it is never
-- edited again.
--
-- Why. PostgreSQL prepares every CHECK of a table again for each statement that writes it:
-- the stored expression is parsed from its text (stringToNode, ~25 instructions a
-- character) and planned. fn_job_enqueue is one INSERT per call, so it paid for
-- job_queue_lease_ck and job_queue_token_ck (1,790 characters of stored node text) on
-- every call: ~59k instructions of a ~242k call, counted by callgrind, where a plain INSERT
-- of 20,000 rows pays it once. Every other single-row writer of job_queue (a claim of one
-- job, a complete, a fail, an extend) paid the same per statement. A domain's constraints
-- are planned once per session and kept (the type cache), as 016 did for the single-column
-- rules. A domain sees one value, so the value here is the row's lease state, a composite
-- of the four columns the rules read:
--
--   iu_core.iu_job_lease        (status, lease_owner, lease_expires_at, lease_token)
--   iu_core.iu_job_lease_state  a domain over it holding the two rules, with their names:
--       job_queue_lease_ck   running exactly when a lease owner and a lease expiry are set
--       job_queue_token_ck   a running job has a lease token
--
-- and one table CHECK, job_queue_lease_rules, casts every new row's four columns to that
-- domain. The cast is what enforces the rules (for INSERT, UPDATE and COPY alike); the
-- CHECK's own test (the cast's status IS NOT NULL, status being NOT NULL) never fails. Its
-- stored expression is half the characters of the two CHECKs' and is planned without the
-- rules' operators: ~23k instructions less per statement, ~1.3k more per row (the composite
-- built and read). A broken rule is refused with SQLSTATE 23514 naming the same constraint
-- as before (job_queue_lease_ck or job_queue_token_ck, checked in that order, as the table
-- CHECKs were, by name); the message now names the domain instead of the table ("value for
-- domain iu_core.iu_job_lease_state violates check constraint ..."), as the single-column
-- rules' do since 016.
--
-- The payload domain's hygiene rule, job_queue_payload_hygiene, becomes
-- `fn_iu_payload_is_clean(VALUE) OR fn_iu_event_outbox_refuse_payload(VALUE)`: the same rule
-- (the second branch runs only for a dirty payload, and returns false or raises), so every
-- writer is refused as before (23514, job_queue_payload_hygiene), except fn_job_enqueue,
-- which gets its own error (22023) without the subtransaction it needed to turn the
-- domain's error into it (~6k instructions a call). The refusing function is the outbox's
-- (it already tells emit, its writer, from the call stack) taught fn_job_enqueue's frame: a
-- function a table's rule names must exist before the release's function migration (020)
-- runs, and 020's Down could not drop a new one while this migration's rule still names it.
--
-- What it costs once: an ACCESS EXCLUSIVE lock on job_queue, taken in short attempts
-- (iu_core.fn_iu_adopt_lock: 200 ms each, so claims and enqueues never queue long behind
-- the request), held for a catalog change only: no row is read or rewritten, no index is
-- rebuilt, no view depends on a constraint. The new CHECK and the payload rule are added
-- NOT VALID: every existing row met the same rules (the CHECKs dropped in the same
-- transaction), so a scan would prove nothing. NOT VALID changes nothing for new rows.

-- +goose Up
CREATE TYPE iu_core.iu_job_lease AS (
    status           iu_core.iu_job_status,
    lease_owner      text,
    lease_expires_at timestamptz,
    lease_token      uuid
);
CREATE DOMAIN iu_core.iu_job_lease_state AS iu_core.iu_job_lease
    CONSTRAINT job_queue_lease_ck
        CHECK (((VALUE).status = 'running') = ((VALUE).lease_owner IS NOT NULL AND (VALUE).lease_expires_at IS NOT NULL))
    CONSTRAINT job_queue_token_ck
        CHECK ((VALUE).status <> 'running' OR (VALUE).lease_token IS NOT NULL);

-- +goose StatementBegin
DO $$
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.job_queue'::pg_catalog.regclass]);
    ALTER TABLE public.job_queue
        DROP CONSTRAINT job_queue_lease_ck,
        DROP CONSTRAINT job_queue_token_ck,
        ADD CONSTRAINT job_queue_lease_rules
            CHECK ((CAST(ROW(status, lease_owner, lease_expires_at, lease_token) AS iu_core.iu_job_lease_state)).status IS NOT NULL)
            NOT VALID;
END;
$$;
-- +goose StatementEnd

ALTER DOMAIN iu_core.iu_job_payload DROP CONSTRAINT job_queue_payload_hygiene;
ALTER DOMAIN iu_core.iu_job_payload ADD CONSTRAINT job_queue_payload_hygiene
    CHECK (iu_core.fn_iu_payload_is_clean(VALUE) OR iu_core.fn_iu_event_outbox_refuse_payload(VALUE)) NOT VALID;

-- +goose Down
-- The payload rule as 016 left it; the two table CHECKs again, as 010 wrote them (validated:
-- one scan of the table, so they are back exactly as they were); the domain and type gone.
ALTER DOMAIN iu_core.iu_job_payload DROP CONSTRAINT job_queue_payload_hygiene;
ALTER DOMAIN iu_core.iu_job_payload ADD CONSTRAINT job_queue_payload_hygiene
    CHECK (iu_core.fn_iu_payload_is_clean(VALUE)) NOT VALID;

-- +goose StatementBegin
DO $$
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.job_queue'::pg_catalog.regclass]);
    ALTER TABLE public.job_queue
        DROP CONSTRAINT job_queue_lease_rules,
        ADD CONSTRAINT job_queue_lease_ck CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
        ADD CONSTRAINT job_queue_token_ck CHECK (status <> 'running' OR lease_token IS NOT NULL);
END;
$$;
-- +goose StatementEnd

DROP DOMAIN iu_core.iu_job_lease_state;
DROP TYPE iu_core.iu_job_lease;

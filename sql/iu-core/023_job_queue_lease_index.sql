-- 023_job_queue_lease_index.sql
--
-- job_queue's two rules over several columns (job_queue_lease_ck, job_queue_token_ck) move
-- from the table CHECK job_queue_lease_rules (018) into the predicate of an index of their
-- own, job_queue_lease_rules, that no row enters, for the single enqueue's rate (issue 23).
-- A table migration: once released it is never edited again.
--
-- Why. PostgreSQL reads a table CHECK from its stored text again for every statement that
-- writes the table (stringToNode, ~25 instructions a character) and plans it again:
-- job_queue_lease_rules (832 characters) cost every single-row statement on job_queue ~36k
-- instructions, ~15 % of a fn_job_enqueue call, which a plain INSERT of 20,000 rows pays
-- once. An index's predicate is kept parsed and simplified in the relation cache (a
-- statement copies and prepares it), and every partial index's predicate is tested against
-- every row a statement writes, whether the row enters the index or not (INSERT, COPY, an
-- UPDATE that is not HOT). So an index whose predicate is 018's cast,
--
--   (CAST(ROW(status, lease_owner, lease_expires_at, lease_token) AS iu_core.iu_job_lease_state)).status IS NULL
--
-- enforces the rules as the CHECK's cast did: the cast refuses a broken state (23514 naming
-- job_queue_lease_ck or job_queue_token_ck, lease first, as before), and for every state it
-- accepts the predicate is false (status is NOT NULL), so the index stays empty: its one
-- page, never read by a query (no WHERE proves the predicate). Measured
-- (bench/instr/count.sh): fn_job_enqueue ~16k instructions a call less, keyed ~17k, a plain
-- INSERT row the same; every single-row statement on job_queue ~16k less.
--
-- Why it still holds for every write. An UPDATE is HOT (writes no index entry, so tests no
-- predicate) only when none of the columns an index names, in its keys or its predicate,
-- changes value; the four lease columns are all named here, so an update that changes any
-- of them is tested, and one that changes none keeps a state that was tested.
--
-- What it costs: that HOT test compares two more columns (lease_owner, lease_token) for
-- every updated row, ~1.4k instructions, against ~0.2k the predicate costs less per row
-- than the CHECK did: a statement updating more than ~13 rows pays more than before (a
-- batch complete of 100 jobs ~+1 %; bench/README.md, "023"). And what a writer sees
-- differently: a broken state is refused when the row reaches this index, after the primary
-- key's and the dedupe key's unique checks instead of before them (a row that breaks a rule
-- and repeats a key gets the unique violation; ON CONFLICT DO NOTHING skips a conflicting
-- row before its lease state is read, writing nothing either way). Dropping the index,
-- which no query uses, drops the rules: TestJobQueue_LeaseRulesHoldForEveryWrite fails then.
--
-- Not the reaper's index: its predicate (status = 'running') with the cast in it enforced
-- the rules as well and cost ~4k less a statement, but a partial index serves only a query
-- whose WHERE proves its predicate, and status = 'running' does not prove the cast: it lost
-- every such query (fn_job_complete_many's inlined lease test among them, whose plan went
-- from a scan of the running jobs to a key lookup per element).
--
-- What it costs once: an ACCESS EXCLUSIVE lock on job_queue, taken in short attempts
-- (iu_core.fn_iu_adopt_lock: 200 ms each, so claims and enqueues never queue long behind the
-- request), held while the index is built: one scan of job_queue, the cast per row (every
-- row met the rules already: the CHECK's cast, and 010's validated CHECKs before it).

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    v_path text := pg_catalog.current_setting('search_path');
BEGIN
    -- The predicate's cast resolves in pg_catalog and iu_core, whatever the installer's path.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.job_queue'::pg_catalog.regclass]);
    CREATE INDEX job_queue_lease_rules ON public.job_queue (job_id)
        WHERE (CAST(ROW(status, lease_owner, lease_expires_at, lease_token) AS iu_core.iu_job_lease_state)).status IS NULL;
    COMMENT ON INDEX public.job_queue_lease_rules IS
        'job_queue''s lease rules (job_queue_lease_ck, job_queue_token_ck): its predicate casts every written row''s lease state to iu_core.iu_job_lease_state, which refuses a broken one. No row enters it and no query reads it; dropping it drops the rules (023).';
    ALTER TABLE public.job_queue DROP CONSTRAINT job_queue_lease_rules;
    PERFORM pg_catalog.set_config('search_path', v_path, true);
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- The table CHECK as 018 left it (NOT VALID, as 018 added it: every row met the same rules).
-- +goose StatementBegin
DO $$
DECLARE
    v_path text := pg_catalog.current_setting('search_path');
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.job_queue'::pg_catalog.regclass]);
    ALTER TABLE public.job_queue
        ADD CONSTRAINT job_queue_lease_rules
            CHECK ((CAST(ROW(status, lease_owner, lease_expires_at, lease_token) AS iu_core.iu_job_lease_state)).status IS NOT NULL)
            NOT VALID;
    DROP INDEX public.job_queue_lease_rules;
    PERFORM pg_catalog.set_config('search_path', v_path, true);
END;
$$;
-- +goose StatementEnd

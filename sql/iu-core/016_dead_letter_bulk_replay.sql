-- 016_dead_letter_bulk_replay.sql
--
-- Adds bulk replay of open dead letters, for both queues (workflow_admin):
--   fn_job_dead_letter_replay_many(p_filter, p_limit)       job dead letters
--   fn_iu_route_dead_letter_replay_many(p_filter, p_limit)  route dead letters
--   fn_queue_dead_letter_filter(p_caller, p_filter, p_subject_key) the one filter parser of both
--
-- Why: an operator fixes a route or a job kind once and then has thousands of dead letters
-- to replay. Each call is one bounded batch (at most p_limit rows, oldest failure first)
-- that replays each row with the single-row replay function, so replay has one rule per
-- queue. A call is resumable: it takes only open dead letters, and a replayed one is
-- resolved (or, for a route replay that fails again, stamped with a new last_failed_at),
-- so calling again with the same filter goes on where the last call stopped. Pass
-- failed_before = the time the bulk replay started to give every row exactly one chance:
-- a route row that fails again then falls outside the filter. Rows locked by a concurrent
-- replay are skipped, never replayed twice.
--
-- Filter (a JSON object; {} means every open dead letter): route_key (routes) or job_kind
-- (jobs), error_code, failed_after, failed_before (timestamps, last_failed_at >= after
-- and < before). Any other key is refused (22023), so a typo never widens the batch to
-- everything. Route dead letters match error_code exactly; job dead letters have no code
-- column, so error_code matches the start of their last_error text (e.g. 'upstream 503').

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_queue_dead_letter_filter(p_caller text, p_filter jsonb, p_subject_key text)
RETURNS TABLE (subject text, error_code text, failed_after timestamptz, failed_before timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
-- Parses and checks a bulk-replay filter: a JSON object whose keys are among p_subject_key
-- ('route_key' or 'job_kind'), 'error_code', 'failed_after' and 'failed_before', each a
-- string (timestamps parsable as timestamptz). Returns one row with the values (NULL =
-- not filtered). Anything else is refused with 22023 before any row is touched.
DECLARE
    v_key text;
BEGIN
    IF p_filter IS NULL OR jsonb_typeof(p_filter) <> 'object' THEN
        RAISE EXCEPTION '%: p_filter must be a JSON object', p_caller USING ERRCODE = '22023',
            HINT = 'Pass ''{}'' for every open dead letter, or narrow it with ' || p_subject_key
                   || ', error_code, failed_after, failed_before.';
    END IF;
    FOR v_key IN SELECT k FROM jsonb_object_keys(p_filter) AS k LOOP
        IF v_key NOT IN (p_subject_key, 'error_code', 'failed_after', 'failed_before') THEN
            RAISE EXCEPTION '%: unknown filter key %', p_caller, quote_literal(v_key) USING ERRCODE = '22023',
                HINT = format('Known keys: %s, error_code, failed_after, failed_before.', p_subject_key);
        END IF;
        IF jsonb_typeof(p_filter -> v_key) <> 'string' OR btrim(p_filter ->> v_key) = '' THEN
            RAISE EXCEPTION '%: filter key % must be a non-empty string', p_caller, quote_literal(v_key)
                USING ERRCODE = '22023';
        END IF;
    END LOOP;
    subject    := p_filter ->> p_subject_key;
    error_code := p_filter ->> 'error_code';
    BEGIN
        failed_after  := (p_filter ->> 'failed_after')::timestamptz;
        failed_before := (p_filter ->> 'failed_before')::timestamptz;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_text_representation THEN
        RAISE EXCEPTION '%: failed_after and failed_before must be timestamps', p_caller USING ERRCODE = '22023',
            HINT = 'For example ''2026-11-22T17:00:00Z''.';
    END;
    RETURN NEXT;
END;
$$;
-- +goose StatementEnd

-- The filter of each queue, written once for both the batch it replays and its "more"
-- answer. One-expression SQL: inlined into both queries.
-- +goose StatementBegin
CREATE FUNCTION fn_job_dead_letter_matches(d job_dead_letter, p_job_kind text, p_error_prefix text,
                                           p_failed_after timestamptz, p_failed_before timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    -- A job dead letter has no SQLSTATE column: error_code matches the start of last_error.
    SELECT (p_job_kind IS NULL OR d.job_kind = p_job_kind)
       AND (p_error_prefix IS NULL OR starts_with(d.last_error, p_error_prefix))
       AND (p_failed_after IS NULL OR d.last_failed_at >= p_failed_after)
       AND (p_failed_before IS NULL OR d.last_failed_at < p_failed_before)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_dead_letter_matches(d iu_route_dead_letter, p_route_key text, p_error_code text,
                                                p_failed_after timestamptz, p_failed_before timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT (p_route_key IS NULL OR d.route_key = p_route_key)
       AND (p_error_code IS NULL OR d.error_code = p_error_code)
       AND (p_failed_after IS NULL OR d.last_failed_at >= p_failed_after)
       AND (p_failed_before IS NULL OR d.last_failed_at < p_failed_before)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_dead_letter_replay_many(p_filter jsonb, p_limit integer DEFAULT 1000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Replays up to p_limit (1..10000) open job dead letters matching p_filter, oldest failure
-- first, each with fn_job_dead_letter_replay (a fresh job; the dead letter resolved).
-- Returns {"selected": n, "replayed": n, "more": true while matching open ones remain}.
DECLARE
    f          record;
    v_id       uuid;
    v_selected integer := 0;
    v_replayed integer := 0;
    v_more     boolean;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_dead_letter_replay_many');
    SELECT * INTO f FROM fn_queue_dead_letter_filter('fn_job_dead_letter_replay_many', p_filter, 'job_kind');
    PERFORM fn_job_require_range('fn_job_dead_letter_replay_many', 'p_limit', p_limit, 1, 10000);
    FOR v_id IN
        SELECT d.id FROM job_dead_letter d
         WHERE d.resolved_at IS NULL
           AND fn_job_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)
         ORDER BY d.last_failed_at, d.id
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    LOOP
        v_selected := v_selected + 1;
        IF (fn_job_dead_letter_replay(v_id) ->> 'replayed')::boolean THEN
            v_replayed := v_replayed + 1;
        END IF;
    END LOOP;
    SELECT EXISTS (
        SELECT 1 FROM job_dead_letter d
         WHERE d.resolved_at IS NULL
           AND fn_job_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)) INTO v_more;
    RETURN jsonb_build_object('selected', v_selected, 'replayed', v_replayed, 'more', v_more);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_dead_letter_replay_many(p_filter jsonb, p_limit integer DEFAULT 1000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Replays up to p_limit (1..10000) open route dead letters matching p_filter, oldest
-- failure first, each with fn_iu_route_dead_letter_replay (which writes the attempt and
-- resolves the row, or records the new failure and leaves it open). Returns
-- {"selected": n, "resolved": n, "still_open": n, "statuses": {status: count},
--  "more": true while matching open ones remain (failed-again rows included)}.
DECLARE
    f          record;
    v_id       uuid;
    v_res      jsonb;
    v_selected integer := 0;
    v_resolved integer := 0;
    v_statuses jsonb := '{}'::jsonb;
    v_more     boolean;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_route_dead_letter_replay_many');
    SELECT * INTO f FROM fn_queue_dead_letter_filter('fn_iu_route_dead_letter_replay_many', p_filter, 'route_key');
    PERFORM fn_job_require_range('fn_iu_route_dead_letter_replay_many', 'p_limit', p_limit, 1, 10000);
    FOR v_id IN
        SELECT d.id FROM iu_route_dead_letter d
         WHERE d.resolved_at IS NULL
           AND fn_iu_route_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)
         ORDER BY d.last_failed_at, d.id
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    LOOP
        v_selected := v_selected + 1;
        v_res := fn_iu_route_dead_letter_replay(v_id);
        IF (v_res ->> 'resolved')::boolean THEN
            v_resolved := v_resolved + 1;
        END IF;
        v_statuses := v_statuses || jsonb_build_object(coalesce(v_res ->> 'status', v_res ->> 'reason', 'unknown'),
            coalesce((v_statuses ->> coalesce(v_res ->> 'status', v_res ->> 'reason', 'unknown'))::integer, 0) + 1);
    END LOOP;
    SELECT EXISTS (
        SELECT 1 FROM iu_route_dead_letter d
         WHERE d.resolved_at IS NULL
           AND fn_iu_route_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)) INTO v_more;
    RETURN jsonb_build_object('selected', v_selected, 'resolved', v_resolved, 'still_open', v_selected - v_resolved,
                              'statuses', v_statuses, 'more', v_more);
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_queue_dead_letter_filter(text, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_matches(job_dead_letter, text, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_dead_letter_matches(iu_route_dead_letter, text, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_replay_many(jsonb, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_dead_letter_replay_many(jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_job_dead_letter_replay_many(jsonb, integer) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_dead_letter_replay_many(jsonb, integer) TO workflow_admin;

-- +goose Down
DROP FUNCTION fn_iu_route_dead_letter_replay_many(jsonb, integer);
DROP FUNCTION fn_job_dead_letter_replay_many(jsonb, integer);
DROP FUNCTION fn_iu_route_dead_letter_matches(iu_route_dead_letter, text, text, timestamptz, timestamptz);
DROP FUNCTION fn_job_dead_letter_matches(job_dead_letter, text, text, timestamptz, timestamptz);
DROP FUNCTION fn_queue_dead_letter_filter(text, jsonb, text);

CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_legacy_callables()
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_legacy_callables() -> what it did: the first generation's functions and
    -- views that bear a package name, made ready for the package's own (migrations 009, 011),
    -- the last step of adoption before them. Every one is recorded with its definition and
    -- grants (the rollback recreates it). A function whose arguments, defaults and result are
    -- exactly the package's (the seeds' positional fn_iu_emit_event, fn_queue_heartbeat_tick,
    -- fn_cut_heartbeat_ping, ...) is left in place: the package's CREATE OR REPLACE takes it
    -- over without a moment in which callers find nothing, and keeps its grants. Any other
    -- function of a package name (other parameter names, another overload) is dropped: the
    -- package's is created in its place a moment later (callers of it fail meanwhile; the
    -- install plan says so). The package-named views are dropped, and the views built on them
    -- set aside until the package's exist (fn_iu_adopt_restore_views). Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    r         record;
    v_kept    text[] := '{}';
    v_dropped text[] := '{}';
    v_views   integer := 0;
BEGIN
    FOR r IN
        WITH api(name, args, result) AS (VALUES
            ('fn_cut_heartbeat_ping', 'p_executor_name text, p_executor_kind text DEFAULT ''external_worker''::text, p_status text DEFAULT ''ok''::text, p_metadata jsonb DEFAULT ''{}''::jsonb', 'jsonb'),
            ('fn_iu_core_routes_enabled', '', 'boolean'),
            ('fn_iu_emit_event', 'p_event_domain text, p_event_type text, p_event_stream text, p_delivery_lane text DEFAULT ''standard''::text, p_event_severity text DEFAULT ''info''::text, p_event_subject_table text DEFAULT NULL::text, p_event_subject_ref text DEFAULT NULL::text, p_safe_payload jsonb DEFAULT ''{}''::jsonb', 'uuid'),
            ('fn_iu_emit_events', 'p_event_domain text, p_event_type text, p_event_streams text[], p_delivery_lanes text[] DEFAULT NULL::text[], p_event_severities text[] DEFAULT NULL::text[], p_event_subject_tables text[] DEFAULT NULL::text[], p_event_subject_refs text[] DEFAULT NULL::text[], p_safe_payloads jsonb[] DEFAULT NULL::jsonb[]', 'uuid[]'),
            ('fn_iu_event_outbox_rebase_foreign_txids', '', 'jsonb'),
            ('fn_iu_gate_open', 'p_value text', 'boolean'),
            ('fn_iu_partition_maintain', '', 'jsonb'),
            ('fn_iu_retention_run', 'p_dry_run boolean DEFAULT true', 'jsonb'),
            ('fn_iu_route_dead_letter_replay', 'p_dead_letter_id uuid', 'jsonb'),
            ('fn_iu_route_dead_letter_replay_many', 'p_filter jsonb, p_limit integer DEFAULT 1000', 'jsonb'),
            ('fn_iu_route_deliver', 'p_event_snapshot jsonb, p_route_key text, p_route_kind text, p_idempotency_key text', 'jsonb'),
            ('fn_iu_route_worker_batch_limits', '', 'jsonb'),
            ('fn_iu_route_worker_enabled', '', 'boolean'),
            ('fn_iu_route_group_health', 'p_group_name text DEFAULT NULL::text', 'jsonb'),
            ('fn_iu_route_worker_health', 'p_worker_name text DEFAULT NULL::text', 'jsonb'),
            ('fn_iu_route_worker_register', 'p_worker_name text, p_event_domain text DEFAULT ''iu''::text', 'jsonb'),
            ('fn_iu_route_worker_register_member', 'p_group_name text, p_member_name text, p_event_domain text DEFAULT ''iu''::text, p_takeover_seconds integer DEFAULT NULL::integer', 'jsonb'),
            ('fn_iu_route_worker_remove_member', 'p_group_name text, p_member_name text', 'jsonb'),
            ('fn_iu_route_worker_reset_cursor', 'p_worker_name text', 'jsonb'),
            ('fn_iu_route_worker_run', 'p_worker_name text, p_batch_limit integer DEFAULT 100', 'jsonb'),
            ('fn_job_claim', 'p_worker text, p_job_kinds text[], p_limit integer DEFAULT 1, p_lease_seconds integer DEFAULT 60', 'SETOF public.job_queue'),
            ('fn_job_complete', 'p_job_id uuid, p_worker text', 'jsonb'),
            ('fn_job_complete', 'p_job_id uuid, p_worker text, p_lease_token uuid', 'jsonb'),
            ('fn_job_complete_many', 'p_worker text, p_job_ids uuid[], p_lease_tokens uuid[]', 'jsonb'),
            ('fn_job_dead_letter_replay', 'p_dead_letter_id uuid, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_job_dead_letter_replay_many', 'p_filter jsonb, p_limit integer DEFAULT 1000', 'jsonb'),
            ('fn_job_dead_letter_resolve', 'p_dead_letter_id uuid, p_resolution text, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_job_enqueue', 'p_job_kind text, p_event_domain text, p_payload jsonb DEFAULT ''{}''::jsonb, p_process_after timestamp with time zone DEFAULT now(), p_dedupe_key text DEFAULT NULL::text, p_max_attempts integer DEFAULT 5', 'uuid'),
            ('fn_job_enqueue_many', 'p_job_kind text, p_event_domain text, p_payloads jsonb, p_process_after timestamp with time zone DEFAULT now(), p_dedupe_keys text[] DEFAULT NULL::text[], p_max_attempts integer DEFAULT 5', 'uuid[]'),
            ('fn_job_extend_lease', 'p_job_id uuid, p_worker text, p_lease_token uuid, p_lease_seconds integer DEFAULT 60', 'jsonb'),
            ('fn_job_fail', 'p_job_id uuid, p_worker text, p_error text', 'jsonb'),
            ('fn_job_fail', 'p_job_id uuid, p_worker text, p_error text, p_lease_token uuid', 'jsonb'),
            ('fn_job_fail_many', 'p_worker text, p_job_ids uuid[], p_lease_tokens uuid[], p_errors text[] DEFAULT NULL::text[]', 'jsonb'),
            ('fn_job_kind_pause', 'p_job_kind text, p_reason text, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_job_kind_resume', 'p_job_kind text, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_job_prune', 'p_limit integer DEFAULT 10000', 'jsonb'),
            ('fn_job_reap_expired_leases', '', 'jsonb'),
            ('fn_queue_heartbeat_pause', 'p_executor_id text, p_reason text, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_queue_heartbeat_register', 'p_executor_id text, p_kind text, p_domain_scope text[], p_expected_cadence_seconds integer, p_stale_threshold_seconds integer, p_actor text DEFAULT NULL::text, p_owner_role text DEFAULT NULL::text', 'jsonb'),
            ('fn_queue_heartbeat_resume', 'p_executor_id text, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_queue_heartbeat_tick', 'p_executor_name text, p_executor_kind text, p_status text DEFAULT ''ok''::text, p_metadata jsonb DEFAULT ''{}''::jsonb', 'jsonb'),
            ('fn_queue_heartbeat_write', 'p_executor_id text, p_payload jsonb DEFAULT ''{}''::jsonb, p_actor text DEFAULT NULL::text', 'jsonb'),
            ('fn_queue_notify_enabled', '', 'boolean'),
            ('fn_queue_runner_beat', 'p_executor_id text, p_instance uuid, p_status text DEFAULT ''ok''::text, p_metadata jsonb DEFAULT ''{}''::jsonb, p_release boolean DEFAULT false', 'jsonb'),
            ('fn_queue_stale_check', '', 'jsonb'),
            (NULL, NULL, NULL))
        SELECT p.oid::regprocedure AS sig, p.proname::text AS name,
               EXISTS (SELECT 1 FROM api WHERE api.name = p.proname AND api.args = pg_get_function_arguments(p.oid)
                                           AND api.result = pg_get_function_result(p.oid)) AS same
          FROM pg_proc p
         WHERE p.pronamespace = 'public'::regnamespace
           AND p.proname IN (SELECT name FROM api WHERE name IS NOT NULL)
           AND NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption a WHERE a.kind = 'function' AND a.object = p.oid::regprocedure::text)
    LOOP
        PERFORM iu_core.fn_iu_adopt_record(r.sig::text, 'function', pg_get_functiondef(r.sig),
            jsonb_build_object('kept', r.same));
        IF r.same THEN
            v_kept := v_kept || r.sig::text;
        ELSE
            EXECUTE format('DROP FUNCTION %s', r.sig);
            v_dropped := v_dropped || r.sig::text;
        END IF;
    END LOOP;
    -- The package-named views: what reads them set aside, then each recorded and dropped.
    FOR r IN SELECT c.oid, c.oid::regclass AS rel FROM pg_class c
              WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v'
                AND c.relname IN ('v_iu_route_worker_status', 'v_iu_route_dead_letter_open', 'v_iu_route_attempt_summary', 'v_queue_health') LOOP
        v_views := v_views + iu_core.fn_iu_adopt_detach_views(ARRAY[r.oid::regclass], 'replace');
        PERFORM iu_core.fn_iu_adopt_record(r.rel::text, 'replaced_view',
            format('CREATE VIEW %s AS %s', r.rel, rtrim(pg_get_viewdef(r.oid, true), E'; \n')), '{}');
        EXECUTE format('DROP VIEW %s', r.rel);
    END LOOP;
    RETURN jsonb_build_object('kept_for_replacement', to_jsonb(v_kept), 'dropped', to_jsonb(v_dropped), 'views_set_aside', v_views);
END;
$$;

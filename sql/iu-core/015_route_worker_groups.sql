-- 015_route_worker_groups.sql
--
-- Route-worker groups: N members share one domain (a table migration). A group is one
-- logical worker: its audit rows, idempotency keys, dead letters and running counts carry
-- the group's name, so each event is routed once for the group. Each member is a route
-- worker cursor (its own snapshot-pair position, lock, heartbeat) that routes the events
-- whose stream hashes into its buckets and passes over the others; a rebalance hands
-- buckets over at one snapshot every member reaches (sql/functions/route_worker/README.md,
-- "Groups: N members share one domain").
--   iu_route_group                  one row per group: its domain, generation and the
--                                   pending hand-over's boundary snapshot
--   iu_route_worker_cursor.group_name   the group a cursor is a member of (NULL: a plain
--                                   worker); a member's run routes only its buckets
--   iu_route_group_member           each member's buckets now and from the boundary on

-- +goose Up
CREATE TABLE public.iu_route_group (
    group_name        text        PRIMARY KEY CHECK (group_name <> ''),
    event_domain      text        NOT NULL CHECK (event_domain <> ''),
    -- Bumped by every settled rebalance (and by a change of a group that never routed).
    generation        bigint      NOT NULL DEFAULT 1,
    -- A pending hand-over: every member routes its current buckets up to exactly this
    -- snapshot (its windows are cut at it); the next buckets apply to the rows not visible
    -- in it, from the moment every member's done_snapshot is this one. NULL: settled.
    boundary_snapshot pg_snapshot,
    boundary_at       timestamptz,
    -- The cluster the boundary was taken in (pg_control_system().system_identifier).
    system_identifier bigint,
    -- A member whose own runner has not beaten its heartbeat for this long (and whose lock
    -- is free) is an orphan: the other members' runs route its buckets for it.
    takeover_seconds  integer     NOT NULL DEFAULT 60 CHECK (takeover_seconds BETWEEN 0 AND 86400),
    settled_at        timestamptz,
    last_rebalance    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    created_by        text        NOT NULL DEFAULT current_user,
    created_session_user text     NOT NULL DEFAULT session_user,
    CONSTRAINT iu_route_group_boundary_ck CHECK ((boundary_snapshot IS NULL) = (boundary_at IS NULL))
);

COMMENT ON TABLE public.iu_route_group IS
    'Route-worker groups: one logical worker (audit rows, keys, dead letters under its name) whose members share one domain by a hash of the event stream.';

ALTER TABLE public.iu_route_worker_cursor
    ADD COLUMN group_name text REFERENCES public.iu_route_group (group_name);

COMMENT ON COLUMN public.iu_route_worker_cursor.group_name IS
    'The group this cursor is a member of (fn_iu_route_worker_register_member); NULL for a plain worker.';

CREATE INDEX iu_route_worker_cursor_group_idx ON public.iu_route_worker_cursor (group_name)
    WHERE group_name IS NOT NULL;

CREATE TABLE public.iu_route_group_member (
    member_name text        PRIMARY KEY REFERENCES public.iu_route_worker_cursor (worker_name) ON DELETE CASCADE,
    -- The buckets (of iu_core.fn_iu_route_group_buckets(), by a hash of event_stream) the
    -- member routes now: [bucket_lo, bucket_hi); empty (lo = hi) for a member that joins.
    bucket_lo   integer     NOT NULL,
    bucket_hi   integer     NOT NULL,
    -- During a rebalance: its buckets from the boundary on (empty for a leaving member).
    next_lo     integer,
    next_hi     integer,
    -- Removed: it routes its buckets up to the boundary, then the settle deletes it.
    leaving     boolean     NOT NULL DEFAULT false,
    joined_at   timestamptz NOT NULL DEFAULT now(),
    joined_by   text        NOT NULL DEFAULT current_user,
    CONSTRAINT iu_route_group_member_range_ck CHECK (0 <= bucket_lo AND bucket_lo <= bucket_hi AND bucket_hi <= 4096),
    CONSTRAINT iu_route_group_member_next_ck CHECK ((next_lo IS NULL) = (next_hi IS NULL)
                                                    AND (next_lo IS NULL OR (0 <= next_lo AND next_lo <= next_hi AND next_hi <= 4096)))
);

COMMENT ON TABLE public.iu_route_group_member IS
    'Members of route-worker groups: the hash buckets each routes now, and from a pending rebalance''s boundary on.';

REVOKE ALL ON TABLE public.iu_route_group, public.iu_route_group_member FROM PUBLIC;

-- +goose Down
-- The rollback rule: a group and its members are rows the package did not create. Refused
-- (IU005) while any exists, unless iu.drop_history says to drop them; then the members'
-- cursors and heartbeats go too (a member cursor without its group would run as a plain
-- worker over every bucket, under its own name).
-- +goose StatementBegin
DO $$
BEGIN
    PERFORM iu_core.fn_iu_require_empty_history('public.iu_route_group');
    DELETE FROM public.queue_heartbeat h
     WHERE h.executor_id IN (SELECT c.worker_name FROM public.iu_route_worker_cursor c WHERE c.group_name IS NOT NULL);
    DELETE FROM public.iu_route_worker_cursor c WHERE c.group_name IS NOT NULL;
END;
$$;
-- +goose StatementEnd
DROP TABLE public.iu_route_group_member;
DROP INDEX public.iu_route_worker_cursor_group_idx;
ALTER TABLE public.iu_route_worker_cursor DROP COLUMN group_name;
DROP TABLE public.iu_route_group;

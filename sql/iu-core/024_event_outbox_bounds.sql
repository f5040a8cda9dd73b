-- 024_event_outbox_bounds.sql
--
-- event_outbox's names get the length bound fn_iu_emit_event and fn_iu_emit_events have
-- always applied, on every write path, so a producer that INSERTs directly meets it too:
-- event_domain, event_type and event_stream at most 200 bytes (domain iu_event_name, which
-- event_type's domain iu_event_type is built on).
-- A table migration: once released it is never edited again.
--
-- Why (found by a review, issue 23's round). The outbox held only "not empty" for a name, so
-- a direct producer could write a 200 MB stream of one repeated character, stored compressed
-- in ~2.3 MB. Every route-worker run that reached the row unpacked and hashed the whole value
-- for the route join (~215 MB of backend memory and ~0.4 s a row); a hundred such rows made
-- every run of the worker's batch hit the runner's statement_timeout and roll back, so the
-- cursor never moved and every later event waited, with no way to skip the rows of an
-- append-only log but runs of a tiny batch. The bound is emit's: a name routes by equality
-- with a route's, and the registry's names are bounded the same.
--
-- NOT VALID: the rows already in the log are kept as they are, whatever their length (the
-- log is append-only and the package loses nothing in it); only rows written from now on
-- are held to the bound. An operator who wants the old rows checked too runs, when no longer
-- row is left (or once retention dropped them):
--   ALTER DOMAIN public.iu_event_name VALIDATE CONSTRAINT iu_event_name_bounded;
-- A producer that writes a longer name gets 23514 naming the constraint, and its row is not
-- written (fn_iu_emit_event refuses the same call first, with 22023, as before).
--
-- Not the subjects (event_subject_table, event_subject_ref: plain text columns, which emit
-- bounds at 200 and 1000 bytes). A bound there is either a table CHECK, read from its stored
-- node text and planned again for every statement that writes the table (one CHECK of both
-- cost a single-row INSERT ~40,000 instructions, 201 k -> 245 k), or a change of the columns
-- to a domain, which rebuilds every index an operator put on them (the first generation's
-- outbox has one) under ACCESS EXCLUSIVE on the live log. The worker does not read a subject
-- to route; only a dead letter's snapshot copies it.
--
-- What it costs every statement that writes event_outbox: the domain's new test on the three
-- name columns (bench/README.md, "024"). What it costs once: nothing is scanned (NOT VALID);
-- the constraint locks only the domain.

-- +goose Up
-- +goose StatementBegin
ALTER DOMAIN public.iu_event_name
    ADD CONSTRAINT iu_event_name_bounded CHECK (pg_catalog.octet_length(VALUE) OPERATOR(pg_catalog.<=) 200) NOT VALID;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
ALTER DOMAIN public.iu_event_name DROP CONSTRAINT iu_event_name_bounded;
-- +goose StatementEnd

-- The benches' route table: every iu event type of the benches' outboxes on both streams
-- (main, side), dry-run (a logged decision, nothing delivered), unit_flagged's route
-- disabled. One file for every bench that routes (bench/pgq, bench/routeworker,
-- bench/growth through benchdata.RoutesSQL; bench/instr/count.sh through psql -f), so
-- their figures are taken against the same routes.
INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, route_kind, enabled, dry_run) VALUES
  ('iu', 'unit_version_created',   'main', 'uv_created_main',   'outbound', true,  true),
  ('iu', 'unit_version_created',   'side', 'uv_created_side',   'outbound', true,  true),
  ('iu', 'unit_version_published', 'main', 'uv_published_main', 'webhook',  true,  true),
  ('iu', 'unit_version_published', 'side', 'uv_published_side', 'webhook',  true,  true),
  ('iu', 'unit_archived',          'main', 'u_archived_main',   'outbound', true,  true),
  ('iu', 'unit_archived',          'side', 'u_archived_side',   'outbound', true,  true),
  ('iu', 'unit_flagged',           'main', 'u_flagged_main',    'queue',    false, true);

-- variant: refuse_outbox_lane_vocabulary
-- models:  a widened lane vocabulary: the legacy CHECK on delivery_lane was replaced to allow
--          'urgent', and a producer (the D43 red-zones adapter) writes its critical alerts
--          with lane 'urgent'; 30 such rows exist and more arrive.
-- adoption: REFUSE.
-- why:     the package's lanes are immediate|standard|batch (spec §3; its domain
--          iu_delivery_lane). Adopting means either the package's rule refuses that live
--          producer's next INSERT (a legacy producer stops working) or the package runs
--          with a vocabulary its consumers (the NOTIFY bridge's 'lane', routing) do not
--          know. Neither is adoption; the plan must refuse, naming the constraint, the
--          extra value and how many rows carry it.
-- check:   SELECT count(*) = 30 FROM event_outbox WHERE delivery_lane = 'urgent'
ALTER TABLE event_outbox DROP CONSTRAINT event_outbox_delivery_lane_check;
ALTER TABLE event_outbox ADD CONSTRAINT event_outbox_delivery_lane_check
    CHECK (delivery_lane IN ('immediate', 'standard', 'batch', 'urgent'));
INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity, safe_payload, created_at)
SELECT 'system', 'alert', 'd43_red_zones', 'urgent', 'critical', jsonb_build_object('zone', g % 4), now() - g * interval '3 hours'
  FROM generate_series(1, 30) g;

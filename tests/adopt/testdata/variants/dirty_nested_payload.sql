-- variant: dirty_nested_payload
-- models:  rows the first generation let in: its hygiene CHECK tests the payload's TOP level
--          only (spec §2: "the seeds check the top level only"), so producers stored
--          denylisted keys one level down and in another letter case, and one producer
--          stored a payload that is a JSON array, not an object. Append-only: nobody can
--          clean them.
-- adoption: ADOPT (every row kept as it is).
-- why:     "keep every row" and the log is append-only, so these rows stay. The package's
--          stricter rules (any depth, any case, an object) can only apply to rows written
--          from now on: as a NOT VALID constraint or a rule for new rows, never by
--          converting safe_payload to the package's iu_safe_payload domain (that checks, and
--          so refuses, every existing row) nor by VALIDATE. A plan that counts them and says
--          so is right; one that refuses the database is not.
-- check:   SELECT count(*) = 12 FROM event_outbox WHERE safe_payload @? '$.**.token' OR safe_payload @? '$.**.Password' OR jsonb_typeof(safe_payload) <> 'object'
INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload, created_at)
SELECT 'system', 'alert', 'healthcheck',
       CASE WHEN g <= 5 THEN jsonb_build_object('check', 'oauth_refresh', 'auth', jsonb_build_object('token', 'redacted?'))
            WHEN g <= 10 THEN jsonb_build_object('check', 'login_probe', 'Password', 'x')
            ELSE jsonb_build_array('legacy', 'array', g) END,
       now() - g * interval '1 hour'
  FROM generate_series(1, 12) g;

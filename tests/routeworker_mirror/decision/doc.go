// Package decision is the pure, DB-free mirror of the route worker's decision contract.
// The SQL is the authority (fn_iu_route_decide, fn_iu_route_idempotency_key and the name
// rules, the route_key CHECK of iu_outbound_route); this package answers, for one event
// and one named worker, the same questions without a database:
//
//   - Is the event claimed at all? A worker consumes one event domain (its cursor's
//     event_domain, 'iu' by default). An event of another domain is not claimed: no
//     attempt is written for it and it is never dead-lettered by that worker. Closed gates
//     (master iu_core.routes_enabled or worker iu_core.route_worker_enabled) claim nothing.
//
//   - Which status does the one audit row (iu_route_attempt) get?
//
//     route found?  enabled?  dry_run?  delivery outcome     status     dead letter
//     no            -         -         -                    skipped    no
//     yes           false     any       -                    disabled   no
//     yes           true      true      - (nothing sent)     dry_run    no
//     yes           true      false     seam: sent           sent       no
//     yes           true      false     seam: failed SQLSTATE failed    yes (with the SQLSTATE)
//
//     Today the delivery seam (fn_iu_route_deliver) is unbuilt and fails closed with
//     feature_not_supported (0A000), so every enabled, non-dry-run route yields
//     failed + dead letter with error code 0A000. SeamFailClosed models exactly that; the
//     Sent outcome exists so the contract is stated for the day the seam is built.
//
//   - Which idempotency key? iu_wrk:{worker}:{route_key}:{event_id}, with route_key
//     "none" when no route matched. The key is the second idempotency layer (UNIQUE
//     (idempotency_key, attempt_no)); a dead letter carries the same key.
//
//   - Which inputs are refused? ValidateWorkerName and ValidRouteKey refuse exactly what
//     the SQL refuses: blank names (spaces, tabs, newlines count as blank), names over 200
//     bytes, ':' in a worker name (it would make the idempotency key ambiguous), and the
//     route key "none" (the no-route placeholder). A route key may contain ':'.
//
// The mirror exists to be compared with the SQL: tests/routeworker_mirror generates
// cases, runs them through fn_iu_route_worker_run and through Decide, and requires the
// same status, key and dead-letter decision for every (worker, event) pair.
package decision

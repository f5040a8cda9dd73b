// Package notifier keeps one dedicated LISTEN connection for the runner and turns
// notifications on queue_wake_<domain> into wake-ups of the service loop.
//
// NOTIFY is only a wake-up signal: a lost notification never loses work,
// because the service also polls (hybrid mode) or polls while the listener is down
// (notify mode), and every (re)connection is itself a wake-up that makes the loop look:
// whatever committed before LISTEN took effect was signalled to nobody.
//
// # A burst is one wake-up
//
// Any login may NOTIFY a wake-up channel, so a burst must not cost a pass per notification
// (20,000 NOTIFYs made 2,740 passes, each finding the loop idle again after a short pass
// while the rest of the burst was still being read). When a notification arrives, the
// notifier first drains what is queued behind it: it sends a marker on its private drain
// channel through the LISTEN session itself and reads up to the marker, then wakes the
// loop once (Hooks.Notified gets the count). PostgreSQL delivers notifications in queue
// order and the marker is queued after the burst, so the drain needs no timer and misses
// nothing committed before it. The service's wake-up is one slot: a burst arriving while
// a pass runs costs one extra pass, a burst arriving while it waits costs one pass. A
// sustained stream of notifications (not a burst) still costs up to one pass after
// another: the loop never sleeps on work that may be waiting.
//
// # The connection
//
// The connection is acquired from the runner's pool (so it carries the same
// application_name and statement_timeout) and then taken out of it with
// pgxpool.Conn.Hijack: the pool forgets it, never hands it to a query, and the listener
// owns and closes it. A LISTEN session must not be shared: a pooled connection that ran
// LISTEN would deliver notifications to whichever caller borrowed it next.
//
// # Health: the NOTIFY round trip
//
// A TCP connection can look open long after the server or a middlebox dropped it. Every
// CheckInterval the notifier sends pg_notify(<private ping channel>, <n>) through the pool
// (another session) and waits up to CheckTimeout for it to come back on the listener. That
// proves the whole path — server up, listener session alive, notifications delivered.
// A missed round trip, or any error while waiting, closes the connection. RoundTrips
// counts the answered ones (tests wait on it instead of sleeping). Reconnects back off
// from MinBackoff to MaxBackoff (250ms to 30s), doubling, each wait spread by ±20% so
// runners that lost the server together do not reconnect in step; each attempt is logged
// at debug level only (the service summarises an outage). RetryNow ends a wait at once:
// the service calls it when the database answers again after an outage.
//
// # State diagram
//
//	           ┌──────────────┐ acquire + hijack + LISTEN ok ┌───────────────┐
//	start ───► │  CONNECTING  │ ───────────────────────────► │   LISTENING   │ ◄─┐ notification on
//	           └──────────────┘ (wake "reconnect", or        │ listener_up=1 │ ──┘ queue_wake_*:
//	              ▲        │     "startup" the first time)   └───────────────┘     wake "notify"
//	              │        │ error                              │         │
//	              │        ▼                                    │         │ round trip ok: stay
//	           ┌──────────────┐  conn error, backend killed,    │         │
//	           │   BACKOFF    │ ◄── round trip missed ──────────┘         │
//	           │ listener_up=0│  (warn "falling back to polling")         │ ctx cancelled
//	           │250ms→30s ±20%│  (RetryNow: at once)                      ▼
//	           └──────────────┘                                 STOPPED (conn closed)
//
// While the state is BACKOFF or CONNECTING, Up() is false, iu_runner_listener_up is 0 and
// the service polls at --poll-interval in every mode.
package notifier

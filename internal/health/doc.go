// Package health reads v_queue_health, the single pane (SPEC section 8), and renders it
// for people (an aligned table, problem rows marked) or machines (--json), and decides the
// exit status of `iu-runner health`:
//
//	0  every row is fine
//	3  at least one row is a problem:
//	     - status_hint 'stale' (a heartbeat past its threshold) or 'critical';
//	     - a 'critical' value in a severity column, when the view adds one;
//	     - an open dead letter (source dead_letter_event / dead_letter_job, status_hint 'open').
//	1  the view could not be read (the caller maps errors to 1)
//
// The view's first nine columns are the contract (source, subject, domain, last_seen_at,
// age_seconds, events_seen, attempts_written, dead_lettered, status_hint); columns the SQL
// adds after them (backlog, severity, ...) are read and shown too, by name, so the runner
// never needs a release when the view grows. The same rows feed the iu_queue_health_*
// gauges of the run command (see Problem, Number).
package health

// Package health renders v_queue_health, the single pane, for people (an aligned table,
// problem rows marked) or machines (--json), and decides the exit status of
// `iu-runner health`:
//
//	0  every row is fine
//	3  at least one row is a problem:
//	     - status_hint 'stale': an executor silent past its threshold (its severity column
//	       says warning or critical; the summary counts the critical ones);
//	     - severity 'critical' on any other row (the view does not produce one today);
//	     - an open dead letter (source dead_letter_event / dead_letter_job: the view lists
//	       dead letters only while they are open).
//	1  the view could not be read (the caller maps errors to 1)
//
// The rows are typed by the contract in internal/store (store.QueueHealthRow, scanned by
// column name), so a column the view renames or drops fails the read instead of showing
// as empty. The same rows feed the iu_queue_health_* gauges of the run command.
package health

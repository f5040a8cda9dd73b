package health

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/iu-core/event-worker/internal/store"
)

// Exit statuses of the health command.
const (
	ExitOK      = 0
	ExitDBError = 1
	ExitProblem = 3
)

// Row is one v_queue_health row, typed by the contract in internal/store.
type Row = store.QueueHealthRow

// columns are the view's columns in its order, each with its value as text ("" for NULL).
// detail, a JSON object, is left to --json.
var columns = []struct {
	name string
	text func(Row) string
}{
	{"source", func(r Row) string { return r.Source }},
	{"subject", func(r Row) string { return r.Subject }},
	{"domain", func(r Row) string { return str(r.Domain) }},
	{"last_seen_at", func(r Row) string { return timeText(r.LastSeenAt) }},
	{"age_seconds", func(r Row) string { return intText(r.AgeSeconds) }},
	{"events_seen", func(r Row) string { return intText(r.EventsSeen) }},
	{"attempts_written", func(r Row) string { return intText(r.AttemptsWritten) }},
	{"dead_lettered", func(r Row) string { return intText(r.DeadLettered) }},
	{"status_hint", func(r Row) string { return r.StatusHint }},
	{"backlog", func(r Row) string { return intText(r.Backlog) }},
	{"oldest_pending_age_seconds", func(r Row) string { return intText(r.OldestPendingAgeSeconds) }},
	{"severity", func(r Row) string { return str(r.Severity) }},
	{"paused", func(r Row) string {
		if r.Paused == nil {
			return ""
		}
		return strconv.FormatBool(*r.Paused)
	}},
	{"gap_ratio", func(r Row) string {
		if r.GapRatio == nil {
			return ""
		}
		return strconv.FormatFloat(*r.GapRatio, 'f', -1, 64)
	}},
	{"stale_threshold_seconds", func(r Row) string { return intText(r.StaleThresholdSeconds) }},
	{"executor_kind", func(r Row) string { return str(r.ExecutorKind) }},
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func intText(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

func timeText(p *time.Time) string {
	if p == nil {
		return ""
	}
	return p.UTC().Format("2006-01-02 15:04:05Z")
}

// DefaultGatedGrace is how long a closed gate may keep events waiting before `health` calls
// it a problem (exit 3): long enough for a deliberate pause, short enough that a gate left
// closed by mistake does not pile events up unnoticed (`iu-runner health --gated-grace`).
const DefaultGatedGrace = 15 * time.Minute

// DefaultPausedGrace is how long an executor may stay paused before `health` calls it a
// problem (exit 3): a pause is planned maintenance, which ends; one left behind after it
// hides a dead executor from every alert (`iu-runner health --paused-grace`).
const DefaultPausedGrace = 24 * time.Hour

// Rules decide which rows are problems.
type Rules struct {
	// GatedGrace: a cursor row whose closed gate has kept events waiting this long is a
	// problem ("gated"); 0 means at once.
	GatedGrace time.Duration
	// PausedGrace: a heartbeat row paused this long is a problem ("paused_too_long"); 0
	// turns the rule off (a pause is then never a problem).
	PausedGrace time.Duration
}

// DefaultRules are the rules with the default graces.
var DefaultRules = Rules{GatedGrace: DefaultGatedGrace, PausedGrace: DefaultPausedGrace}

// Problem says why a row is a problem ("" when it is not): stale (an executor silent past
// its threshold; its severity column says warning or critical), open_dead_letters (the
// view lists dead letters only while they are open), gated (a closed gate has kept
// events waiting for a worker longer than the grace: before, closed gates with events
// piling up exited 0), or the history row's lock_held (a session has held the
// partition-maintenance lock for 10 s or more: maintenance and retention cannot run) and
// default_rows (maintenance fell behind), and error_status (an executor beats on time but
// reports status error: alive, and saying it is failing; before, such a row read fresh and
// exited 0), and paused_too_long (an executor paused for longer than the paused grace: a
// pause forgotten after maintenance, which raises no alert however long it lasts). A severity of critical on a row that is not stale would be a problem too; the
// view does not produce one today.
func (ru Rules) Problem(r Row) string {
	switch {
	case r.StatusHint == "stale":
		return "stale"
	case str(r.Severity) == "critical":
		return "critical"
	case r.Source == store.SourceHeartbeat && r.StatusHint == "fresh" && r.Severity != nil:
		// The view's verdict, not a second copy of its rule: a fresh heartbeat has a
		// severity only when the executor reports status error.
		return "error_status"
	case r.Source == store.SourceHeartbeat && r.StatusHint == "paused" && ru.PausedGrace > 0:
		// (No paused_seconds: a view older than this runner, which cannot say; not a problem.)
		if d, err := r.Heartbeat(); err != nil || (d.PausedSeconds != nil &&
			time.Duration(*d.PausedSeconds)*time.Second >= ru.PausedGrace) {
			return "paused_too_long"
		}
	case r.Source == store.SourceDeadLetterEvent || r.Source == store.SourceDeadLetterJob:
		if r.DeadLettered == nil || *r.DeadLettered > 0 {
			return "open_dead_letters"
		}
	case r.Source == store.SourceCursor && r.StatusHint == "gated":
		if d, err := r.Cursor(); err != nil || d.GatedWaitingSeconds == nil ||
			time.Duration(*d.GatedWaitingSeconds)*time.Second >= ru.GatedGrace {
			return "gated"
		}
	case r.Source == store.SourceHistory && r.StatusHint != "ok":
		return r.StatusHint // lock_held or default_rows
	}
	return ""
}

// ExitCode is 3 when any row is a problem, else 0.
func (ru Rules) ExitCode(rows []Row) int {
	for _, r := range rows {
		if ru.Problem(r) != "" {
			return ExitProblem
		}
	}
	return ExitOK
}

// Counts summarizes rows: total, stale, critical, open dead-letter rows, workers whose
// closed gate keeps events waiting (gated; a problem once past the grace), history problem
// rows, executors reporting status error, and executors paused past the paused grace.
type Counts struct {
	Rows            int `json:"rows"`
	Stale           int `json:"stale"`
	Critical        int `json:"critical"`
	OpenDeadLetters int `json:"open_dead_letter_rows"`
	Gated           int `json:"gated"`
	History         int `json:"history_problem_rows"`
	ErrorStatus     int `json:"error_status"`
	PausedTooLong   int `json:"paused_too_long"`
}

// Count tallies the problems.
func (ru Rules) Count(rows []Row) Counts {
	c := Counts{Rows: len(rows)}
	for _, r := range rows {
		switch ru.Problem(r) {
		case "stale":
			c.Stale++
		case "open_dead_letters":
			c.OpenDeadLetters++
		case "lock_held", "default_rows":
			c.History++
		case "error_status":
			c.ErrorStatus++
		case "paused_too_long":
			c.PausedTooLong++
		}
		if str(r.Severity) == "critical" {
			c.Critical++
		}
		if r.Source == store.SourceCursor && r.StatusHint == "gated" {
			c.Gated++
		}
	}
	return c
}

// Problem is DefaultRules.Problem.
func Problem(r Row) string { return DefaultRules.Problem(r) }

// ExitCode is DefaultRules.ExitCode.
func ExitCode(rows []Row) int { return DefaultRules.ExitCode(rows) }

// Count is DefaultRules.Count.
func Count(rows []Row) Counts { return DefaultRules.Count(rows) }

// RenderJSON is DefaultRules.RenderJSON.
func RenderJSON(w io.Writer, rows []Row) error { return DefaultRules.RenderJSON(w, rows) }

// RenderTable is DefaultRules.RenderTable.
func RenderTable(w io.Writer, rows []Row) error { return DefaultRules.RenderTable(w, rows) }

// RenderJSON writes {"ok":bool,"counts":{...},"rows":[{column: value..., "problem": why}]}.
func (ru Rules) RenderJSON(w io.Writer, rows []Row) error {
	type row struct {
		Row
		Problem string `json:"problem"`
	}
	type out struct {
		OK     bool   `json:"ok"`
		Counts Counts `json:"counts"`
		Rows   []row  `json:"rows"`
	}
	o := out{OK: ru.ExitCode(rows) == ExitOK, Counts: ru.Count(rows), Rows: []row{}}
	for _, r := range rows {
		if len(r.Detail) == 0 {
			r.Detail = json.RawMessage("null")
		}
		o.Rows = append(o.Rows, row{Row: r, Problem: ru.Problem(r)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// RenderTable writes an aligned table, one line per row; a problem row starts with "!"
// and names its problem in the last column. A summary line follows, then one line per
// worker whose closed gate keeps events waiting and per worker whose lock a session holds
// (its pid and login: the detail --json shows in full).
func (ru Rules) RenderTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{" "}
	if len(rows) > 0 {
		for _, c := range columns {
			head = append(head, strings.ToUpper(c.name))
		}
	}
	head = append(head, "PROBLEM")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		mark := " "
		p := ru.Problem(r)
		if p != "" {
			mark = "!"
		}
		line := []string{mark}
		for _, c := range columns {
			s := c.text(r)
			if s == "" {
				s = "-"
			}
			line = append(line, s)
		}
		if p == "" {
			p = "-"
		}
		line = append(line, p)
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := ru.Count(rows)
	verdict := "OK"
	if ru.ExitCode(rows) != ExitOK {
		verdict = "ATTENTION"
	}
	if _, err := fmt.Fprintf(w, "\n%s: %d rows, %d stale, %d critical, %d with open dead letters, %d gated with events waiting\n",
		verdict, c.Rows, c.Stale, c.Critical, c.OpenDeadLetters, c.Gated); err != nil {
		return err
	}
	if c.ErrorStatus > 0 {
		if _, err := fmt.Fprintf(w, "%d executor(s) beating with status error\n", c.ErrorStatus); err != nil {
			return err
		}
	}
	if c.PausedTooLong > 0 {
		if _, err := fmt.Fprintf(w, "%d executor(s) paused longer than %s\n", c.PausedTooLong, ru.PausedGrace); err != nil {
			return err
		}
	}
	for _, r := range rows {
		d, err := r.Cursor()
		if err != nil || r.Source != store.SourceCursor {
			continue
		}
		if r.StatusHint == "gated" && d.GatedWaitingSeconds != nil {
			if _, err := fmt.Fprintf(w, "worker %s: a closed gate has kept %s event(s) waiting for %s (grace %s)\n",
				r.Subject, intText(r.Backlog), time.Duration(*d.GatedWaitingSeconds)*time.Second, ru.GatedGrace); err != nil {
				return err
			}
		}
		for _, h := range d.LockHeldBy {
			if _, err := fmt.Fprintf(w, "worker %s: lock held by %s\n", r.Subject, h.Describe()); err != nil {
				return err
			}
		}
	}
	return nil
}

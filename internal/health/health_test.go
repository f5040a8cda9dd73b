package health

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// row builds a v_queue_health row from its first nine columns (nil: NULL) and, for a
// stale heartbeat, its severity column.
func row(source, subject string, domain *string, seen time.Time, age, events, attempts, dead *int64, hint string) Row {
	r := Row{Source: source, Subject: subject, Domain: domain, LastSeenAt: &seen, AgeSeconds: age,
		EventsSeen: events, AttemptsWritten: attempts, DeadLettered: dead, StatusHint: hint}
	if source == "heartbeat" && hint == "stale" {
		sev := "warning"
		if age != nil && *age >= 600 {
			sev = "critical"
		}
		r.Severity = &sev
	}
	return r
}

func n(v int64) *int64 { return &v }

func s(v string) *string { return &v }

// Rule: stale, critical and open dead-letter rows make `health` exit 3; fresh rows exit 0.
func TestExitCode(t *testing.T) {
	now := time.Now()
	fresh := row("heartbeat", "a", nil, now, n(1), nil, nil, nil, "fresh")
	cursor := row("cursor", "iu_outbound_default", s("iu"), now, n(2), n(10), n(10), n(0), "caught_up")
	if got := ExitCode([]Row{fresh, cursor}); got != ExitOK {
		t.Fatalf("fresh rows: exit %d", got)
	}
	for name, bad := range map[string]Row{
		"stale":       row("heartbeat", "b", nil, now, n(200), nil, nil, nil, "stale"),
		"critical":    row("heartbeat", "c", nil, now, n(900), nil, nil, nil, "stale"), // severity critical
		"dead letter": row("dead_letter_event", "iu", s("iu"), now, nil, nil, nil, n(3), "open"),
	} {
		if got := ExitCode([]Row{fresh, bad}); got != ExitProblem {
			t.Errorf("%s: exit %d, want 3", name, got)
		}
	}
	// critical is read from the severity column (status_hint never says critical)
	crit := row("heartbeat", "c", nil, now, n(900), nil, nil, nil, "stale")
	if c := Count([]Row{fresh, crit}); c.Critical != 1 || c.Stale != 1 {
		t.Errorf("counts %+v: want 1 stale, 1 critical", c)
	}
	if got := ExitCode([]Row{{Source: "cursor", Subject: "w", StatusHint: "caught_up", Severity: s("critical")}}); got != ExitProblem {
		t.Errorf("severity critical: exit %d, want 3", got)
	}
	if got := ExitCode([]Row{row("heartbeat", "p", nil, now, n(900), nil, nil, nil, "paused")}); got != ExitOK {
		t.Errorf("paused executor: exit %d, want 0", got)
	}
}

// Rule: the table marks problem rows and the JSON parses with the same verdict.
func TestRender(t *testing.T) {
	rows := []Row{
		row("heartbeat", "fresh-one", nil, time.Now(), n(1), nil, nil, nil, "fresh"),
		row("heartbeat", "stale-one", nil, time.Now(), n(900), nil, nil, nil, "stale"),
	}
	var tb bytes.Buffer
	if err := RenderTable(&tb, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	if !strings.HasPrefix(lines[2], "!") || !strings.Contains(lines[2], "stale-one") || strings.HasPrefix(lines[1], "!") {
		t.Fatalf("table:\n%s", tb.String())
	}
	var jb bytes.Buffer
	if err := RenderJSON(&jb, rows); err != nil {
		t.Fatal(err)
	}
	var got struct {
		OK     bool
		Counts Counts
		Rows   []map[string]any
	}
	if err := json.Unmarshal(jb.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Counts.Stale != 1 || len(got.Rows) != 2 {
		t.Fatalf("%+v", got)
	}
}

// Rule: a fresh executor that reports status error is a problem (the view gives a fresh
// heartbeat a severity only then), and so is a pause older than the paused grace; a pause
// inside it, a pause with the rule off (grace 0) and a pause whose age the view does not
// say are not.
func TestErrorStatusAndPausedTooLong(t *testing.T) {
	now := time.Now()
	erroring := row("heartbeat", "e", nil, now, n(5), nil, nil, nil, "fresh")
	erroring.Severity = s("warning")
	if got := Problem(erroring); got != "error_status" {
		t.Errorf("a fresh executor with a severity: problem %q, want error_status", got)
	}
	paused := func(seconds *int64) Row {
		r := row("heartbeat", "p", nil, now, n(90000), nil, nil, nil, "paused")
		d := map[string]any{"status": "ok", "paused_seconds": seconds}
		r.Detail, _ = json.Marshal(d)
		return r
	}
	rules := Rules{GatedGrace: DefaultGatedGrace, PausedGrace: DefaultPausedGrace}
	for name, c := range map[string]struct {
		r     Row
		rules Rules
		want  string
	}{
		"paused 25 h, grace 24 h": {paused(n(90000)), rules, "paused_too_long"},
		"paused 1 h, grace 24 h":  {paused(n(3600)), rules, ""},
		"paused 25 h, rule off":   {paused(n(90000)), Rules{GatedGrace: DefaultGatedGrace}, ""},
		"paused, age not given":   {paused(nil), rules, ""},
	} {
		if got := c.rules.Problem(c.r); got != c.want {
			t.Errorf("%s: problem %q, want %q", name, got, c.want)
		}
	}
	if c := rules.Count([]Row{erroring, paused(n(90000))}); c.ErrorStatus != 1 || c.PausedTooLong != 1 {
		t.Errorf("counts %+v: want 1 error_status, 1 paused_too_long", c)
	}
}

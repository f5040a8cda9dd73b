package health

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var cols = []string{"source", "subject", "domain", "last_seen_at", "age_seconds", "events_seen", "attempts_written", "dead_lettered", "status_hint"}

func row(vals ...any) Row {
	r := Row{Columns: cols, Values: map[string]any{}}
	for i, c := range cols {
		r.Values[c] = vals[i]
	}
	return r
}

// Rule: stale, critical and open dead-letter rows make `health` exit 3; fresh rows exit 0.
func TestExitCode(t *testing.T) {
	now := time.Now()
	fresh := row("heartbeat", "a", nil, now, int64(1), nil, nil, nil, "fresh")
	cursor := row("cursor", "iu_outbound_default", "iu", now, int64(2), int64(10), int64(10), int64(0), nil)
	if got := ExitCode([]Row{fresh, cursor}); got != ExitOK {
		t.Fatalf("fresh rows: exit %d", got)
	}
	for name, bad := range map[string]Row{
		"stale":       row("heartbeat", "b", nil, now, int64(900), nil, nil, nil, "stale"),
		"critical":    row("heartbeat", "c", nil, now, int64(900), nil, nil, nil, "critical"),
		"dead letter": row("dead_letter_event", "iu", "iu", now, nil, nil, nil, int64(3), "open"),
	} {
		if got := ExitCode([]Row{fresh, bad}); got != ExitProblem {
			t.Errorf("%s: exit %d, want 3", name, got)
		}
	}
	if got := ExitCode([]Row{row("heartbeat", "p", nil, now, int64(900), nil, nil, nil, "paused")}); got != ExitOK {
		t.Errorf("paused executor: exit %d, want 0", got)
	}
}

// Rule: the table marks problem rows and the JSON parses with the same verdict.
func TestRender(t *testing.T) {
	rows := []Row{
		row("heartbeat", "fresh-one", nil, time.Now(), int64(1), nil, nil, nil, "fresh"),
		row("heartbeat", "stale-one", nil, time.Now(), int64(900), nil, nil, nil, "stale"),
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

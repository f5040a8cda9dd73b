package tests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// The payload limits, as the README documents them: every stored or signalled payload is at
// most 65,536 bytes as text and nests at most 32 levels, and is refused (22023 by the
// functions, 23514 by the outbox's domain) before any walk of it.
const (
	payloadMaxBytes = 65536
	payloadMaxDepth = 32
	// callMemoryBudget is the most backend memory any one call of the package may use, on
	// any input.
	callMemoryBudget = 64 << 20
)

// nested wraps leaf in depth objects {"a": ...}.
func nested(depth int, leaf string) string {
	return strings.Repeat(`{"a":`, depth) + leaf + strings.Repeat("}", depth)
}

// nestedArrays wraps leaf in depth arrays.
func nestedArrays(depth int, leaf string) string {
	return strings.Repeat("[", depth) + leaf + strings.Repeat("]", depth)
}

// Rule: a payload's size and depth are bounded, at the documented limits exactly, and the
// bound is the first thing tested: a payload one byte or one level over is refused with
// 22023 naming the limit, one at the limit is accepted. Keys that merely look like denied
// ones are clean (personal-data is not personal_data; a key that quotes "token" is not
// token).
func TestPayloadBounds_AtTheLimits(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := db.Conn(t)
	cx := ctx(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type, description) VALUES ('iu', 'bounds', 'test')`)

	// {"a": "xx..."} prints as itself (jsonb's text form), 9 bytes around the string.
	n := payloadMaxBytes - 9
	atSize := fmt.Sprintf(`{"a": "%s"}`, strings.Repeat("x", n))
	overSize := fmt.Sprintf(`{"a": "%s"}`, strings.Repeat("x", n+1))

	emit := `SELECT fn_iu_emit_event('iu', 'bounds', 's', 'standard', 'info', NULL, NULL, $1::jsonb)`
	accepted := map[string]string{
		"exactly the size limit":             atSize,
		"exactly the depth limit, objects":   nested(payloadMaxDepth-1, `{"b": 1}`),
		"exactly the depth limit, arrays":    `{"a": ` + nestedArrays(payloadMaxDepth-1, "1") + `}`,
		"personal-data is not personal_data": `{"personal-data": 1, "personalXdata": 2}`,
		"a key quoting a denied key":         `{"say \"token": 1, "x": "a \"token\": b", "tokens": 2}`,
	}
	for name, p := range accepted {
		if _, err := c.Exec(cx, emit, p); err != nil {
			t.Errorf("%s: emit refused a payload within the limits: %v", name, err)
		}
		if _, err := c.Exec(cx, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
		                          VALUES ('iu', 'bounds', 's', $1::jsonb)`, p); err != nil {
			t.Errorf("%s: the outbox refused a payload within the limits: %v", name, err)
		}
	}
	refused := []struct{ name, payload, message string }{
		{"one byte over the size limit", overSize, fmt.Sprintf("is %d bytes as text, at most %d allowed", payloadMaxBytes+1, payloadMaxBytes)},
		{"one level over, objects", nested(payloadMaxDepth, `{"b": 1}`), "nests deeper than 32 levels"},
		{"one level over, arrays", `{"a": ` + nestedArrays(payloadMaxDepth, "1") + `}`, "nests deeper than 32 levels"},
		{"a denied key at the bottom of the limit", nested(payloadMaxDepth-1, `{"Token": 1}`), "carries denylisted keys at $" + strings.Repeat(".a", payloadMaxDepth-1) + ".Token"},
	}
	for _, r := range refused {
		_, err := c.Exec(cx, emit, r.payload)
		if e := requireSQLState(t, err, "22023"); !strings.Contains(e.Message, "fn_iu_emit_event: p_safe_payload "+r.message) {
			t.Errorf("%s: emit's refusal says %q, want it to say %q", r.name, e.Message, r.message)
		}
		_, err = c.Exec(cx, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
		                      VALUES ('iu', 'bounds', 's', $1::jsonb)`, r.payload)
		if e := requireSQLState(t, err, "23514"); e.ConstraintName != "event_outbox_safe_payload_hygiene" {
			t.Errorf("%s: the outbox refused it by %q, want event_outbox_safe_payload_hygiene", r.name, e.ConstraintName)
		}
	}

	// One level over, by objects, arrays and an empty innermost container.
	for _, p := range []string{`{"a": ` + nestedArrays(payloadMaxDepth, "1") + `}`, nested(payloadMaxDepth+1, "1"), `{"a": ` + nestedArrays(payloadMaxDepth, "[]") + `}`} {
		_, err := c.Exec(cx, emit, p)
		if e := requireSQLState(t, err, "22023"); !strings.Contains(e.Message, "nests deeper than 32 levels") {
			t.Errorf("%s: emit's refusal says %q, want the depth limit", p, e.Message)
		}
	}
}

// Rule: no call of the package uses more than 64 MB of backend memory on any payload. A
// payload's size and depth are refused before anything walks it, and the hygiene test is
// linear in the payload's size. Before, one 60 kB payload nested 10,000 levels deep grew a
// backend to 24 GB through any of these calls (the key walk copied every subtree once per
// level above it) until the kernel killed it and PostgreSQL restarted every session.
//
// The cluster is private and capped (1 GiB of address space per process), so a regression
// fails this test with "out of memory" instead of endangering the machine; each call runs
// in a fresh backend whose peak resident memory (VmHWM) is read from /proc.
func TestPayloadBounds_NoCallUsesMoreThan64MB(t *testing.T) {
	t.Parallel()
	cx := ctx(t)
	srv, err := pgtest.StartLocalWith(cx, "", pgtest.LocalOptions{
		Settings:          []string{"shared_buffers=32MB", "max_connections=20"},
		AddressSpaceBytes: 1 << 30,
	})
	if err != nil {
		pgtest.Unavailable(t, "starting a private, memory-capped cluster: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	h, err := pgtest.NewHarness(cx, pgtest.Options{SkipContainer: true,
		Env: func(k string) string {
			if k == "TEST_DATABASE_URL" {
				return srv.AdminURL
			}
			return ""
		}})
	if err != nil {
		t.Fatalf("harness on the capped cluster: %v", err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	db := h.NewDBOn(t, true)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type, description) VALUES ('iu', 'bounds', 'test')`)
	db.Exec(t, `SELECT fn_queue_heartbeat_register('memtest', 'external_worker', '{iu}', 60, 300, 'test')`)
	db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ('queue.heartbeat.enabled', 'true')
	            ON CONFLICT (key) DO UPDATE SET value = 'true'`)

	// Each payload's clean key-filled bulk, near the limit: 64 kB of keys, then 32 levels
	// with a denied key at each (the explanation's walk at its largest).
	var wide strings.Builder
	wide.WriteString("{")
	for i := 0; wide.Len() < payloadMaxBytes-200; i++ {
		if i > 0 {
			wide.WriteString(", ")
		}
		fmt.Fprintf(&wide, `"k%d": %d`, i, i)
	}
	wide.WriteString("}")
	var deepDenied strings.Builder
	for i := 0; i < payloadMaxDepth-1; i++ {
		fmt.Fprintf(&deepDenied, `{"token": "%s", "a":`, strings.Repeat("y", 1500))
	}
	deepDenied.WriteString(`{"token": 1}` + strings.Repeat("}", payloadMaxDepth-1))

	payloads := map[string]string{
		"10,000 levels, a denied key at the bottom": nested(10000, `{"token": 1}`),
		"10,000 levels, clean but for a look-alike": nested(10000, `{"personal-data": 1}`),
		"10,000 nested arrays":                      `{"a": ` + nestedArrays(10000, "1") + `}`,
		"64 kB of keys, clean":                      wide.String(),
		"32 levels, a denied key at each":           deepDenied.String(),
		"1 MB string":                               `{"a": "` + strings.Repeat("z", 1<<20) + `"}`,
	}
	calls := map[string]string{
		"fn_iu_emit_event":         `SELECT fn_iu_emit_event('iu', 'bounds', 's', 'standard', 'info', NULL, NULL, $1::jsonb)`,
		"direct INSERT":            `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload) VALUES ('iu', 'bounds', 's', $1::jsonb)`,
		"fn_queue_heartbeat_write": `SELECT fn_queue_heartbeat_write('memtest', $1::jsonb, 'test')`,
		"fn_queue_heartbeat_tick":  `SELECT fn_queue_heartbeat_tick('memtest', 'external_worker', 'ok', $1::jsonb)`,
		"fn_cut_heartbeat_ping":    `SELECT fn_cut_heartbeat_ping('memtest', 'external_worker', 'ok', $1::jsonb)`,
		"fn_job_enqueue":           `SELECT fn_job_enqueue('memtest', 'iu', $1::jsonb)`,
		"fn_job_enqueue_many":      `SELECT fn_job_enqueue_many('memtest', 'iu', jsonb_build_array($1::jsonb))`,
	}
	for pname, payload := range payloads {
		for cname, sql := range calls {
			t.Run(cname+"/"+pname, func(t *testing.T) {
				used, err := backendPeakDuring(t, db, sql, payload)
				t.Logf("backend grew by %.1f MB", float64(used)/(1<<20))
				if err != nil {
					if pe := pgErr(err); pe == nil || (pe.Code != "22023" && pe.Code != "23514") {
						t.Errorf("want the payload accepted or refused with 22023/23514, got %v", err)
					}
				} else if pname != "64 kB of keys, clean" {
					t.Errorf("the payload was accepted, want it refused")
				}
				if used > callMemoryBudget {
					t.Errorf("the call grew its backend by %d MB, more than the %d MB any call may use",
						used>>20, callMemoryBudget>>20)
				}
			})
		}
	}
}

// backendPeakDuring runs sql with one argument in a fresh backend and returns how far the
// backend's peak resident memory rose above what it held before the call.
func backendPeakDuring(t *testing.T, db *pgtest.DB, sql, arg string) (int64, error) {
	t.Helper()
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := db.Conn(t)
	var pid int
	if err := c.QueryRow(cx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	before := procStatusKB(t, pid, "VmRSS")
	_, callErr := c.Exec(cx, sql, pgx.QueryExecModeExec, arg)
	peak := procStatusKB(t, pid, "VmHWM")
	return (peak - before) << 10, callErr
}

// procStatusKB reads one kB figure of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the backend's memory (the cluster is local): %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parsing %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

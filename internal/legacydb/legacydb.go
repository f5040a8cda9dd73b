// Package legacydb builds the first generation's production database (the seeds' database
// that adoption takes over: tests/adopt/testdata/legacy.sql and its variants) and drives
// its legacy producer while something else happens, timing every call. The adoption tests
// (tests/adopt) and the adoption benchmark (bench/adopt) share it.
package legacydb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Testdata is the directory of legacy.sql and variants/.
func Testdata() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tests", "adopt", "testdata")
}

// VariantFile is the path of a variant ("extra_columns" or "extra_columns.sql").
func VariantFile(name string) string {
	return filepath.Join(Testdata(), "variants", strings.TrimSuffix(name, ".sql")+".sql")
}

// Load builds the legacy database with rows event_outbox rows into the (empty) database at
// url with psql, then applies the variants in order (a base_* variant replaces the
// fixture's CREATE TABLE event_outbox instead). Returns how long legacy.sql itself took.
func Load(ctx context.Context, url string, rows int, variants ...string) (time.Duration, error) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		return 0, fmt.Errorf("psql is needed to load the legacy fixture: %w", err)
	}
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "rows=" + strconv.Itoa(rows)}
	var after []string
	for _, v := range variants {
		f := VariantFile(v)
		if _, err := os.Stat(f); err != nil {
			return 0, fmt.Errorf("no variant %s: %w", v, err)
		}
		if strings.HasPrefix(filepath.Base(f), "base_") {
			args = append(args, "-v", "outbox_ddl="+f)
		} else {
			after = append(after, f)
		}
	}
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, args...)
		cmd.Env = append(os.Environ(), "PGOPTIONS=", "PSQLRC=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("psql %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	start := time.Now()
	if err := run(append(args, "-f", filepath.Join(Testdata(), "legacy.sql"), "-d", url)...); err != nil {
		return 0, err
	}
	took := time.Since(start)
	for _, f := range after {
		if err := run("-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", f, "-d", url); err != nil {
			return took, err
		}
	}
	return took, nil
}

// Producers insert into event_outbox as the legacy producer login does: alternately a
// direct INSERT with its old column list (it may INSERT, not SELECT: no RETURNING) and the
// positional fn_iu_emit_event, each call in its own transaction and timed, until Finish.
// Every event carries safe_payload.n, a number unique to the call, so the events of the
// calls that succeeded can be found afterwards.
type Producers struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	t0   time.Time
	res  Result
}

// Result is what the producers saw.
type Result struct {
	Ns        []int           // safe_payload.n of every call that succeeded
	Errs      []error         // every call that failed
	Latencies []time.Duration // every call's
	Max       time.Duration   // the longest call
	MaxAt     time.Duration   // when it started, after Start
}

// Calls is the number of calls made.
func (r Result) Calls() int { return len(r.Latencies) }

// Quantile is the q-quantile of the calls' latencies (0 when there were none).
func (r Result) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), r.Latencies...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[int(q*float64(len(l)-1))]
}

// Start runs one producer per connection. Each stops 10 calls after Finish is called, and
// after 200,000 calls at most.
func Start(conns []*pgx.Conn) *Producers {
	p := &Producers{stop: make(chan struct{}), t0: time.Now()}
	for i, c := range conns {
		p.wg.Add(1)
		go p.run(c, i)
	}
	return p
}

func (p *Producers) run(c *pgx.Conn, who int) {
	defer p.wg.Done()
	after := -1
	for i := 0; i < 200_000 && after != 0; i++ {
		select {
		case <-p.stop:
			if after < 0 {
				after = 10
			}
		default:
		}
		if after > 0 {
			after--
		}
		n := who*1_000_000 + i
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		start := time.Now()
		var err error
		if i%2 == 0 {
			_, err = c.Exec(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
			                      VALUES ('iu', 'unit_version_published', 'cut', jsonb_build_object('unit_id', 'U-adopt', 'n', $1::int))`, n)
		} else {
			var id string
			err = c.QueryRow(ctx, `SELECT fn_iu_emit_event('iu', 'unit_cut_completed', 'cut', 'standard', 'info', 'cut_unit', 'U-adopt',
			                                               jsonb_build_object('n', $1::int))::text`, n).Scan(&id)
		}
		took := time.Since(start)
		cancel()
		p.mu.Lock()
		p.res.Latencies = append(p.res.Latencies, took)
		if err != nil {
			p.res.Errs = append(p.res.Errs, fmt.Errorf("producer %d call %d: %w", who, i, err))
		} else {
			p.res.Ns = append(p.res.Ns, n)
		}
		if took > p.res.Max {
			p.res.Max, p.res.MaxAt = took, start.Sub(p.t0)
		}
		p.mu.Unlock()
	}
}

// Finish stops the producers, waits for them, and returns what they saw.
func (p *Producers) Finish() Result {
	close(p.stop)
	p.wg.Wait()
	return p.res
}

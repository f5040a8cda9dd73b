package health

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Exit statuses of the health command.
const (
	ExitOK      = 0
	ExitDBError = 1
	ExitProblem = 3
)

// Querier is what Load needs (a pool, a connection or a transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Row is one v_queue_health row: the view's columns in order and their values, decoded
// into JSON-friendly Go values (string, int64, float64, bool, time.Time, nil).
type Row struct {
	Columns []string
	Values  map[string]any
}

// Load reads the whole view, in the view's row order.
func Load(ctx context.Context, q Querier) ([]Row, error) {
	rows, err := q.Query(ctx, "SELECT * FROM v_queue_health")
	if err != nil {
		return nil, fmt.Errorf("reading v_queue_health: %w", err)
	}
	defer rows.Close()
	var cols []string
	for _, fd := range rows.FieldDescriptions() {
		cols = append(cols, fd.Name)
	}
	var out []Row
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, fmt.Errorf("decoding v_queue_health row: %w", err)
		}
		r := Row{Columns: cols, Values: make(map[string]any, len(cols))}
		for i, c := range cols {
			r.Values[c] = normalize(vals[i])
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading v_queue_health: %w", err)
	}
	return out, nil
}

func normalize(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, float64, time.Time:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case float32:
		return float64(x)
	case pgtype.Numeric:
		if !x.Valid {
			return nil
		}
		f, err := x.Float64Value()
		if err != nil || !f.Valid {
			return nil
		}
		if x.Exp >= 0 || isInt(f.Float64) {
			return int64(f.Float64)
		}
		return f.Float64
	case *big.Int:
		return x.Int64()
	case []any, map[string]any:
		return x
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

func isInt(f float64) bool { return f == float64(int64(f)) }

// Str returns a column as text ("" when NULL or absent).
func (r Row) Str(col string) string {
	v, ok := r.Values[col]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return format(v)
}

// Number returns a numeric column and whether it held a number.
func (r Row) Number(col string) (float64, bool) {
	switch x := r.Values[col].(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// Problem says why a row is a problem ("" when it is not): stale, critical, or open dead letters.
func Problem(r Row) string {
	hint := strings.ToLower(r.Str("status_hint"))
	switch {
	case hint == "stale" || hint == "critical":
		return hint
	case strings.EqualFold(r.Str("severity"), "critical"):
		return "critical"
	case strings.HasPrefix(r.Str("source"), "dead_letter"):
		if n, ok := r.Number("dead_lettered"); !ok || n > 0 || hint == "open" {
			return "open_dead_letters"
		}
	}
	return ""
}

// ExitCode is 3 when any row is a problem, else 0.
func ExitCode(rows []Row) int {
	for _, r := range rows {
		if Problem(r) != "" {
			return ExitProblem
		}
	}
	return ExitOK
}

// Counts summarizes rows: total, stale, critical, open dead-letter rows.
type Counts struct {
	Rows            int `json:"rows"`
	Stale           int `json:"stale"`
	Critical        int `json:"critical"`
	OpenDeadLetters int `json:"open_dead_letter_rows"`
}

// Count tallies the problems.
func Count(rows []Row) Counts {
	c := Counts{Rows: len(rows)}
	for _, r := range rows {
		switch Problem(r) {
		case "stale":
			c.Stale++
		case "open_dead_letters":
			c.OpenDeadLetters++
		}
		if strings.EqualFold(r.Str("status_hint"), "critical") || strings.EqualFold(r.Str("severity"), "critical") {
			c.Critical++
		}
	}
	return c
}

// RenderJSON writes {"ok":bool,"counts":{...},"rows":[{column: value...}]}.
func RenderJSON(w io.Writer, rows []Row) error {
	type out struct {
		OK     bool             `json:"ok"`
		Counts Counts           `json:"counts"`
		Rows   []map[string]any `json:"rows"`
	}
	o := out{OK: ExitCode(rows) == ExitOK, Counts: Count(rows), Rows: []map[string]any{}}
	for _, r := range rows {
		m := make(map[string]any, len(r.Values)+1)
		for k, v := range r.Values {
			m[k] = v
		}
		m["problem"] = Problem(r)
		o.Rows = append(o.Rows, m)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// RenderTable writes an aligned table, one line per row; a problem row starts with "!"
// and names its problem in the last column. A summary line follows.
func RenderTable(w io.Writer, rows []Row) error {
	var cols []string
	if len(rows) > 0 {
		for _, c := range rows[0].Columns {
			if !structured(rows, c) {
				cols = append(cols, c) // jsonb columns (detail) are for --json
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{" "}
	for _, c := range cols {
		head = append(head, strings.ToUpper(c))
	}
	head = append(head, "PROBLEM")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		mark := " "
		p := Problem(r)
		if p != "" {
			mark = "!"
		}
		line := []string{mark}
		for _, c := range cols {
			s := r.Str(c)
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
	c := Count(rows)
	verdict := "OK"
	if ExitCode(rows) != ExitOK {
		verdict = "ATTENTION"
	}
	_, err := fmt.Fprintf(w, "\n%s: %d rows, %d stale, %d critical, %d with open dead letters\n",
		verdict, c.Rows, c.Stale, c.Critical, c.OpenDeadLetters)
	return err
}

func format(v any) string {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05Z")
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case []any, map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// structured reports whether a column holds JSON objects or arrays in any row.
func structured(rows []Row, col string) bool {
	for _, r := range rows {
		switch r.Values[col].(type) {
		case map[string]any, []any:
			return true
		}
	}
	return false
}

package migrate

import (
	"context"
	"database/sql"
	"fmt"

	sqlfiles "github.com/iu-core/event-worker/sql"
)

// Verdicts of the install plan.
const (
	VerdictCreate    = "create"
	VerdictAdopt     = "adopt"
	VerdictReplace   = "replace"
	VerdictKeep      = "keep"
	VerdictRefuse    = "refuse"
	VerdictInstalled = "installed"
)

// PlanLine is one object of the install plan: what `up` would do to it.
type PlanLine struct {
	Object  string `json:"object"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

// Plan runs the install plan (sql/adopt/plan.sql) in a transaction it rolls back, so
// nothing changes: the temporary function it creates goes with the rollback.
func (m *Migrator) Plan(ctx context.Context) ([]PlanLine, error) {
	tx, err := m.db.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("planning the install: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // the rollback is the point: the plan changes nothing
	if _, err := tx.ExecContext(ctx, sqlfiles.Plan()); err != nil {
		return nil, fmt.Errorf("planning the install: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT object, verdict, detail FROM pg_temp.iu_core_plan() ORDER BY ord`)
	if err != nil {
		return nil, fmt.Errorf("planning the install: %w", err)
	}
	defer rows.Close()
	var out []PlanLine
	for rows.Next() {
		var l PlanLine
		if err := rows.Scan(&l.Object, &l.Verdict, &l.Detail); err != nil {
			return nil, fmt.Errorf("reading the install plan: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Refusals are the plan's refused objects.
func Refusals(plan []PlanLine) []PlanLine {
	var out []PlanLine
	for _, l := range plan {
		if l.Verdict == VerdictRefuse {
			out = append(out, l)
		}
	}
	return out
}

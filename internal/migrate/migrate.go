package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"

	"github.com/iu-core/event-worker/internal/config"
	sqlfiles "github.com/iu-core/event-worker/sql"
)

// VersionTable is the package's own goose version table. The package never reads or writes
// goose_db_version, goose's default: a database whose own project migrates with goose keeps
// its history to itself (sharing it made the package's migrations look applied, or
// missing out of order). The plain goose CLI is pointed at it with -table.
const VersionTable = "iu_core_db_version"

// LockID is the session advisory lock the runner's migrations hold, its own rather than
// goose's default, so the package's migrations never wait behind (or block) a database's
// own goose runs. (The plain goose CLI takes no lock.)
const LockID int64 = 7431926640052176237

// PartitionTxidsSetting is the session setting the partitioning migration reads for the
// history partition width at install (a connection's runtime parameter, or
// PGOPTIONS='-c iu.partition_txids=N' for the goose CLI and psql). It wins over a
// retention.partition_txids already in dot_config; without either the width is 100,000,000.
const PartitionTxidsSetting = "iu.partition_txids"

// Migrator runs the embedded migrations against one database.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
}

// Open connects to dsn and prepares a goose Provider with a session locker.
// Close releases the connection.
func Open(dsn string) (*Migrator, error) {
	cfg, err := pgxConfig(dsn)
	if err != nil {
		return nil, err
	}
	return OpenConfig(cfg)
}

// OpenConfig is Open on a parsed connection configuration (the runner's migrate command
// sets its --connect-timeout on it). application_name defaults to iu-runner-migrate.
func OpenConfig(cfg *pgx.ConnConfig) (*Migrator, error) {
	return openFS(cfg, sqlfiles.Migrations())
}

// UpFS applies the goose migrations of another directory (a released version of
// sql/iu-core, for the upgrade tests) to dsn, recording them in the same version table
// under the same lock, so a later Up continues from them.
func UpFS(ctx context.Context, dsn string, migrations fs.FS) error {
	cfg, err := pgxConfig(dsn)
	if err != nil {
		return err
	}
	m, err := openFS(cfg, migrations)
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = m.Up(ctx)
	return err
}

// OpenFS is Open over another directory of migrations (the upgrade tests' made-up next
// release), with the same version table and lock.
func OpenFS(dsn string, migrations fs.FS) (*Migrator, error) {
	cfg, err := pgxConfig(dsn)
	if err != nil {
		return nil, err
	}
	return openFS(cfg, migrations)
}

func openFS(cfg *pgx.ConnConfig, migrations fs.FS) (*Migrator, error) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "iu-runner-migrate"
	}
	db := stdlib.OpenDB(*cfg)
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(LockID))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating goose session locker: %w", err)
	}
	store, err := database.NewStore(database.DialectPostgres, VersionTable)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating goose version store: %w", err)
	}
	p, err := goose.NewProvider("", db, migrations, goose.WithStore(store), goose.WithSessionLocker(locker))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating goose provider: %w", err)
	}
	return &Migrator{db: db, provider: p}, nil
}

// Close closes the database handle.
func (m *Migrator) Close() error { return m.db.Close() }

// Up applies every pending migration and returns the versions applied.
func (m *Migrator) Up(ctx context.Context) ([]*goose.MigrationResult, error) {
	res, err := m.provider.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("migrating up: %w", err)
	}
	return res, nil
}

// Down rolls back the most recent migration.
func (m *Migrator) Down(ctx context.Context) (*goose.MigrationResult, error) {
	res, err := m.provider.Down(ctx)
	if err != nil {
		return res, fmt.Errorf("migrating down: %w", err)
	}
	return res, nil
}

// DownTo rolls back to version (0 undoes everything).
func (m *Migrator) DownTo(ctx context.Context, version int64) ([]*goose.MigrationResult, error) {
	res, err := m.provider.DownTo(ctx, version)
	if err != nil {
		return res, fmt.Errorf("migrating down to %d: %w", version, err)
	}
	return res, nil
}

// Status lists every known migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]*goose.MigrationStatus, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading migration status: %w", err)
	}
	return st, nil
}

// Version returns the current database version (0 when nothing is applied).
func (m *Migrator) Version(ctx context.Context) (int64, error) {
	v, err := m.provider.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading database version: %w", err)
	}
	return v, nil
}

// Up is a convenience: open, migrate up, close.
func Up(ctx context.Context, dsn string) error {
	m, err := Open(dsn)
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = m.Up(ctx)
	return err
}

func pgxConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing database url: %w", config.RedactErr(err, dsn))
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "iu-runner-migrate"
	}
	return cfg, nil
}

// CheckRollback applies the rollback rule to a rollback from the current version down to
// version to, before any Down runs (iu_core.fn_iu_rollback_check: a Down never drops a
// table holding rows the package did not create, unless the session's iu.drop_history
// says so). A refusal is IU005, and the database is untouched; without it goose would
// undo the newer migrations first and stop half way. Nothing to check below version 2.
func (m *Migrator) CheckRollback(ctx context.Context, to int64) error {
	from, err := m.Version(ctx)
	if err != nil {
		return err
	}
	if from <= to {
		return nil
	}
	var present bool
	if err := m.db.QueryRowContext(ctx,
		`SELECT to_regprocedure('iu_core.fn_iu_rollback_check(integer, integer)') IS NOT NULL`).Scan(&present); err != nil {
		return fmt.Errorf("checking the rollback: %w", err)
	}
	if !present {
		return nil
	}
	if _, err := m.db.ExecContext(ctx, `SELECT iu_core.fn_iu_rollback_check($1, $2)`, from, to); err != nil {
		return fmt.Errorf("checking the rollback from %d to %d: %w", from, to, err)
	}
	return nil
}

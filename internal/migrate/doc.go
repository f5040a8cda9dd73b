// Package migrate applies the embedded iu-core goose migrations.
//
// It wraps a goose Provider over sqlfiles.Migrations() with goose's PostgreSQL session
// locker (a pg_advisory_lock held on one connection for the whole run), so two deploys
// that migrate the same database at once run one after the other instead of racing.
// The migrations are the same files the plain goose CLI applies from sql/iu-core. The
// version table is the package's own, iu_core_db_version (goose -table iu_core_db_version),
// never goose's default goose_db_version, which a database's own project may use: the two
// histories never mix, and the two tools can be mixed as long as the CLI names the table.
package migrate

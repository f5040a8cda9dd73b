// Package migrate applies the embedded iu-core goose migrations.
//
// It wraps a goose Provider over sqlfiles.Migrations() with goose's PostgreSQL session
// locker (a pg_advisory_lock held on one connection for the whole run), so two deploys
// that migrate the same database at once run one after the other instead of racing.
// The migrations are the same files the plain goose CLI applies from sql/iu-core, and the
// version table is goose's default, goose_db_version, so the two tools can be mixed.
package migrate

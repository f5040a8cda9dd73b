// Package sqlgen builds the generated goose migrations from the SQL sources.
//
// The SQL is kept as source, not as history. Every function and view is a file of its own
// under sql/functions/<area>/ (CREATE OR REPLACE, its header inside the body so \sf, the
// catalog and a dump keep it), grouped by area, each area with a README.md whose index
// names every file in reading order. Who may call what is one file, sql/grants.sql.
// Tables, types and roles are hand-written goose migrations in sql/iu-core, append-only
// from the first release.
//
// sql/generated.txt names the migrations generated from the sources and what each holds.
// Generate renders them: each source's statements (CREATE wrapped in goose's
// StatementBegin/End), EXECUTE revoked from PUBLIC next to every function, and a Down that
// drops what the Up created, in reverse; the grants migration's Down revokes each grant.
// `make generate` writes them into sql/iu-core and a test fails when a generated file
// differs from what its sources give, so sql/iu-core stays a complete goose directory
// that the plain goose CLI applies, and a function's history is its source file's git log.
package sqlgen

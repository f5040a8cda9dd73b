// Package sqlfiles embeds the iu-core SQL: the goose migrations (iu-core/*.sql) and the
// operator runtime scripts (iu-core/runtime/*.sql), so the iu-runner binary and the tests
// apply exactly the files the plain goose CLI applies.
package sqlfiles

import (
	"embed"
	"io/fs"
)

//go:embed iu-core/*.sql iu-core/runtime
var files embed.FS

// Migrations returns the goose migrations, rooted so that "001_iu_core_schema.sql" is at the top.
func Migrations() fs.FS {
	sub, err := fs.Sub(files, "iu-core")
	if err != nil {
		panic(err) // the path is a compile-time constant of the embed above
	}
	return sub
}

// Runtime returns the operator runtime scripts (060 activate, 070 verify, 080 disable).
func Runtime() fs.FS {
	sub, err := fs.Sub(files, "iu-core/runtime")
	if err != nil {
		panic(err)
	}
	return sub
}

//go:embed adopt/plan.sql
var plan string

// Plan is the install plan (sql/adopt/plan.sql): a statement that creates the temporary
// function pg_temp.iu_core_plan(), whose rows say what `up` would do to each object that
// exists (adopt, create, replace, keep, refuse). Migration 001 includes the same text.
func Plan() string { return plan }

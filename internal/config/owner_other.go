//go:build !unix

package config

import "io/fs"

// fileOwner is unknown off Unix: the stricter rule (no group access) applies.
func fileOwner(fs.FileInfo) (uint32, bool) { return 0, false }

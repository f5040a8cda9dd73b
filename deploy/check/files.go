package check

import (
	"os"
	"path/filepath"
	"runtime"
)

// Root is the repository's top directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Artifact is a path under the repository, or the one the environment variable names.
func Artifact(envVar string, rel ...string) string {
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	return filepath.Join(append([]string{Root()}, rel...)...)
}

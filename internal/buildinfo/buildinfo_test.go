package buildinfo

import (
	"runtime/debug"
	"testing"
)

// Rule: the version and the VCS revision come from the build info the toolchain stamped;
// what it did not stamp reads "unknown", never an empty string.
func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	got := fromBuildInfo(bi, Info{Version: "unknown", Revision: "unknown", Time: "unknown"})
	if got.Version != "v1.2.3" || got.Revision != "abc123" || !got.Modified || got.Time != "unknown" || got.GoVersion != "go1.26.8" {
		t.Fatalf("got %+v", got)
	}
	if r := Read(); r.Version == "" || r.Revision == "" || r.GoVersion == "" {
		t.Fatalf("Read left a field empty: %+v", r)
	}
}

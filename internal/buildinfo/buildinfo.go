// Package buildinfo says which build of iu-runner is running: the module version and the
// VCS revision the Go toolchain stamped into the binary (runtime/debug.ReadBuildInfo), for
// `iu-runner version` and the iu_runner_build_info metric.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info is what the binary knows about its own build. Fields it cannot know are "unknown".
type Info struct {
	Version   string // module version: v1.2.3, a pseudo-version, or (devel) for go build in a checkout
	Revision  string // VCS revision (vcs.revision), "unknown" when built without VCS stamping
	Time      string // commit time (vcs.time), RFC 3339
	Modified  bool   // the work tree had uncommitted changes (vcs.modified)
	GoVersion string // the toolchain that built it
}

// Set with -ldflags "-X github.com/iu-core/event-worker/internal/buildinfo.version=v1.2.3
// -X ...buildinfo.revision=<commit>" where the toolchain cannot stamp them (an image build
// whose context has no .git: deploy/Dockerfile passes them as build arguments). What the
// toolchain stamped wins.
var version, revision string

// Read returns the running binary's build information.
func Read() Info {
	info := Info{Version: "unknown", Revision: "unknown", Time: "unknown", GoVersion: runtime.Version()}
	if version != "" {
		info.Version = version
	}
	if revision != "" {
		info.Revision = revision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	return fromBuildInfo(bi, info)
}

func fromBuildInfo(bi *debug.BuildInfo, info Info) Info {
	if v := bi.Main.Version; v != "" && (v != "(devel)" || info.Version == "unknown") {
		info.Version = v
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

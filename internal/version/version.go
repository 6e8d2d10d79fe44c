// Package version reports what build of ns-doctor is running. Release
// builds set the variables with -ldflags -X; `go install ...@vX` builds fall
// back on the module version Go records in the binary.
package version

import (
	"runtime"
	"runtime/debug"
)

// Set by -ldflags "-X github.com/ns-doctor/ns-doctor/internal/version.version=..." etc.
var (
	version = ""
	commit  = ""
	date    = ""
)

// Info is what `kubectl ns-doctor version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version information, never empty fields: a
// plain `go build` reports version "dev" and commit/date "unknown".
func Get() Info {
	info := Info{
		Version: version, Commit: commit, BuildDate: date,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.time" && info.BuildDate == "":
				info.BuildDate = s.Value
			}
		}
	}
	fill(&info.Version, "dev")
	fill(&info.Commit, "unknown")
	fill(&info.BuildDate, "unknown")
	return info
}

func fill(s *string, fallback string) {
	if *s == "" {
		*s = fallback
	}
}

package plugin

import (
	"cmp"
	"runtime"
	"runtime/debug"
)

// Commit and BuildDate are set with -ldflags "-X .../plugin.Commit=... -X
// .../plugin.BuildDate=..." by a release build, as Version is.
var Commit, BuildDate string

// stamp is the commit and date a release build was given.
type stamp struct {
	commit, date string
	modified     bool // the checkout had uncommitted changes
}

// Build is what this binary knows of how it was built.
type Build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a checkout with uncommitted changes
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// BuildInfo is the build of this binary.
func BuildInfo() Build { return build }

// build is resolved from -ldflags, else releaseStamp (a variable, set
// before build is computed: docs/design/plugin.md#build-stamp).
var build = func() Build {
	given := releaseStamp
	if Commit != "" || BuildDate != "" {
		given = stamp{commit: Commit, date: BuildDate}
	}
	info, _ := debug.ReadBuildInfo()
	return resolveBuild(Version, given, info)
}()

// Version becomes the resolved version before any caller reads it, so that
// every place that prints it says what `cq-source-x version` says.
func init() { Version = build.Version }

// resolveBuild: the given version, commit and date win; otherwise the
// module's and the checkout's vcs.* settings; otherwise "development".
func resolveBuild(version string, given stamp, info *debug.BuildInfo) Build {
	b := Build{Version: version, Commit: given.commit, Date: given.date, Modified: given.modified, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		return b
	}
	if b.Version == "development" || b.Version == "" {
		b.Version = "development"
		if v := info.Main.Version; v != "" && v != "(devel)" {
			b.Version = v
		}
	}
	b.GoVersion = cmp.Or(info.GoVersion, b.GoVersion)
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = cmp.Or(b.Commit, s.Value)
		case "vcs.time":
			b.Date = cmp.Or(b.Date, s.Value)
		case "vcs.modified":
			b.Modified = b.Modified || s.Value == "true"
		}
	}
	return b
}

package plugin

import (
	"runtime/debug"
	"testing"
)

func TestVersionResolution(t *testing.T) {
	checkout := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/cq-source-x/cq-source-x", Version: "v0.0.0-20260102150405-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-01-02T15:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, c := range []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  Build
	}{
		{
			name:    "a release build: -ldflags win",
			version: "v1.2.3", commit: "abc", date: "2026-02-03T04:05:06Z",
			info: checkout,
			want: Build{Version: "v1.2.3", Commit: "abc", Date: "2026-02-03T04:05:06Z", Modified: true, GoVersion: "go1.26.0"},
		},
		{
			name:    "go install …@v1.4.0: the module version, no commit",
			version: "development",
			info:    &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/cq-source-x/cq-source-x", Version: "v1.4.0"}},
			want:    Build{Version: "v1.4.0", GoVersion: "go1.26.0"},
		},
		{
			name:    "a build in a checkout: the stamped version, the revision, its time, modified",
			version: "development",
			info:    checkout,
			want:    Build{Version: "v0.0.0-20260102150405-0123456789ab+dirty", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-01-02T15:04:05Z", Modified: true, GoVersion: "go1.26.0"},
		},
		{
			name:    "no module version, no VCS (go build -buildvcs=false, go test)",
			version: "development",
			info:    &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/cq-source-x/cq-source-x", Version: "(devel)"}},
			want:    Build{Version: "development", GoVersion: "go1.26.0"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := resolveBuild(c.version, stamp{commit: c.commit, date: c.date}, c.info)
			got.Platform = ""
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// The plugin the SDK serves, its info and the User-Agent carry the resolved
// version.
func TestThePluginCarriesTheResolvedVersion(t *testing.T) {
	if Version != BuildInfo().Version || Version == "" {
		t.Fatalf("Version %q, BuildInfo %+v", Version, BuildInfo())
	}
	if got := New().Version(); got != Version {
		t.Errorf("plugin version %q, want %q", got, Version)
	}
}

package cli

import (
	"cmp"
	"fmt"
	"io"

	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/spf13/cobra"
)

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Long: `Print the version, commit and build date of this binary: those the release
build gave it (` + Name + ` package, or -ldflags), otherwise what Go recorded when
it was built (the module version of 'go install …@vX', the commit of a build in
a checkout). The same version is in 'info', in the User-Agent of every API
request and in the metadata of every Parquet file the exporter writes.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return writeIndentedJSON(a.stdout, struct {
					xplugin.Build
					Plugin string `json:"plugin"`
				}{xplugin.BuildInfo(), xplugin.New().PackageAndVersion()})
			}
			_, err := io.WriteString(a.stdout, versionText())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// versionText is what `version` and --version print.
func versionText() string {
	b := xplugin.BuildInfo()
	commit := cmp.Or(b.Commit, "unknown (built without version control information)")
	if b.Commit != "" && b.Modified {
		commit += " (with uncommitted changes)"
	}
	return fmt.Sprintf("%s version %s\ncommit:  %s\nbuilt:   %s\ngo:      %s %s\nplugin:  %s\n",
		Name, b.Version, commit, cmp.Or(b.Date, "unknown"), b.GoVersion, b.Platform, xplugin.New().PackageAndVersion())
}

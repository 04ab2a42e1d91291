package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary (also --version); --json as an object",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if a.jsonOut {
				return a.printJSON(versionJSON())
			}
			fmt.Fprintln(a.out, "agentmesh "+version())
			return nil
		},
	}
}

// buildVersion is version --json: the line of version and its parts.
type buildVersion struct {
	Version  string `json:"version"`            // the line 'agentmesh version' prints, without "agentmesh "
	Module   string `json:"module"`             // the module version, "(devel)" from a checkout
	Revision string `json:"revision,omitempty"` // the VCS revision
	Time     string `json:"time,omitempty"`     // the revision's time
	Modified bool   `json:"modified"`           // the tree had local changes
	Go       string `json:"go"`
}

func versionJSON() buildVersion {
	v := buildVersion{Version: version(), Module: "(unknown)", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Go = info.Main.Version, info.GoVersion
	if v.Module == "" {
		v.Module = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// version describes this binary from its build information: the module
// version ("(devel)" for a build from a checkout), the VCS revision and
// whether the tree had local changes, and the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module information)"
	}
	return describeBuild(info)
}

func describeBuild(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += ", revision " + rev
		if modified {
			v += " with local changes"
		}
		if at != "" {
			v += " of " + at
		}
	}
	return v + ", " + info.GoVersion
}

package main

import (
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	for _, tc := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3, go1.26.0"},
		{debug.BuildInfo{GoVersion: "go1.26.0"}, "(devel), go1.26.0"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "5e01b54abcdef0123456789"}, {Key: "vcs.time", Value: "2025-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "(devel), revision 5e01b54abcde with local changes of 2025-01-02T03:04:05Z, go1.26.0"},
	} {
		if got := describeBuild(&tc.info); got != tc.want {
			t.Errorf("describeBuild = %q, want %q", got, tc.want)
		}
	}
}

// TestVersionBinary: --version and the version command print the same line,
// with the revision the Go tool stamped into the binary.
func TestVersionBinary(t *testing.T) {
	bin := agentBinary(t)
	flag, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(flag) != string(cmd) || !strings.HasPrefix(string(flag), "agentmesh ") || !strings.Contains(string(flag), "go1.") {
		t.Errorf("--version %q, version %q; want the same line naming the Go version", flag, cmd)
	}
	meta, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`vcs\.revision=([0-9a-f]{12})`).FindSubmatch(meta); m != nil && !strings.Contains(string(flag), "revision "+string(m[1])) {
		t.Errorf("--version %q lacks the stamped revision %s", flag, m[1])
	} else if m == nil {
		t.Logf("the binary has no VCS revision stamped (no git here?): %q", flag)
	}
}

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// sdkGo is the CloudEvents SDK's module: the codec's benchmarks and
// conformance tests compare against it, and the shipped binary must not
// carry it (issue 16).
const sdkGo = "github.com/cloudevents/sdk-go"

// TestBinaryDoesNotLinkCloudEventsSDK reads the module list Go stamps
// into the built binary (go version -m) and checks that sdk-go is not
// among the modules linked in.
func TestBinaryDoesNotLinkCloudEventsSDK(t *testing.T) {
	bin := agentBinary(t)
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/nats-io/nats.go") {
		t.Fatalf("go version -m lists no nats.go, so it did not read the module list:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, sdkGo) {
			t.Errorf("the agentmesh binary links %s: %s(keep it to _test.go files and benchmarks; `go list -deps ./cmd/agentmesh | grep cloudevents` shows who imports it)", sdkGo, strings.TrimSpace(line)+" ")
		}
	}
}

package resolvers_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// serverEnv makes the test binary run as a NATS server process: heap
// measurements of the client then exclude the server's own buffers.
const serverEnv = "AGENTMESH_RESOLVERS_TEST_SERVER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serverEnv); dir != "" {
		emb, err := embedded.Start(embedded.Options{StoreDir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(emb.URL())
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
		emb.Shutdown()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverProcess starts the test binary as a separate NATS server process and
// returns the mesh's resources on a connection to it.
func serverProcess(t testing.TB) *bus.Resources {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urlc := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		urlc <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var url string
	select {
	case url = <-urlc:
	case <-time.After(20 * time.Second):
		t.Fatal("server process did not print its URL within 20s")
	}
	if !strings.HasPrefix(url, "nats://") {
		t.Fatalf("server process printed %q, want a nats:// URL", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := bus.Provision(ctx, js, bus.MustNames(bus.DefaultPrefix), bus.ProvisionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

package bus_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
)

func TestStartEmbedded(t *testing.T) {
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	if !strings.HasPrefix(e.URL(), "nats://127.0.0.1:") {
		t.Errorf("URL() = %q", e.URL())
	}
	if !e.Server().JetStreamEnabled() {
		t.Error("JetStream is off")
	}
	nc, err := nats.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	e.Shutdown()
	e.Shutdown() // twice is fine
	if e.Server().Running() {
		t.Error("server still running after Shutdown")
	}
}

func TestStartEmbeddedTempStore(t *testing.T) {
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.Shutdown()
}

func TestStartEmbeddedPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = bus.StartEmbedded(bus.EmbeddedOptions{Port: port, StoreDir: t.TempDir()})
	if !errors.Is(err, bus.ErrPortInUse) {
		t.Fatalf("err = %v, want ErrPortInUse", err)
	}
	if !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("error %q does not name the address", err)
	}
}

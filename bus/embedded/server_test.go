package embedded_test

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus/embedded"
)

func TestStart(t *testing.T) {
	e, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	if !strings.HasPrefix(e.URL(), "nats://127.0.0.1:") {
		t.Errorf("URL() = %q", e.URL())
	}
	if !e.NATS().JetStreamEnabled() {
		t.Error("JetStream is off")
	}
	nc, err := nats.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	e.Shutdown()
	e.Shutdown() // twice is fine
	if e.NATS().Running() {
		t.Error("server still running after Shutdown")
	}
}

func TestStartTempStore(t *testing.T) {
	e, err := embedded.Start(embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Shutdown()
}

func TestStartPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = embedded.Start(embedded.Options{Port: port, StoreDir: t.TempDir()})
	if !errors.Is(err, embedded.ErrPortInUse) {
		t.Fatalf("err = %v, want ErrPortInUse", err)
	}
	if !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("error %q does not name the address", err)
	}
}

// With a monitoring port the server serves its own monitoring endpoint,
// the one prometheus-nats-exporter reads; a bad or taken port is refused
// up front with its value.
func TestStartMonitoring(t *testing.T) {
	e, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), HTTPPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	resp, err := http.Get(e.MonitorURL() + "/varz")
	if err != nil {
		t.Fatal(err)
	}
	var varz struct {
		ServerName string `json:"server_name"`
	}
	err = json.NewDecoder(resp.Body).Decode(&varz)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || varz.ServerName != "agentmesh" {
		t.Errorf("/varz: status %d, %+v, err %v", resp.StatusCode, varz, err)
	}

	off, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Shutdown()
	if off.MonitorURL() != "" {
		t.Errorf("MonitorURL without a monitoring port = %q, want empty", off.MonitorURL())
	}

	if _, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), HTTPPort: -2}); err == nil || !strings.Contains(err.Error(), "-2") {
		t.Errorf("HTTPPort -2: err = %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = embedded.Start(embedded.Options{StoreDir: t.TempDir(), HTTPPort: l.Addr().(*net.TCPAddr).Port})
	if !errors.Is(err, embedded.ErrPortInUse) || !strings.Contains(err.Error(), "monitoring port") {
		t.Errorf("taken monitoring port: err = %v", err)
	}
}

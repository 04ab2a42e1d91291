package bus_test

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// startAuthServer runs a plain server (no JetStream) with the given auth.
func startAuthServer(t *testing.T, configure func(*server.Options)) string {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true}
	configure(opts)
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("auth server not ready")
	}
	return s.ClientURL()
}

func TestConnectURL(t *testing.T) {
	srv := bustest.Start(t)
	nc, err := bus.ConnectOptions{URL: srv.URL(), Name: "test"}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !nc.IsConnected() {
		t.Fatal("not connected")
	}
	if got := nc.Opts.MaxReconnect; got != -1 {
		t.Errorf("MaxReconnect = %d, want -1 (forever)", got)
	}
}

func TestConnectUserPassword(t *testing.T) {
	url := startAuthServer(t, func(o *server.Options) { o.Username, o.Password = "alice", "s3cret" })
	nc, err := bus.ConnectOptions{URL: url, User: "alice", Password: "s3cret"}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	_, err = bus.ConnectOptions{URL: url, User: "alice", Password: "wrong"}.Connect(context.Background())
	if !errors.Is(err, bus.ErrAuth) {
		t.Fatalf("wrong password: err = %v, want ErrAuth", err)
	}
	if !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "NATS_USER") {
		t.Errorf("error %q should name the URL and the settings to check", err)
	}
}

func TestConnectToken(t *testing.T) {
	url := startAuthServer(t, func(o *server.Options) { o.Authorization = "tok-123" })
	nc, err := bus.ConnectOptions{URL: url, Token: "tok-123"}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if _, err := (bus.ConnectOptions{URL: url}).Connect(context.Background()); !errors.Is(err, bus.ErrAuth) {
		t.Fatalf("no token: err = %v, want ErrAuth", err)
	}
}

func TestConnectNoServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	url := "nats://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = bus.ConnectOptions{URL: url}.Connect(ctx)
	if !errors.Is(err, bus.ErrNoServer) {
		t.Fatalf("err = %v, want ErrNoServer", err)
	}
	for _, want := range []string{url, "agentmesh server", "--nats"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestConnectRedactsPassword(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	_, err := bus.ConnectOptions{URL: "nats://bob:hunter2@" + addr}.Connect(context.Background())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v should not show the password", err)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{
		"NATS_URL": "nats://h:1", "NATS_CREDS": "c", "NATS_NKEY": "n", "NATS_USER": "u",
		"NATS_PASSWORD": "p", "NATS_TOKEN": "t", "NATS_CA": "ca", "NATS_CERT": "cert", "NATS_KEY": "key",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	got := bus.OptionsFromEnv()
	want := bus.ConnectOptions{URL: "nats://h:1", CredsFile: "c", NKeySeedFile: "n", User: "u",
		Password: "p", Token: "t", TLSCA: "ca", TLSCert: "cert", TLSKey: "key"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OptionsFromEnv() = %+v, want %+v", got, want)
	}
}

// TestConnectRetriesUntilServerStarts: a process started before its server
// (as Compose may do) waits for it with back-off and says so on each retry.
func TestConnectRetriesUntilServerStarts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	started := make(chan *embedded.Server, 1)
	go func() {
		time.Sleep(800 * time.Millisecond)
		emb, err := embedded.Start(embedded.Options{Port: port, StoreDir: t.TempDir()})
		if err != nil {
			t.Error(err)
		}
		started <- emb
	}()
	t.Cleanup(func() {
		if emb := <-started; emb != nil {
			emb.Shutdown()
		}
	})
	var waits []time.Duration
	o := bus.ConnectOptions{URL: "nats://127.0.0.1:" + strconv.Itoa(port), RetryFor: 20 * time.Second,
		OnRetry: func(attempt int, wait time.Duration, err error) {
			if !errors.Is(err, bus.ErrNoServer) || attempt != len(waits)+1 {
				t.Errorf("retry %d: %v", attempt, err)
			}
			waits = append(waits, wait)
		}}
	nc, err := o.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if len(waits) < 2 || waits[1] != 2*waits[0] {
		t.Errorf("waits before the server came up: %v; want at least two, doubling", waits)
	}
}

func TestConnectRetryIsBounded(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "nats://" + l.Addr().String()
	l.Close()
	retries := 0
	start := time.Now()
	_, err := bus.ConnectOptions{URL: url, RetryFor: time.Second, OnRetry: func(int, time.Duration, error) { retries++ }}.Connect(context.Background())
	took := time.Since(start)
	if !errors.Is(err, bus.ErrNoServer) || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("err = %v, want ErrNoServer saying it gave up", err)
	}
	if took > 2*time.Second || retries < 2 {
		t.Errorf("took %s with %d retries; want within the 1s bound, retrying", took, retries)
	}
}

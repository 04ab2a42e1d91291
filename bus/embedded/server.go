// Package embedded runs a NATS server with JetStream inside the process:
// one node, a node of a cluster, or a whole mesh (Local: server, connection
// and provisioned streams and buckets). The agentmesh command, tests and
// single-process demos use it; agents and clients do not, so a program built
// on agents or client links no NATS server.
package embedded

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

const readyTimeout = 10 * time.Second

// Options configure an in-process NATS server with JetStream.
type Options struct {
	Host     string // default 127.0.0.1
	Port     int    // 0 picks a free port
	StoreDir string // JetStream data; default a temporary directory removed on Shutdown
	Logs     bool   // log to stderr
	// Name is the server's name ("agentmesh"); each node of a cluster
	// needs its own.
	Name    string
	Cluster ClusterOptions
	// HTTPPort serves the server's own monitoring endpoint (/varz, /jsz,
	// /connz, /healthz, ... what prometheus-nats-exporter and the nats CLI
	// read) on Host:HTTPPort, as nats-server's --http_port does: 0 off, -1
	// a free port.
	HTTPPort int
	// Configure, when set, adjusts the server's options before it starts
	// (security.Server.Configure turns on authentication and TLS).
	Configure func(*server.Options) error
}

const defaultServerName = "agentmesh"

// Server is a running in-process NATS server with JetStream.
type Server struct {
	srv      *server.Server
	tempDir  string
	stopOnce sync.Once
}

// Start starts the server and waits until it accepts connections.
func Start(opts Options) (*Server, error) {
	e := &Server{}
	sopts, err := e.serverOptions(opts)
	if err != nil {
		e.removeTemp()
		return nil, err
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		e.removeTemp()
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	if opts.Logs {
		srv.ConfigureLogger()
	}
	e.srv = srv
	srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		e.Shutdown()
		if opts.Port != 0 {
			if err := checkPortFree(sopts.Host, sopts.Port); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("%w: not accepting connections on %s after %s: run with logs on to see why", ErrServerNotReady, net.JoinHostPort(sopts.Host, strconv.Itoa(sopts.Port)), readyTimeout)
	}
	if !srv.JetStreamEnabled() {
		e.Shutdown()
		return nil, fmt.Errorf("%w: JetStream did not start (store dir %s): check the directory is writable", ErrServerNotReady, sopts.StoreDir)
	}
	return e, nil
}

// serverOptions checks opts and turns them into the server's options,
// making a temporary store directory (removed on Shutdown) when none is
// given.
func (e *Server) serverOptions(opts Options) (*server.Options, error) {
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if opts.HTTPPort < -1 || opts.HTTPPort > 65535 {
		return nil, fmt.Errorf("embedded NATS server: monitoring port %d: use 1 to 65535, -1 for a free port or 0 for none", opts.HTTPPort)
	}
	if opts.HTTPPort > 0 {
		if err := checkPortFree(host, opts.HTTPPort); err != nil {
			return nil, fmt.Errorf("monitoring port: %w", err)
		}
	}
	port := opts.Port
	if port < 0 {
		return nil, fmt.Errorf("embedded NATS server: port %d is negative: use 0 for a free port", port)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	} else if err := checkPortFree(host, port); err != nil {
		return nil, err
	}
	storeDir := opts.StoreDir
	if storeDir == "" {
		dir, err := os.MkdirTemp("", "agentmesh-nats-*")
		if err != nil {
			return nil, fmt.Errorf("embedded NATS server: temporary store dir: %w", err)
		}
		storeDir, e.tempDir = dir, dir
	}
	name := opts.Name
	if name == "" {
		name = defaultServerName
	}
	sopts := &server.Options{
		ServerName: name, Host: host, Port: port, JetStream: true, StoreDir: storeDir,
		NoSigs: true, NoLog: !opts.Logs, HTTPHost: host, HTTPPort: opts.HTTPPort,
	}
	if err := opts.Cluster.apply(sopts, opts.Name); err != nil {
		return nil, err
	}
	if opts.Configure != nil {
		if err := opts.Configure(sopts); err != nil {
			return nil, fmt.Errorf("embedded NATS server: %w", err)
		}
	}
	return sopts, nil
}

func checkPortFree(host string, port int) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: embedded NATS server cannot listen on %s (%v): stop what uses the port, pick another port, or use 0 for a free one", ErrPortInUse, addr, err)
	}
	return l.Close()
}

// URL returns the client URL, e.g. nats://127.0.0.1:4222.
func (e *Server) URL() string { return e.srv.ClientURL() }

// MonitorURL returns the base URL of the server's monitoring endpoint,
// e.g. http://127.0.0.1:8222, or "" when Options.HTTPPort was 0.
func (e *Server) MonitorURL() string {
	if a := e.srv.MonitorAddr(); a != nil {
		return "http://" + a.String()
	}
	return ""
}

// NATS returns the underlying nats-server.
func (e *Server) NATS() *server.Server { return e.srv }

// Shutdown stops the server, waits until it has stopped and removes the
// temporary store dir, if one was made. It is safe to call more than once.
func (e *Server) Shutdown() {
	if e == nil {
		return
	}
	e.stopOnce.Do(func() {
		if e.srv != nil {
			e.srv.Shutdown()
			e.srv.WaitForShutdown()
		}
		e.removeTemp()
	})
}

func (e *Server) removeTemp() {
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}

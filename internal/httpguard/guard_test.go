package httpguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func request(method, host, local string, header ...string) *http.Request {
	r := httptest.NewRequest(method, "http://"+host+"/api/chat", nil)
	r.Host = host
	if local != "" {
		addr, _ := net.ResolveTCPAddr("tcp", local)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}

func TestCheckHost(t *testing.T) {
	for _, c := range []struct {
		host, local string
		refused     bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", false},
		{"localhost:8080", "127.0.0.1:8080", false},
		{"LOCALHOST", "127.0.0.1:8080", false},
		{"[::1]:8080", "[::1]:8080", false},
		{"127.0.0.2", "127.0.0.1:8080", false},
		{"evil.example:8080", "127.0.0.1:8080", true},    // DNS rebinding
		{"evil.example", "[::1]:8080", true},             //
		{"10.0.0.5:8080", "127.0.0.1:8080", true},        // a loopback listener named by another address
		{"localhost.evil.example", "127.0.0.1:80", true}, //
		{"mesh.example.com", "10.0.0.5:8080", false},     // published on a network: the operator's proxy names it
		{"anything", "", false},                          // no listener known (a handler called directly)
	} {
		err := standard.CheckHost(request("GET", c.host, c.local))
		if (err != nil) != c.refused || (err != nil && !errors.Is(err, ErrForeignHost)) {
			t.Errorf("Host %q on %s: %v, want refused %v", c.host, c.local, err, c.refused)
		}
	}
}

func TestCheckOrigin(t *testing.T) {
	for _, c := range []struct {
		method  string
		header  []string
		refused bool
	}{
		{"POST", nil, false}, // a program: curl, the CLI
		{"POST", []string{"Sec-Fetch-Site", "same-origin"}, false},
		{"POST", []string{"Sec-Fetch-Site", "none"}, false},
		{"POST", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"POST", []string{"Sec-Fetch-Site", "same-site"}, true}, // another port of the same host
		{"POST", []string{"Origin", "http://127.0.0.1:8080"}, false},
		{"POST", []string{"Origin", "http://evil.example"}, true},
		{"POST", []string{"Origin", "null"}, true}, // a sandboxed frame or a data: page
		{"DELETE", []string{"Origin", "http://evil.example"}, true},
		{"GET", []string{"Sec-Fetch-Site", "cross-site"}, false}, // reads change nothing
	} {
		err := standard.CheckOrigin(request(c.method, "127.0.0.1:8080", "127.0.0.1:8080", c.header...))
		if (err != nil) != c.refused || (err != nil && !errors.Is(err, ErrCrossOrigin)) {
			t.Errorf("%s %v: %v, want refused %v", c.method, c.header, err, c.refused)
		}
	}
}

func TestHandler(t *testing.T) {
	served := 0
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, request("POST", "evil.example", "127.0.0.1:1"))
	w2 := httptest.NewRecorder()
	h.ServeHTTP(w2, request("POST", "127.0.0.1:1", "127.0.0.1:1", "Sec-Fetch-Site", "cross-site"))
	if w.Code != 403 || w2.Code != 403 || served != 0 {
		t.Fatalf("foreign host %d, cross-site %d, served %d times", w.Code, w2.Code, served)
	}
	h.ServeHTTP(httptest.NewRecorder(), request("POST", "localhost:1", "127.0.0.1:1", "Sec-Fetch-Site", "same-origin"))
	if served != 1 {
		t.Fatal("a same-origin request was not served")
	}
}

// TestAllowedHosts checks a server reached through a proxy on this
// machine: its public name passes both checks, other names do not.
func TestAllowedHosts(t *testing.T) {
	g, err := New("mesh.example.com", "other.example:8443")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host    string
		header  []string
		refused error
	}{
		{"mesh.example.com", []string{"Origin", "https://mesh.example.com"}, nil},
		{"MESH.example.com:443", nil, nil},
		{"127.0.0.1:8080", []string{"Origin", "https://mesh.example.com"}, nil}, // a proxy that rewrites Host
		{"127.0.0.1:8080", []string{"Origin", "https://other.example:8443"}, nil},
		{"other.example", nil, nil},
		{"evil.example", nil, ErrForeignHost},
		{"mesh.example.com", []string{"Origin", "https://evil.example"}, ErrCrossOrigin},
		{"mesh.example.com", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, ErrCrossOrigin},
	} {
		err := g.Check(request("POST", c.host, "127.0.0.1:8080", c.header...))
		if (err == nil) != (c.refused == nil) || (err != nil && !errors.Is(err, c.refused)) {
			t.Errorf("Host %q %v: %v, want %v", c.host, c.header, err, c.refused)
		}
	}
	for _, bad := range []string{"https://mesh.example.com", "mesh.example.com/x", "", "a b"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) took a host that is no host name", bad)
		}
	}
}

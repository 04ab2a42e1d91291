package httpguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

var (
	// ErrForeignHost reports a request that reached a loopback address
	// naming another host: a page whose DNS name was rebound to 127.0.0.1.
	ErrForeignHost = errors.New("httpguard: foreign Host")
	// ErrCrossOrigin reports a browser's state-changing request sent from
	// a page of another origin.
	ErrCrossOrigin = errors.New("httpguard: cross-origin request")
)

// Guard makes the checks. The zero Guard is not usable; see New.
type Guard struct {
	hosts map[string]bool // more names a loopback server is reached by (lower case, no port)
	// cross is the standard library's check of Sec-Fetch-Site, falling
	// back to Origin against Host: it lets GET, HEAD and OPTIONS through,
	// and requests that carry neither header (those are not from a
	// browser).
	cross *http.CrossOriginProtection
}

// New returns a Guard that also takes the names of hosts (a host name, or
// host:port: how users reach the server through a proxy on this machine)
// as the Host of a request that reached a loopback address, and their
// http and https origins as a browser page's own.
func New(hosts ...string) (*Guard, error) {
	g := &Guard{hosts: map[string]bool{}, cross: http.NewCrossOriginProtection()}
	for _, h := range hosts {
		name, _, err := net.SplitHostPort(h)
		if err != nil {
			name = h
		}
		if name == "" || strings.ContainsAny(h, "/ \t@?#") {
			return nil, fmt.Errorf("httpguard: host %q: give a host name or host:port as users reach the server (mesh.example.com), not a URL", h)
		}
		g.hosts[strings.ToLower(name)] = true
		for _, scheme := range []string{"http://", "https://"} {
			if err := g.cross.AddTrustedOrigin(scheme + h); err != nil {
				return nil, fmt.Errorf("httpguard: host %q: %w", h, err)
			}
		}
	}
	return g, nil
}

// standard is the Guard of the package's functions: loopback names only.
var standard, _ = New()

// CheckHost refuses a request that arrived on a loopback address but names
// a Host that is neither a loopback one (localhost, 127.0.0.0/8, ::1) nor
// one of g's hosts: a browser sends the page's own name, so a rebound DNS
// name shows here. A request that arrived on another address (a server
// published on a network, perhaps behind a proxy) is not checked. This is
// the check the MCP SDK makes for its streamable HTTP transport.
func (g *Guard) CheckHost(r *http.Request) error {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !IsLoopback(local.String()) || IsLoopback(r.Host) {
		return nil
	}
	name, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		name = r.Host
	}
	if g.hosts[strings.ToLower(name)] {
		return nil
	}
	return fmt.Errorf("%w: this server listens on %s and takes requests for localhost only, not for Host %q (a page whose name resolves here, DNS rebinding?); open it as http://%s, or have its operator allow the name",
		ErrForeignHost, local, clip(r.Host), local)
}

// CheckOrigin refuses a state-changing request (not GET, HEAD or OPTIONS)
// that a browser sent from a page of another origin: Sec-Fetch-Site is
// neither same-origin nor none, or, without it, Origin is neither the
// request's own scheme and Host nor one of g's hosts.
func (g *Guard) CheckOrigin(r *http.Request) error {
	if err := g.cross.Check(r); err != nil {
		from := r.Header.Get("Origin")
		if from == "" {
			from = "a page (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
		}
		return fmt.Errorf("%w: %s %s from %s is refused: state-changing requests are taken from this server's own pages and from programs (which send no Origin), not from other sites",
			ErrCrossOrigin, r.Method, r.URL.Path, clip(from))
	}
	return nil
}

// Check makes both checks.
func (g *Guard) Check(r *http.Request) error {
	if err := g.CheckHost(r); err != nil {
		return err
	}
	return g.CheckOrigin(r)
}

// Check makes both checks for a server reached by loopback names only.
func Check(r *http.Request) error { return standard.Check(r) }

// Handler serves h once Check passes (for loopback names only), refusing
// with 403 and the reason as plain text otherwise.
func Handler(h http.Handler) http.Handler { return standard.Handler(h) }

// Handler serves h once g.Check passes, refusing with 403 and the reason
// as plain text otherwise.
func (g *Guard) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := g.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether addr (host, host:port or [v6]:port) names
// this machine: localhost or a loopback IP.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// clip bounds a header value quoted in an error.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

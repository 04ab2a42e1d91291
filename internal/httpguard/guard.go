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

// crossOrigin is the standard library's check of Sec-Fetch-Site, falling
// back to Origin against Host: it lets GET, HEAD and OPTIONS through, and
// requests that carry neither header (those are not from a browser).
var crossOrigin = http.NewCrossOriginProtection()

// CheckHost refuses a request that arrived on a loopback address but names
// a Host that is not a loopback one (localhost, 127.0.0.0/8, ::1): a
// browser sends the page's own name, so a rebound DNS name shows here. A
// request that arrived on another address (a gateway published on a
// network, perhaps behind a proxy) is not checked. This is the check the
// MCP SDK makes for its streamable HTTP transport.
func CheckHost(r *http.Request) error {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !IsLoopback(local.String()) || IsLoopback(r.Host) {
		return nil
	}
	return fmt.Errorf("%w: this server listens on %s and takes requests for localhost only, not for Host %q (a page whose name resolves here, DNS rebinding?); open it as http://%s",
		ErrForeignHost, local, clip(r.Host), local)
}

// CheckOrigin refuses a state-changing request (not GET, HEAD or OPTIONS)
// that a browser sent from a page of another origin: Sec-Fetch-Site is
// neither same-origin nor none, or, without it, Origin is not the
// request's own scheme and Host.
func CheckOrigin(r *http.Request) error {
	if err := crossOrigin.Check(r); err != nil {
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
func Check(r *http.Request) error {
	if err := CheckHost(r); err != nil {
		return err
	}
	return CheckOrigin(r)
}

// Handler serves h once Check passes, refusing with 403 and the reason as
// plain text otherwise.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Check(r); err != nil {
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

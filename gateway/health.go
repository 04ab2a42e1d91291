package gateway

import (
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"
)

// handleHealthz answers 200 while the gateway serves: the liveness probe.
func (g *Gateway) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// handleReadyz answers 200 while the gateway's NATS connection is up, else
// 503 saying its state: the readiness probe (a gateway cut off from NATS
// answers every API request with an error).
func (g *Gateway) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if st := g.def.nc.Status(); st != nats.CONNECTED {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: nats: %s\n", st)
		return
	}
	fmt.Fprintln(w, "ok")
}

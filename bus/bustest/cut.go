package bustest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// StartCuttable is StartCluster whose last node reaches the others only
// through relays the test can cut (Isolate) and mend (Rejoin), as a
// network partition would, with no root and no namespaces: the node keeps
// running and serving its own clients, cut off from the rest. The other
// nodes route to each other directly, and every node advertises a route
// address nobody listens on, so no route goes around the relays.
func StartCuttable(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 2 {
		t.Fatalf("bustest: a cuttable cluster needs 2 nodes or more, not %d", n)
	}
	ports := FreePorts(t, n+1)
	nowhere := fmt.Sprintf("127.0.0.1:%d", ports[n]) // free: refuses connections
	direct := make([]string, n-1)
	for i := range direct {
		direct[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[i])
	}
	c := &Cluster{names: bus.MustNames(bus.DefaultPrefix)}
	var relayed []string
	for _, target := range direct {
		r := startRelay(t, target[len("nats://"):])
		c.relays = append(c.relays, r)
		relayed = append(relayed, "nats://"+r.ln.Addr().String())
	}
	for i := range n {
		routes := direct
		if i == n-1 {
			routes = relayed
		}
		emb, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Name: fmt.Sprintf("n%d", i+1),
			Cluster:   embedded.ClusterOptions{Name: "mesh", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: routes},
			Configure: func(o *server.Options) error { o.Cluster.Advertise = nowhere; return nil }})
		if err != nil {
			t.Fatalf("bustest: starting cluster node %d: %v", i+1, err)
		}
		t.Cleanup(emb.Shutdown)
		c.Nodes = append(c.Nodes, emb)
	}
	c.waitJetStream(t)
	return c
}

// Isolate cuts the last node of a cluster from StartCuttable off the
// others: its routes close and none opens again until Rejoin.
func (c *Cluster) Isolate(t testing.TB) {
	t.Helper()
	if len(c.relays) == 0 {
		t.Fatal("bustest: Isolate needs a cluster from StartCuttable")
	}
	for _, r := range c.relays {
		r.setCut(true)
	}
}

// Rejoin puts the node Isolate cut off back: its routes connect again.
func (c *Cluster) Rejoin(t testing.TB) {
	t.Helper()
	for _, r := range c.relays {
		r.setCut(false)
	}
}

// NodeConn returns a connection to node i alone (it never moves to
// another node), closed when the test ends.
func (c *Cluster) NodeConn(t testing.TB, i int) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.Nodes[i].URL(), nats.Name(fmt.Sprintf("%s n%d", t.Name(), i+1)), nats.IgnoreDiscoveredServers(),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("bustest: connecting to node n%d: %v", i+1, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// relay forwards TCP connections to target until it is cut: cutting closes
// the connections it carries and refuses new ones.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

func startRelay(t testing.TB, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bustest: a relay to %s: %v", target, err)
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		_ = ln.Close()
		r.setCut(true)
	})
	go r.serve()
	return r
}

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.carry(in)
	}
}

// carry joins in to a new connection to the target, both ways.
func (r *relay) carry(in net.Conn) {
	out, err := net.DialTimeout("tcp", r.target, 2*time.Second)
	if err != nil {
		_ = in.Close()
		return
	}
	if !r.track(in, out) {
		_ = in.Close()
		_ = out.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	_ = in.Close()
	_ = out.Close()
	<-done
	r.mu.Lock()
	delete(r.conns, in)
	delete(r.conns, out)
	r.mu.Unlock()
}

// track records a carried pair, or reports false while cut.
func (r *relay) track(conns ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		return false
	}
	for _, c := range conns {
		r.conns[c] = true
	}
	return true
}

func (r *relay) setCut(cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = cut
	if cut {
		for c := range r.conns {
			_ = c.Close()
		}
	}
}

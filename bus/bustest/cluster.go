package bustest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/internal/fixture"
)

// Cluster is a NATS cluster of embedded JetStream servers on loopback,
// owned by one test.
type Cluster struct {
	Nodes  []*embedded.Server
	names  bus.Names
	relays []*relay // StartCuttable: the last node's routes to the others
}

// FreePorts returns n TCP ports on 127.0.0.1 that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	var ls []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("bustest: a free port: %v", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// StartCluster starts n embedded JetStream servers (n1, n2, ...) routed to
// each other as the cluster "mesh", waits until JetStream has a meta
// leader, and shuts every node down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := FreePorts(t, n)
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	c := &Cluster{names: bus.MustNames(bus.DefaultPrefix)}
	for i := range n {
		emb, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Name: fmt.Sprintf("n%d", i+1),
			Cluster: embedded.ClusterOptions{Name: "mesh", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: routes}})
		if err != nil {
			t.Fatalf("bustest: starting cluster node %d: %v", i+1, err)
		}
		t.Cleanup(emb.Shutdown)
		c.Nodes = append(c.Nodes, emb)
	}
	c.waitJetStream(t)
	return c
}

// URLs returns the client URLs of every node, comma-separated, as a NATS
// client takes them to fail over between nodes.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Conn returns a connection to the cluster (any node), closed when the test
// ends; it reconnects to another node when its node goes away.
func (c *Cluster) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URLs(), nats.Name(t.Name()), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("bustest: connecting to the cluster: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitJetStream waits until clustered JetStream answers API requests.
func (c *Cluster) waitJetStream(t testing.TB) {
	t.Helper()
	js, err := jetstream.New(c.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() { close(stop) })
	defer timer.Stop()
	WaitJetStream(t, stop, js)
}

// WaitJetStream waits until JetStream answers js's API requests (each
// bounded by 2s), failing the test with the last error when stop is closed
// first: a cluster whose nodes just started takes a moment to elect its
// meta leader. Pass a context's Done to bound it by the test's context.
func WaitJetStream(t testing.TB, stop <-chan struct{}, js jetstream.JetStream) {
	t.Helper()
	var err error
	if !fixture.Until(stop, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = js.AccountInfo(ctx)
		return err == nil
	}) {
		t.Fatalf("bustest: clustered JetStream never answered: %v", err)
	}
}

// Resource is one stream, bucket or object store and its replica count.
type Resource struct {
	Name     string
	Replicas int
}

// Replicas lists every stream of the account (KV buckets and object
// stores are streams too) with its replica count.
func Replicas(t testing.TB, ctx context.Context, js jetstream.JetStream) []Resource {
	t.Helper()
	var out []Resource
	lister := js.ListStreams(ctx)
	for info := range lister.Info() {
		out = append(out, Resource{Name: info.Config.Name, Replicas: info.Config.Replicas})
	}
	if err := lister.Err(); err != nil {
		t.Fatalf("bustest: listing streams: %v", err)
	}
	return out
}

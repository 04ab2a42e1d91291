package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// Three embedded servers form a cluster; the mesh provisioned with three
// replicas keeps them when a process provisions again without asking for
// replicas, as every command does.
func TestClusterKeepsReplicas(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	js, err := jetstream.New(c.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := bus.MustNames("")
	if _, err := bus.Provision(ctx, js, names, bus.ProvisionOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Provision(ctx, js, names, bus.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range bustest.Replicas(t, ctx, js) {
		if r.Replicas != 3 {
			t.Errorf("%s has %d replicas after a provision without --js-replicas, want 3", r.Name, r.Replicas)
		}
	}
}

func TestClusterOptionsAreChecked(t *testing.T) {
	for _, c := range []struct {
		opts embedded.Options
		want string
	}{
		{embedded.Options{Cluster: embedded.ClusterOptions{Listen: "127.0.0.1:6222"}}, "need --cluster-name"},
		{embedded.Options{Cluster: embedded.ClusterOptions{Name: "mesh", Listen: "127.0.0.1:6222"}}, "needs a name of its own"},
		{embedded.Options{Name: "n1", Cluster: embedded.ClusterOptions{Name: "mesh", Listen: "6222"}}, `--cluster-listen "6222" is not host:port`},
		{embedded.Options{Name: "n1", Cluster: embedded.ClusterOptions{Name: "mesh", Listen: "127.0.0.1:6222", Routes: []string{"127.0.0.1:6223"}}}, `route "127.0.0.1:6223" is not a route URL`},
	} {
		c.opts.StoreDir = t.TempDir()
		srv, err := embedded.Start(c.opts)
		if err == nil {
			srv.Shutdown()
		}
		if !errors.Is(err, embedded.ErrInvalidOption) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidOption saying %q", c.opts, err, c.want)
		}
	}
}

package embedded

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterOptions make an embedded server one node of a NATS cluster with
// clustered JetStream: nodes that share Name and reach each other through
// Routes form the cluster, and streams and buckets provisioned with
// Replicas 3 (--js-replicas 3) keep a copy on three of them.
type ClusterOptions struct {
	Name   string   // the cluster's name, the same on every node; "" runs a single server
	Listen string   // host:port this node listens on for routes, e.g. 127.0.0.1:6222
	Routes []string // the other nodes' route URLs, nats://host:port
}

// apply sets the cluster settings of o. The server's name must then be
// unique in the cluster (JetStream places replicas by it).
func (c ClusterOptions) apply(o *server.Options, serverName string) error {
	if c.Name == "" {
		if c.Listen != "" || len(c.Routes) > 0 {
			return fmt.Errorf("%w: --cluster-listen and --routes need --cluster-name, the name every node of the cluster shares", ErrInvalidOption)
		}
		return nil
	}
	if serverName == "" || serverName == defaultServerName {
		return fmt.Errorf("%w: a cluster node needs a name of its own (--name n1), unique in cluster %q", ErrInvalidOption, c.Name)
	}
	host, portStr, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("%w: --cluster-listen %q is not host:port (%v); e.g. 127.0.0.1:6222", ErrInvalidOption, c.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("%w: --cluster-listen %q: port %q is not a port number", ErrInvalidOption, c.Listen, portStr)
	}
	var routes []*url.URL
	for _, r := range c.Routes {
		for _, one := range strings.Split(r, ",") {
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			u, err := url.Parse(one)
			if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "nats-route") {
				return fmt.Errorf("%w: route %q is not a route URL; use nats://host:port of another node's --cluster-listen", ErrInvalidOption, one)
			}
			routes = append(routes, u)
		}
	}
	o.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port}
	o.Routes = routes
	return nil
}

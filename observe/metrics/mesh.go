package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
)

// scrapeTimeout bounds the JetStream calls of one scrape.
const scrapeTimeout = 5 * time.Second

var (
	agentsLiveDesc = prometheus.NewDesc(Namespace+"_agents_live",
		"Live instances of each agent in the registry.", []string{"agent"}, nil)
	pendingDesc = prometheus.NewDesc(Namespace+"_consumer_pending",
		"Tasks waiting in each agent's durable consumer on the tasks stream, not yet delivered to an instance.", []string{"agent"}, nil)
	ackPendingDesc = prometheus.NewDesc(Namespace+"_consumer_ack_pending",
		"Tasks delivered to an instance of each agent and not yet acknowledged.", []string{"agent"}, nil)
)

// MeshCollector reports the mesh as it is at scrape time: the live
// instances of each agent (agentmesh_agents_live, from a meshcore.Registry)
// and the backlog of each agent's durable consumer on the tasks stream
// (agentmesh_consumer_pending, agentmesh_consumer_ack_pending). Every
// process that runs one reports the same values, so a dashboard takes the
// max over instances, not the sum.
type MeshCollector struct {
	reg   *meshcore.Registry
	js    jetstream.JetStream
	names bus.Names
}

// NewMeshCollector returns a collector over reg (nil: no agents_live) and
// the tasks stream of names on js (nil: no consumer metrics).
func NewMeshCollector(reg *meshcore.Registry, js jetstream.JetStream, names bus.Names) *MeshCollector {
	return &MeshCollector{reg: reg, js: js, names: names}
}

// Describe implements prometheus.Collector.
func (c *MeshCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- agentsLiveDesc
	ch <- pendingDesc
	ch <- ackPendingDesc
}

// Collect implements prometheus.Collector. An agent that announced but
// whose consumer is gone, or the reverse, shows in one family only.
func (c *MeshCollector) Collect(ch chan<- prometheus.Metric) {
	if c.reg != nil {
		for _, a := range c.reg.Agents() {
			ch <- prometheus.MustNewConstMetric(agentsLiveDesc, prometheus.GaugeValue, float64(len(a.Instances)), a.Contract.Name)
		}
	}
	if c.js == nil {
		return
	}
	if err := c.collectConsumers(ch); err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
	}
}

// collectConsumers reports each agent's durable consumer: a consumer
// whose durable name is an agent's and whose filter is that agent's task
// subject (the one agents.Runtime creates). Other consumers of the stream
// (a tool's ephemeral reader) are left out.
func (c *MeshCollector) collectConsumers(ch chan<- prometheus.Metric) error {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	stream, err := c.js.Stream(ctx, c.names.TasksStream())
	if err != nil {
		return fmt.Errorf("metrics: tasks stream %s: %w", c.names.TasksStream(), err)
	}
	list := stream.ListConsumers(ctx)
	for info := range list.Info() {
		agent := info.Config.Durable
		if subj, err := c.names.Task(agent); err != nil || info.Config.FilterSubject != subj {
			continue
		}
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(info.NumPending), agent)
		ch <- prometheus.MustNewConstMetric(ackPendingDesc, prometheus.GaugeValue, float64(info.NumAckPending), agent)
	}
	if err := list.Err(); err != nil {
		return fmt.Errorf("metrics: consumers of %s: %w", c.names.TasksStream(), err)
	}
	return nil
}

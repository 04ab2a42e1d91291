package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// maxStatusResults bounds how many results 'rollout status' reads.
const maxStatusResults = 100_000

// versionQueue is the queue of one of an agent's consumers.
type versionQueue struct {
	Consumer string `json:"consumer"`
	Subject  string `json:"subject"`
	Pending  uint64 `json:"pending"`     // not yet delivered
	Running  int    `json:"ack_pending"` // delivered, not yet answered
}

func newRolloutStatusCmd(a *app) *cobra.Command {
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "status AGENT",
		Short: "Show an agent's rollout, each version's queue, and its results by version",
		Long: `status shows the rollout of AGENT (if any), the queue of each of its consumers
(the agent's own and one per version that ever ran), and for each version the
results of the last --since in MESH_RESULTS: how many, how many failed, the
success rate and the p50/p95 duration (nearest rank). Answers to shadow copies
are counted apart (shadow).`,
		Example: `  agentmesh rollout status TextAgent
  agentmesh rollout status TextAgent --since 10m --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			if err := bus.ValidateAgentName(agent); err != nil {
				return usagef("%v", err)
			}
			if since <= 0 {
				return usagef("--since %s: give a positive duration such as 1h", since)
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh rollout status")
			if err != nil {
				return err
			}
			defer m.Close()
			var cur *schemas.Rollout
			if kv, err := m.JS.KeyValue(ctx, m.Names.RolloutsBucket()); err == nil {
				if cur, _, err = currentRollout(ctx, kv, agent); err != nil {
					return err
				}
			}
			queues, err := agentQueues(ctx, m, agent)
			if err != nil {
				return err
			}
			results, err := recentResults(ctx, m, agent, time.Now().Add(-since))
			if err != nil {
				return err
			}
			stats := schemas.VersionStatsOf(results)
			if a.jsonOut {
				return a.printJSON(struct {
					Rollout  *schemas.Rollout       `json:"rollout"`
					Queues   []versionQueue         `json:"queues"`
					Versions []schemas.VersionStats `json:"versions"`
				}{cur, queues, stats})
			}
			if cur == nil {
				fmt.Fprintf(a.out, "%s: no rollout; new tasks go to %s, taken by every instance\n", agent, mustTask(m.Names, agent))
			} else {
				fmt.Fprintf(a.out, "%s: %s (since %s)\n", agent, describeRollout(*cur), cur.UpdatedAt.Local().Format(time.DateTime))
			}
			tw := tabwriter.NewWriter(a.out, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "CONSUMER\tSUBJECT\tQUEUED\tRUNNING")
			for _, q := range queues {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", q.Consumer, q.Subject, q.Pending, q.Running)
			}
			_ = tw.Flush()
			fmt.Fprintf(a.out, "results of the last %s:\n", since)
			if len(stats) == 0 {
				fmt.Fprintln(a.out, "  none")
				return nil
			}
			tw = tabwriter.NewWriter(a.out, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tRESULTS\tFAILED\tSUCCESS\tP50\tP95")
			for _, s := range stats {
				v := s.Version
				if v == "" {
					v = "(none)"
				}
				if s.Shadow {
					v += " (shadow)"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%dms\t%dms\n", v, s.Results, s.Failures, 100*s.SuccessRate, s.P50MS, s.P95MS)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().DurationVar(&since, "since", time.Hour, "count the results of this last stretch of time")
	return cmd
}

func mustTask(n bus.Names, agent string) string {
	s, _ := n.Task(agent)
	return s
}

// agentQueues returns the queue of agent's own consumer and of each of
// its version consumers.
func agentQueues(ctx context.Context, m *mesh, agent string) ([]versionQueue, error) {
	st, err := m.JS.Stream(ctx, m.Names.TasksStream())
	if err != nil {
		return nil, err
	}
	var out []versionQueue
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Name != agent && !strings.HasPrefix(ci.Name, agent+"__v_") {
			continue
		}
		out = append(out, versionQueue{Consumer: ci.Name, Subject: ci.Config.FilterSubject, Pending: ci.NumPending, Running: ci.NumAckPending})
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("listing the consumers of %s: %w", m.Names.TasksStream(), err)
	}
	return out, nil
}

// recentResults reads agent's results stored in MESH_RESULTS since start
// (at most maxStatusResults of them).
func recentResults(ctx context.Context, m *mesh, agent string, start time.Time) ([]schemas.AgentResult, error) {
	cons, err := m.Res.Results.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{m.Names.AgentResults(agent)},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy, OptStartTime: &start,
	})
	if err != nil {
		return nil, fmt.Errorf("reading the results of %s: %w", agent, err)
	}
	var out []schemas.AgentResult
	for len(out) < maxStatusResults {
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			return nil, fmt.Errorf("reading the results of %s: %w", agent, err)
		}
		n, last := 0, false
		for msg := range batch.Messages() {
			n++
			if meta, err := msg.Metadata(); err == nil && meta.NumPending == 0 {
				last = true
			}
			ev, err := bus.DecodeJS(msg)
			if err != nil {
				continue
			}
			var res schemas.AgentResult
			if ev.DataAs(&res) == nil {
				out = append(out, res)
			}
		}
		if batch.Error() != nil {
			return nil, fmt.Errorf("reading the results of %s: %w", agent, batch.Error())
		}
		if n == 0 || last {
			break
		}
	}
	return out, nil
}

func newRolloutRmCmd(a *app, wait *time.Duration) *cobra.Command {
	return &cobra.Command{
		Use:   "rm AGENT",
		Short: "Remove an agent's rollout: new tasks go to mesh.task.AGENT again",
		Long: `rm removes the rollout of AGENT and its subject mapping: new tasks go to
mesh.task.AGENT again, which every instance of every version takes. Tasks
already queued on a version's subject stay there for its instances.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			if err := bus.ValidateAgentName(agent); err != nil {
				return usagef("%v", err)
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh rollout rm")
			if err != nil {
				return err
			}
			defer m.Close()
			kv, err := bus.EnsureRollouts(ctx, m.JS, m.Names)
			if err != nil {
				return err
			}
			e, err := kv.Get(ctx, agent)
			if err != nil {
				return fmt.Errorf("no rollout of %s: %w", agent, err)
			}
			if err := kv.Delete(ctx, agent, jetstream.LastRevision(e.Revision())); err != nil {
				return fmt.Errorf("removing the rollout of %s: %w (it changed meanwhile: look with 'agentmesh rollout status %s')", agent, err, agent)
			}
			rev := e.Revision() + 1 // the delete's revision is past the rollout's
			n, err := awaitApplied(ctx, kv, rev, *wait)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(struct {
					Agent     string `json:"agent"`
					Removed   bool   `json:"removed"`
					AppliedBy int    `json:"applied_by"`
				}{agent, true, n})
			}
			fmt.Fprintf(a.out, "rollout of %s removed (applied by %d server%s)\n", agent, n, plural(n))
			return nil
		},
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newRolloutCmd) }

// newRolloutCmd is the rollout command: long for its help text and flags,
// which read best in one place.
func newRolloutCmd(a *app) *cobra.Command {
	var (
		to, from string
		weight   int
		promote  bool
		shadow   bool
		wait     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rollout AGENT --to VERSION (--weight PERCENT | --promote | --shadow) | rollout status AGENT | rollout rm AGENT",
		Short: "Shift a share of an agent's new tasks to a new version, and judge it",
		Long: `rollout sends --weight percent of the new tasks of AGENT to version --to and the
rest to version --from (by default the version the other live instances run,
or the one a rollout before promoted). Each instance of an agent takes its
tasks from mesh.task.AGENT and from its version's subject
mesh.task.AGENT.v.<version> ('.' written '_'); the rollout is a weighted
subject mapping of mesh.task.AGENT onto the two versions' subjects, which every
'agentmesh server' (and 'agentmesh up') of the mesh applies as soon as it is
written to the rollouts bucket. The command waits --wait for the servers to
say they applied it and reports how many did; none is an error (servers not
run by agentmesh take the mapping from their configuration: docs/kubernetes.md).

  --weight 10     10% of new tasks to --to, 90% to --from
  --weight 0      roll back: every new task to --from
  --promote       every new task to --to (the same as --weight 100)
  --shadow        besides, a copy of each task sent to --from goes to --to: its
                  result is recorded (rollout status shows it apart) and
                  delivered to no one; with --shadow alone the weight is kept,
                  and a rollout written without --shadow ends shadow mode

Tasks already queued stay where they are: keep the instances of a version
running until 'rollout status' shows its queue empty. Tasks pinned to a
version ('agentmesh task --version', a pipeline step's version:) go to it
whatever the rollout says. Direct calls (--direct) and chat tool calls are
not rolled out. On a secure mesh this takes admin credentials.

'rollout status AGENT' shows the rollout, the queue of each version and,
from the recent results in MESH_RESULTS, each version's results, failures,
success rate and p50/p95 duration. 'rollout rm AGENT' removes the mapping:
new tasks go to mesh.task.AGENT again, taken by every instance.`,
		Example: `  agentmesh agent TextAgent --agent-version 2.0.0 &
  agentmesh rollout TextAgent --to 2.0.0 --weight 10
  agentmesh rollout status TextAgent
  agentmesh rollout TextAgent --to 2.0.0 --promote
  agentmesh rollout TextAgent --to 2.0.0 --weight 0     # roll back`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			if err := bus.ValidateAgentName(agent); err != nil {
				return usagef("%v", err)
			}
			set := cmd.Flags().Changed("weight")
			switch {
			case promote && set:
				return usagef("give --promote or --weight, not both (--promote is --weight 100)")
			case promote:
				weight, set = 100, true
			case !set && !shadow:
				return usagef("give --weight PERCENT, --promote or --shadow")
			case set && (weight < 0 || weight > 100):
				return usagef("--weight %d: give a percentage from 0 to 100", weight)
			}
			for _, v := range []struct{ flag, v string }{{"--to", to}, {"--from", from}} {
				if v.v == "" {
					continue
				}
				if _, err := bus.VersionToken(v.v); err != nil {
					return usagef("%s: %v", v.flag, err)
				}
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh rollout")
			if err != nil {
				return err
			}
			defer m.Close()
			kv, err := bus.EnsureRollouts(ctx, m.JS, m.Names)
			if err != nil {
				return fmt.Errorf("rollouts bucket %s: %w (on a secure mesh, use admin credentials)", m.Names.RolloutsBucket(), err)
			}
			cur, rev, err := currentRollout(ctx, kv, agent)
			if err != nil {
				return err
			}
			r, err := nextRollout(ctx, m, agent, cur, to, from, weight, set, shadow)
			if err != nil {
				return err
			}
			if err := checkVersionConsumers(ctx, m, r); err != nil {
				return err
			}
			r.UpdatedAt = time.Now().UTC()
			b, _ := json.Marshal(r)
			var newRev uint64
			if rev == 0 {
				newRev, err = kv.Create(ctx, agent, b)
			} else {
				newRev, err = kv.Update(ctx, agent, b, rev)
			}
			if err != nil {
				return fmt.Errorf("writing the rollout of %s: %w (another rollout of it was written meanwhile: look with 'agentmesh rollout status %s' and try again)", agent, err, agent)
			}
			n, err := awaitApplied(ctx, kv, newRev, wait)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(struct {
					schemas.Rollout
					AppliedBy int `json:"applied_by"`
				}{r, n})
			}
			fmt.Fprintf(a.out, "rollout of %s: %s (applied by %d server%s)\n", agent, describeRollout(r), n, plural(n))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the new version (as its instances serve it: --agent-version or the contract's version)")
	f.StringVar(&from, "from", "", "the version that takes the rest (default: the one the other live instances run, or the one promoted before)")
	f.IntVar(&weight, "weight", 0, "percentage of new tasks sent to --to (0 rolls back)")
	f.BoolVar(&promote, "promote", false, "send every new task to --to (--weight 100)")
	f.BoolVar(&shadow, "shadow", false, "also copy each task sent to --from to --to: its result is recorded, delivered to no one")
	f.DurationVar(&wait, "wait", 5*time.Second, "how long to wait for the servers to apply it")
	cmd.AddCommand(newRolloutStatusCmd(a), newRolloutRmCmd(a, &wait))
	return cmd
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// describeRollout says where r sends new tasks.
func describeRollout(r schemas.Rollout) string {
	var s string
	switch r.Weight {
	case 0:
		s = fmt.Sprintf("every new task to %s (rolled back from %s)", r.From, r.To)
	case 100:
		s = fmt.Sprintf("every new task to %s (promoted from %s)", r.To, r.From)
	default:
		s = fmt.Sprintf("%d%% of new tasks to %s, %d%% to %s", r.Weight, r.To, 100-r.Weight, r.From)
	}
	if r.Shadow {
		s += fmt.Sprintf("; a shadow copy of each task of %s to %s", r.From, r.To)
	}
	return s
}

// currentRollout returns the rollout of agent and its revision, 0 when
// there is none.
func currentRollout(ctx context.Context, kv jetstream.KeyValue, agent string) (*schemas.Rollout, uint64, error) {
	e, err := kv.Get(ctx, agent)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading the rollout of %s: %w", agent, err)
	}
	var r schemas.Rollout
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		// Overwritten by the new one: say what was there.
		return nil, e.Revision(), nil
	}
	return &r, e.Revision(), nil
}

// nextRollout is the rollout the flags ask for, given the current one.
func nextRollout(ctx context.Context, m *mesh, agent string, cur *schemas.Rollout, to, from string, weight int, weightSet, shadow bool) (schemas.Rollout, error) {
	r := schemas.Rollout{Agent: agent, To: to, From: from, Weight: weight, Shadow: shadow}
	if cur != nil && to == "" {
		r.To = cur.To
	}
	if r.To == "" {
		return r, usagef("give --to VERSION: no rollout of %s is under way", agent)
	}
	if cur != nil && cur.To == r.To {
		if r.From == "" {
			r.From = cur.From
		}
		if !weightSet {
			r.Weight = cur.Weight
		}
	}
	if cur != nil && cur.To != r.To && cur.Weight != 0 && cur.Weight != 100 {
		return r, fmt.Errorf("a rollout of %s to %s is under way at %d%%: promote it (--to %s --promote) or roll it back (--to %s --weight 0) first", agent, cur.To, cur.Weight, cur.To, cur.To)
	}
	if r.From == "" && cur != nil && cur.To != r.To {
		r.From = cur.From
		if cur.Weight == 100 {
			r.From = cur.To
		}
	}
	if r.From == "" {
		live, err := liveVersions(ctx, m, agent)
		if err != nil {
			return r, err
		}
		others := slices.DeleteFunc(live, func(v string) bool { return v == r.To })
		if len(others) != 1 {
			return r, usagef("give --from VERSION: the live instances of %s other than %s run %s", agent, r.To, describeVersions(others))
		}
		r.From = others[0]
	}
	if err := r.Validate(); err != nil {
		return r, usagef("%v", err)
	}
	return r, nil
}

func describeVersions(vs []string) string {
	if len(vs) == 0 {
		return "no version"
	}
	return "versions " + strings.Join(vs, ", ")
}

// liveVersions returns the versions the live instances of agent serve,
// from the registry, sorted.
func liveVersions(ctx context.Context, m *mesh, agent string) ([]string, error) {
	keys, err := m.Res.Agents.ListKeysFiltered(ctx, agent+".*")
	if err != nil {
		return nil, fmt.Errorf("reading the registry: %w", err)
	}
	seen := map[string]bool{}
	for k := range keys.Keys() {
		e, err := m.Res.Agents.Get(ctx, k)
		if err != nil {
			continue // gone meanwhile
		}
		var an schemas.Announcement
		if json.Unmarshal(e.Value(), &an) == nil && an.Contract.Version != "" {
			seen[an.Contract.Version] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// checkVersionConsumers makes sure each version r sends tasks to has a
// consumer, that is, an instance of it has run: else its tasks would wait.
func checkVersionConsumers(ctx context.Context, m *mesh, r schemas.Rollout) error {
	var need []string
	if r.Weight < 100 {
		need = append(need, r.From)
	}
	if r.Weight > 0 || r.Shadow {
		need = append(need, r.To)
	}
	for _, v := range need {
		tok, _ := bus.VersionToken(v)
		name := bus.VersionConsumer(r.Agent, tok)
		if _, err := m.JS.Consumer(ctx, m.Names.TasksStream(), name); err != nil {
			return fmt.Errorf("no instance of %s at version %s has taken tasks yet (no consumer %s on %s: %v): start one first (agentmesh agent %s --agent-version %s; on a secure mesh with credentials from 'agentmesh creds agent %s --version %s'), else the tasks sent to it would wait", r.Agent, v, name, m.Names.TasksStream(), err, r.Agent, v, r.Agent, v)
		}
	}
	return nil
}

// awaitApplied waits up to wait for the servers following rollouts to
// acknowledge revision rev, and returns how many did: at least one, else
// an error. A server that could not apply it says why.
func awaitApplied(ctx context.Context, kv jetstream.KeyValue, rev uint64, wait time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w, err := kv.Watch(ctx, bus.RolloutAppliedKey("*"))
	if err != nil {
		return 0, fmt.Errorf("watching the servers' acknowledgments: %w", err)
	}
	defer func() { _ = w.Stop() }()
	applied := map[string]bool{}
	known := map[string]bool{} // every server that ever acknowledged
	var failed []string
	var settle <-chan time.Time // after the first acknowledgment, a moment for the others'
	initial := true             // the watch still delivers what the bucket held
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return 0, errors.New("the watch of the servers' acknowledgments ended")
			}
			if e == nil {
				initial = false
				if len(applied) > 0 && len(applied) == len(known) && len(failed) == 0 {
					return len(applied), nil
				}
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var ack schemas.RolloutApplied
			if json.Unmarshal(e.Value(), &ack) != nil {
				continue
			}
			known[ack.Server] = true
			if ack.Revision < rev {
				continue
			}
			if ack.Error != "" {
				failed = append(failed, ack.Server+": "+ack.Error)
				continue
			}
			applied[ack.Server] = true
			if !initial && len(applied) == len(known) && len(failed) == 0 {
				return len(applied), nil
			}
			if settle == nil {
				settle = time.After(500 * time.Millisecond)
			}
		case <-settle:
			if len(failed) == 0 {
				return len(applied), nil
			}
			settle = nil
		case <-ctx.Done():
			if len(failed) > 0 {
				return len(applied), fmt.Errorf("the rollout was written but not applied by %s", strings.Join(failed, "; "))
			}
			if len(applied) == 0 {
				return 0, exitError{code: 1, msg: fmt.Sprintf("the rollout was written (revision %d) but no server applied it within %s: is the mesh's server an 'agentmesh server' or 'agentmesh up' of this version? A plain nats-server takes the mapping from its configuration (docs/kubernetes.md, \"Rollouts\")", rev, wait)}
			}
			return len(applied), nil
		}
	}
}

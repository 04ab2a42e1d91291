package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
)

func init() { register(newMemoryCmd) }

// memoryFlags turn on the chat loop's memory across conversations
// (docs/knowledge.md#memory).
type memoryFlags struct {
	on    bool
	slots []string
}

func (f *memoryFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "memory", false, "remember facts across conversations, per client identity: the model gets a remember tool, and each turn recalls the client's facts that match its message (in meaning too, with AGENTMESH_EMBED_MODEL set)")
	fs.StringSliceVar(&f.slots, "remember-slots", nil, "conversation slots to remember as facts of the client when a turn completes, comma-separated (implies --memory)")
}

// check reports a slot name that cannot be one, as a usage error.
func (f memoryFlags) check() error {
	for _, s := range f.slots {
		if err := bus.ValidateToken("slot", s); err != nil {
			return usageError{fmt.Errorf("--remember-slots: %w: name the slots as the conversation state does (agentmesh state show CONVERSATION)", err)}
		}
	}
	return nil
}

// chatOptions is the memory option of the chat loop, or none. With
// AGENTMESH_EMBED_MODEL set, facts are embedded and recalled by fused
// lexical and dense ranking.
func (f memoryFlags) chatOptions(m *mesh) ([]chat.Option, error) {
	if !f.on && len(f.slots) == 0 {
		return nil, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	var opts []memory.Option
	e, model, err := embedderFromEnv()
	if err != nil {
		return nil, err
	}
	if e != nil { // recall ranks densely too, as KnowledgeAgent does
		opts = append(opts, memory.WithEmbedder(e, model))
	}
	return []chat.Option{chat.WithMemory(memory.New(m.JS, m.Names, opts...), f.slots...)}, nil
}

func newMemoryCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "List and remove the facts the chat remembers across conversations",
		Long: `With --memory, the orchestrator's chat loop remembers facts across conversations,
per client identity: the facts the model stores with its remember tool, and the
slots named by --remember-slots. Each later turn of the same identity recalls the
facts that match its message. They live in the mesh's memory bucket
(docs/knowledge.md#memory).`,
		Example: `  agentmesh memory ls alice
  agentmesh memory rm alice 3f2a9c0d41be7e55
  agentmesh memory rm alice --all`,
	}
	cmd.AddCommand(newMemoryLsCmd(a), newMemoryRmCmd(a))
	return cmd
}

func newMemoryLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [IDENTITY]",
		Short: "List the remembered facts of a client identity, or of all",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			who := ""
			if len(args) == 1 {
				who = args[0]
				if err := bus.ValidateToken("identity", who); err != nil {
					return usageError{err}
				}
			}
			m, err := a.connect(cmd.Context(), "agentmesh memory")
			if err != nil {
				return err
			}
			defer m.Close()
			facts, err := memory.New(m.JS, m.Names).List(cmd.Context(), who)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if facts == nil {
					facts = []memory.Fact{}
				}
				return a.printJSON(facts)
			}
			if len(facts) == 0 {
				fmt.Fprintln(a.errOut, "no remembered facts; the orchestrator remembers with --memory")
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "IDENTITY\tID\tAT\tSOURCE\tFACT")
			for _, f := range facts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Identity, f.ID, f.At.Format(time.DateTime), f.Source, strings.ReplaceAll(f.Text, "\n", " "))
			}
			return tw.Flush()
		},
	}
}

func newMemoryRmCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "rm IDENTITY [FACT_ID...]",
		Short: "Remove remembered facts of a client identity (--all: every one); --json prints {\"removed\": [IDS]}",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			who, ids := args[0], args[1:]
			if err := bus.ValidateToken("identity", who); err != nil {
				return usageError{err}
			}
			if all == (len(ids) > 0) {
				return usageError{errors.New("name the facts to remove (their ids, from 'agentmesh memory ls " + who + "') or give --all, not both")}
			}
			m, err := a.connect(cmd.Context(), "agentmesh memory")
			if err != nil {
				return err
			}
			defer m.Close()
			store := memory.New(m.JS, m.Names)
			if all {
				facts, err := store.List(cmd.Context(), who)
				if err != nil {
					return err
				}
				for _, f := range facts {
					ids = append(ids, f.ID)
				}
			}
			removed := []string{}
			for _, id := range ids {
				if err := store.Remove(cmd.Context(), who, id); err != nil {
					return errors.Join(err, a.printRemoved(removed))
				}
				removed = append(removed, id)
			}
			return a.printRemoved(removed)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every fact of the identity")
	return cmd
}

func (a *app) printRemoved(ids []string) error {
	if a.jsonOut {
		return a.printJSON(map[string][]string{"removed": ids})
	}
	for _, id := range ids {
		fmt.Fprintf(a.out, "removed %s\n", id)
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() {
	register(newChatCmd)
}

// chatOptions configure an orchestrator replica's chat loop: with the LLM
// AGENTMESH_MODEL names when its provider's key or base URL is set, else
// the offline planner.
// Its model's calls count in the mesh's LLM bucket (when m has it), under
// the budgets of bud.
func chatOptions(a *app, m *mesh, pm *procMetrics, bud budgetFlags) ([]chat.Option, error) {
	cfg, err := llm.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	var opts []chat.Option
	if cfg.Configured() {
		model, err := llm.New(cfg)
		if err != nil {
			return nil, err
		}
		if m.Res.LLM != nil {
			model = model.WithShared(m.JS, m.Res.LLM)
			bopts, err := bud.chatOptions()
			if err != nil {
				return nil, err
			}
			opts = append(opts, bopts...)
		} else if bud.set() {
			return nil, fmt.Errorf("--turn-budget-* and --client-budget-* need the mesh's LLM bucket %s, which this identity cannot see", m.Names.LLMBucket())
		}
		opts = append(opts, chat.WithLLM(model))
		fmt.Fprintf(a.errOut, "chat: model %s (%s) at %s\n", model.Model(), model.Provider(), model.Endpoint())
	} else {
		fmt.Fprintf(a.errOut, "chat: no LLM configured (%s / %s, or %s=anthropic:... with %s); the offline planner answers\n",
			llm.EnvAPIKey, llm.EnvBaseURL, llm.EnvModel, llm.EnvAnthropicAPIKey)
	}
	if s := os.Getenv("AGENTMESH_CHAT_STEPS"); s != "" {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("AGENTMESH_CHAT_STEPS=%q is not a positive step limit", s)
		}
		opts = append(opts, chat.WithMaxSteps(n))
	}
	rules, err := llm.PolicyRulesFromEnv()
	if err != nil {
		return nil, err
	}
	if !rules.Empty() {
		ps, _ := rules.Policies() // checked by PolicyRulesFromEnv
		gopts, err := pm.policyObserver()
		if err != nil {
			return nil, err
		}
		opts = append(opts, chat.WithGuard(llm.NewGuard(ps, gopts...)))
		fmt.Fprintf(a.errOut, "chat: policies %+v\n", rules)
	}
	opts = append(opts, chat.WithLogger(a.logger(false)))
	return opts, nil
}

func newChatCmd(a *app) *cobra.Command {
	var (
		conversation string
		newConv      bool
		timeout      time.Duration
		rewind       int
	)
	cmd := &cobra.Command{
		Use:   "chat [--conversation ID] MESSAGE",
		Short: "Send one chat turn to the mesh and print the answer",
		Long: `Publishes MESSAGE as a chat request (a JetStream publish: the ack says an
orchestrator will take it), shows the turn's progress on stderr while agents
run, and the model's text there as it writes it (lines starting "  > "),
then prints the answer, what the turn produced (text whole up to 4000
characters, collections as counts and their first file names, categories and
folders as trees), its steps, tokens and cost. Without
--conversation a new conversation starts; its id is printed so later turns can
continue it and use its results. --conversation with an id the mesh does not
know is an error, unless --new asks for a new conversation with that id. With
--json the final chat.responded event is printed instead, with what the turn
produced under "views". A turn that asks a question (state input_required)
prints it; answer with another turn in the same conversation, which continues
where it stopped. The exit status is 1 when the turn did not complete or ask.

--rewind N with --conversation C continues C from before its turn N in a new
conversation: turns 1 to N-1 are copied (the model reads only those), the
slots are C's as they were then (when the mesh still holds them), MESSAGE is
the new conversation's turn N, and its id is printed. C does not change.`,
		Args: cobra.MinimumNArgs(1),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case !cmd.Flags().Changed("rewind"):
			case conversation == "":
				return usagef("--rewind %d rewinds the conversation --conversation names: give --conversation ID", rewind)
			case rewind < 1:
				return usagef("--rewind %d: turns count from 1; give the turn to continue from before", rewind)
			case newConv:
				return usagef("--rewind starts a new conversation of its own; drop --new")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			m, err := a.connect(ctx, "agentmesh chat")
			if err != nil {
				return err
			}
			defer m.Close()
			store := m.store() // nil for a client of a secure mesh: no state to check or show
			if store != nil {
				if err := checkConversationFlag(ctx, m, conversation, newConv); err != nil {
					return err
				}
			}
			target, opts := conversation, []client.TurnOption(nil)
			if rewind > 0 {
				target, opts = "", []client.TurnOption{client.WithRewind(conversation, rewind)}
				fmt.Fprintf(a.errOut, "rewinding conversation %s to before its turn %d, into a new conversation\n", conversation, rewind)
			}
			before := map[string]schemas.TypedValue{}
			if target != "" && store != nil {
				if st, err := store.Conversation(ctx, conversation); err == nil {
					before = st.Slots
				}
			}
			var final bus.Event
			resp, err := a.chatTurnTo(ctx, m, target, strings.Join(args, " "), a.errOut, func(ev bus.Event) { final = ev }, opts...)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return exitError{code: 1, msg: fmt.Sprintf("no answer within %s; the turn goes on: agentmesh watch %s", timeout, resp.ConversationID)}
				}
				return err
			}
			views := turnViews(ctx, store, newViewer(ctx, m), before, resp)
			if a.jsonOut {
				_ = a.printJSON(withViews(eventJSON(final), views))
			} else {
				printChatResponse(a.out, resp, views)
			}
			if resp.State == schemas.ChatInputRequired {
				fmt.Fprintf(a.errOut, "the turn waits for your answer: agentmesh chat --conversation %s ANSWER\n", resp.ConversationID)
				return nil
			}
			if resp.State != schemas.ChatCompleted {
				return exitError{code: 1, msg: fmt.Sprintf("the turn ended %s: %s", resp.State, firstNonEmpty(resp.Error, resp.Output))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&conversation, "conversation", "", "continue this conversation (default: start a new one)")
	cmd.Flags().BoolVar(&newConv, "new", false, "with --conversation: start a new conversation with that id")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the answer")
	cmd.Flags().IntVar(&rewind, "rewind", 0, "with --conversation: continue it from before turn N, in a new conversation")
	return cmd
}

// checkConversationFlag refuses --conversation naming a conversation the
// mesh does not know (without --new), and --new naming one it does.
func checkConversationFlag(ctx context.Context, m *mesh, conversation string, newConv bool) error {
	if conversation == "" {
		if newConv {
			return errors.New("--new names a new conversation: give its id with --conversation ID (or drop --new to start one with a fresh id)")
		}
		return nil
	}
	err := client.CheckConversation(ctx, m.Res.Conversations, conversation)
	switch {
	case newConv && err == nil:
		return fmt.Errorf("--new: conversation %q exists already; drop --new to continue it, or choose another id", conversation)
	case newConv && errors.Is(err, client.ErrUnknownConversation):
		return nil
	case errors.Is(err, client.ErrUnknownConversation):
		return fmt.Errorf("--conversation %q: no such conversation on this mesh; check the id an earlier turn printed, or add --new to start a conversation with this id", conversation)
	}
	return err
}

// chatTurn sends one chat turn and follows it to its answer, writing
// progress lines to progress (nil for none).
func (a *app) chatTurn(ctx context.Context, m *mesh, conversation, message string, progress io.Writer) (schemas.ChatResponse, error) {
	return a.chatTurnTo(ctx, m, conversation, message, progress, nil)
}

func (a *app) chatTurnTo(ctx context.Context, m *mesh, conversation, message string, progress io.Writer, final func(bus.Event), opts ...client.TurnOption) (schemas.ChatResponse, error) {
	var (
		onProgress func(schemas.TaskProgress)
		accepted   func(string)
	)
	if progress != nil {
		// The model's text is written as it comes (client.WithDeltas), on
		// the progress stream: the answer on stdout stays whole and once.
		midLine := false
		endLine := func() {
			if midLine {
				fmt.Fprintln(progress)
				midLine = false
			}
		}
		onProgress = func(p schemas.TaskProgress) {
			endLine()
			fmt.Fprintf(progress, "  … %s\n", p.Message)
		}
		accepted = func(conv string) { fmt.Fprintf(progress, "conversation %s\n", conv) }
		opts = append(opts, client.WithDeltas(func(d schemas.ChatDelta) {
			if !midLine {
				fmt.Fprint(progress, "  > ")
			}
			fmt.Fprint(progress, strings.ReplaceAll(d.Text, "\n", "\n    "))
			midLine = true
		}))
		defer endLine()
	}
	resp, ev, err := client.Turn(ctx, m.JS, m.Names, conversation, message, "agentmesh/cli", onProgress, accepted, opts...)
	if err == nil && final != nil {
		final(ev)
	}
	return resp, err
}

// turnViews returns what a turn produced: the conversation's slots it
// filled or changed (before holds the slots from before the turn), and the
// outputs of its tool calls that went to history because no slot takes
// their type (FOLDER_RESULT, for one).
func turnViews(ctx context.Context, store *stateview.View, v *viewer, before map[string]schemas.TypedValue, r schemas.ChatResponse) []valueView {
	if store == nil {
		return nil // an identity that may not read state
	}
	st, err := store.Conversation(ctx, r.ConversationID)
	if err != nil {
		return nil
	}
	changed := map[string]schemas.TypedValue{}
	for name, tv := range st.Slots {
		if old, ok := before[name]; !ok || !bytes.Equal(old.Value, tv.Value) || old.DataType != tv.DataType {
			changed[name] = tv
		}
	}
	tasks := map[string]bool{}
	for _, tc := range r.ToolCalls {
		if tc.TaskID != "" {
			tasks[tc.TaskID] = true
		}
	}
	for _, h := range st.History {
		if !tasks[h.TaskID] {
			continue
		}
		for name, tv := range h.Outputs {
			changed[h.Agent+"."+name] = tv
		}
	}
	return v.views(changed)
}

func printChatResponse(w io.Writer, r schemas.ChatResponse, views []valueView) {
	fmt.Fprintln(w, r.Output)
	fmt.Fprintln(w)
	if len(views) > 0 {
		fmt.Fprintln(w, "outputs:")
		printViews(w, "  ", views)
		fmt.Fprintln(w)
	}
	for _, tc := range r.ToolCalls {
		status := "ok"
		if !tc.Success {
			status = "failed: " + tc.Error
		}
		fmt.Fprintf(w, "  %-20s %6d ms  %s\n", tc.Agent, tc.DurationMS, status)
	}
	fmt.Fprintf(w, "%s · %s planner · %s · %s · %s · %s\n",
		r.State, firstNonEmpty(r.Planner, "llm"), schemas.Plural(r.Steps, "step", "steps"), schemas.Plural(len(r.ToolCalls), "tool call", "tool calls"),
		usageLine(r.Usage), time.Duration(r.DurationMS)*time.Millisecond)
	if r.Budget != nil {
		fmt.Fprintf(w, "budget: spent %d tokens and $%.4f of the turn's %s\n", r.Tokens.Prompt+r.Tokens.Completion, r.Cost, r.Budget)
	}
	printTurnRefusals(w, "", r)
	fmt.Fprintf(w, "conversation %s (continue with --conversation %s)\n", r.ConversationID, r.ConversationID)
}

// usageLine writes a turn's or run's totals: "12 prompt + 3 completion
// tokens · $0.0012 · model 340ms · agents 1.2s".
func usageLine(u schemas.Usage) string {
	return fmt.Sprintf("%d prompt + %d completion tokens · $%.4f · model %s · agents %s",
		u.Tokens.Prompt, u.Tokens.Completion, u.Cost,
		time.Duration(u.ModelMS)*time.Millisecond, time.Duration(u.ToolMS)*time.Millisecond)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

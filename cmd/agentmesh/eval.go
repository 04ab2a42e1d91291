package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/internal/eval"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newEvalCmd) }

func newEvalCmd(a *app) *cobra.Command {
	var (
		runs    int
		junit   string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "eval FILE",
		Short: "Run an eval set's chat and pipeline cases against the live mesh and score them",
		Long: `Run each case of an eval set (YAML) as a new chat conversation, --runs times
(default: the set's runs, else 1), and score each answer against the case's
expectations: the answer contains (or not) words, matches regexes; the turn
meets a JSON Schema; a model judges it against a rubric (judge:, with the
model AGENTMESH_MODEL configures); the turn ends in a state; the agents it
called, in order, with params; its cost and latency. A case may run a
pipeline (pipeline: a file or the spec inline, vars:) instead of a chat
message, with expectations on its outputs (STEP.NAME), the steps that ran
and their params, its status and code. Prints a table (--json: the results), writes JUnit XML with --junit,
and exits 0 when every case passed (at least the set's threshold of its runs),
1 otherwise. See docs/evals.md.

  name: readme
  runs: 2
  threshold: 1        # share of each case's runs that must pass
  cases:
    - name: sunsets
      chat: Find sunset images and organize them into folders
      expect:
        contains: [sunset]
        agents: [ImageSearchAgent, AnalysisAgent, FolderAgent]
        params: {ImageSearchAgent: {query: sunset}}
        max_latency: 30s`,
		Example: `  agentmesh eval examples/evals/readme.yaml --junit eval.xml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usagef("--timeout %s: give a positive duration such as 60s", timeout)
			}
			if runs < 0 || runs > eval.MaxRuns {
				return usagef("--runs %d: give 1 to %d", runs, eval.MaxRuns)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			set, err := eval.Parse(data)
			if err != nil {
				return exitError{code: 1, msg: oneLine(fmt.Sprintf("%s: %v", args[0], err))}
			}
			specs, err := evalSpecs(set, filepath.Dir(args[0]))
			if err != nil {
				return exitError{code: 1, msg: oneLine(fmt.Sprintf("%s: %v", args[0], err))}
			}
			var judge eval.ChatModel
			if set.Judged() {
				if judge, err = judgeModel(); err != nil {
					return exitError{code: 1, msg: oneLine(fmt.Sprintf("%s: %v", args[0], err))}
				}
			}
			if runs > 0 {
				set.Runs = runs
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh eval")
			if err != nil {
				return err
			}
			defer m.Close()
			var all []eval.Run
			for _, c := range set.Cases {
				for n := 1; n <= set.Runs; n++ {
					r, err := a.evalRun(ctx, m, c, specs[c.Name], judge, n, timeout)
					if err != nil {
						return err
					}
					all = append(all, r)
					if !a.jsonOut {
						status := "pass"
						if !r.Passed() {
							status = "FAIL"
						}
						fmt.Fprintf(a.errOut, "  %s #%d: %s (%s)\n", c.Name, n, status, r.Duration.Round(time.Millisecond))
					}
				}
			}
			results := eval.Results(set, all)
			if junit != "" {
				f, err := os.Create(junit)
				if err != nil {
					return err
				}
				werr := eval.WriteJUnit(f, set, results)
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				if werr != nil {
					return fmt.Errorf("writing %s: %w", junit, werr)
				}
			}
			if a.jsonOut {
				if err := a.printJSON(evalJSON(results)); err != nil {
					return err
				}
			} else if err := eval.WriteTable(a.out, results); err != nil {
				return err
			}
			failed := 0
			for _, r := range results {
				if !r.Passed {
					failed++
				}
			}
			if failed > 0 {
				return exitError{code: 1, msg: fmt.Sprintf("%d of %d cases of %s failed", failed, len(results), args[0])}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&runs, "runs", 0, "run each case this many times (default: the set's runs)")
	f.StringVar(&junit, "junit", "", "write the results as JUnit XML to this file")
	f.DurationVar(&timeout, "timeout", 60*time.Second, "how long one chat turn or pipeline run (with its judging) may take")
	return cmd
}

// evalRun runs one case once, in a conversation of its own. A turn that
// gets no answer in time is a run with an error; an interrupt ends the eval.
// A pipeline case runs spec as a run of its own; a judged answer is
// scored by judge.
func (a *app) evalRun(ctx context.Context, m *mesh, c eval.Case, spec pipelinespec.PipelineSpec, judge eval.ChatModel, n int, timeout time.Duration) (eval.Run, error) {
	r := eval.Run{Case: c.Name, N: n}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var o eval.Outcome
	var err error
	if c.Pipeline.IsZero() {
		var resp schemas.ChatResponse
		resp, err = a.chatTurn(tctx, m, "", c.Chat, nil)
		o = eval.ChatOutcome(resp)
	} else {
		o, err = a.evalPipeline(tctx, m, c.Name, spec)
	}
	r.Duration = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return r, exitError{code: 130, msg: "interrupted"}
		}
		r.Err = fmt.Errorf("no answer: %w", err)
		return r, nil
	}
	if o.Duration > 0 {
		r.Duration = o.Duration
	}
	r.Cost = o.Cost
	r.Misses = eval.CheckOutcome(c.Expect, o)
	if j := c.Expect.Judge; j != nil {
		v, err := j.Score(tctx, judge, c.Chat, o.Answer)
		switch {
		case ctx.Err() != nil:
			return r, exitError{code: 130, msg: "interrupted"}
		case err != nil:
			r.Err = err
		default:
			if miss := j.Miss(v); miss != "" {
				r.Misses = append(r.Misses, miss)
			}
		}
	}
	return r, nil
}

// judgeModel is the model that scores judged answers: the one
// AGENTMESH_MODEL and its provider's key or base URL configure, as the
// chat's.
func judgeModel() (eval.ChatModel, error) {
	cfg, err := llm.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	if !cfg.Configured() {
		return nil, fmt.Errorf("a case has a judge, but no model is configured to score answers: set %s (and %s for a local server) or %s=anthropic:MODEL with %s (docs/llm.md), or drop the judge",
			llm.EnvAPIKey, llm.EnvBaseURL, llm.EnvModel, llm.EnvAnthropicAPIKey)
	}
	return llm.New(cfg)
}

// evalCase is a case's results as --json prints them.
type evalCase struct {
	Case     string    `json:"case"`
	Passed   bool      `json:"passed"`
	PassRate float64   `json:"pass_rate"`
	Runs     []evalRun `json:"runs"`
}

type evalRun struct {
	N          int      `json:"n"`
	Passed     bool     `json:"passed"`
	Misses     []string `json:"misses,omitempty"`
	Error      string   `json:"error,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	Cost       float64  `json:"cost"`
}

func evalJSON(results []eval.CaseResult) []evalCase {
	out := make([]evalCase, 0, len(results))
	for _, c := range results {
		ec := evalCase{Case: c.Name, Passed: c.Passed, PassRate: c.PassRate(), Runs: []evalRun{}}
		for _, r := range c.Runs {
			er := evalRun{N: r.N, Passed: r.Passed(), Misses: r.Misses, DurationMS: r.Duration.Milliseconds(), Cost: r.Cost}
			if r.Err != nil {
				er.Error = r.Err.Error()
			}
			ec.Runs = append(ec.Runs, er)
		}
		out = append(out, ec)
	}
	return out
}

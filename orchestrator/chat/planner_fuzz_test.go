package chat_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// FuzzPlanOffline plans any message against the project's contracts: it
// never panics; a plan names only live agents and gives each params its
// contract's schema accepts; anything else is ErrNoPlan saying why.
func FuzzPlanOffline(f *testing.F) {
	for _, tc := range plannerCases() {
		f.Add(tc.message)
	}
	f.Add(`"unclosed quote and: a colon`)
	f.Add("'' : \"\" “” find 0 99999999999999999999 -1 1.5 images")
	f.Add("ÅNGSTRÖM photos ✨ of ‘snow’")
	contracts := append(append(builtinContracts(), nodeWordCountContract(), shoutContract()), mcpContracts(f)...)
	byName := map[string]schemas.AgentContract{}
	for _, c := range contracts {
		byName[c.Name] = c
	}
	f.Fuzz(func(t *testing.T, message string) {
		plan, err := chat.PlanOffline(message, contracts, nil, nil)
		if err != nil {
			if !errors.Is(err, chat.ErrNoPlan) || !strings.HasPrefix(err.Error(), "I can't plan this without a model: ") {
				t.Fatalf("%q: %v, want ErrNoPlan", message, err)
			}
			return
		}
		if len(plan.Steps) == 0 {
			t.Fatalf("%q: an empty plan without an error", message)
		}
		for _, s := range plan.Steps {
			c, ok := byName[s.Agent]
			if !ok {
				t.Fatalf("%q: plan names %q, not a live agent", message, s.Agent)
			}
			params := map[string]any{}
			for k, v := range s.Params {
				if _, input := c.Input(k); !input {
					params[k] = v
				}
			}
			if err := c.ValidateParams(params); err != nil {
				t.Fatalf("%q: %s params %v: %v", message, s.Agent, s.Params, err)
			}
		}
	})
}

package security_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/security"
)

// docs/security.md names every subject the permission builder grants or
// denies, with <agent> and <client> for the names.
func TestDocumentNamesEveryPermission(t *testing.T) {
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	names := bus.MustNames("")
	for _, id := range []bus.Identity{{Role: bus.RoleAgent, Name: "AGENT"}, {Role: bus.RoleClient, Name: "CLIENT"}, {Role: bus.RoleOrchestrator}} {
		p := security.Permissions(id, names)
		for _, list := range [][]string{p.Pub.Allow, p.Pub.Deny, p.Sub.Allow, p.Sub.Deny} {
			for _, s := range list {
				s = strings.NewReplacer("AGENT", "<agent>", "CLIENT", "<client>").Replace(s)
				s = strings.Replace(s, "_INBOX.agent-<agent>.>", "_INBOX.<user>.>", 1)
				s = strings.Replace(s, "_INBOX.client-<client>.>", "_INBOX.<user>.>", 1)
				s = strings.Replace(s, "_INBOX.orchestrator.>", "_INBOX.<user>.>", 1)
				if !strings.Contains(string(doc), "`"+s+"`") {
					t.Errorf("docs/security.md does not name `%s` (%s)", s, id.User())
				}
			}
		}
	}
}

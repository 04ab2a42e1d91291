package bus

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
)

// Role is what an identity on a secure mesh may do (docs/security.md).
type Role string

// The roles of a secure mesh.
const (
	RoleAdmin        Role = "admin"        // everything: provisioning, state, repairs
	RoleOrchestrator Role = "orchestrator" // conversation and run state, every task and result
	RoleClient       Role = "client"       // requests, direct calls, its own results, events
	RoleAgent        Role = "agent"        // its own tasks, results and registry keys
)

// Identity names one user of a secure mesh: a role, and for agents and
// clients a name (the agent's name; any name for a client).
type Identity struct {
	Role Role
	Name string
	// Versions are, for an agent, the versions (comma-separated, so that
	// an Identity stays comparable) whose own consumers its credentials
	// may take tasks from (mesh.task.<agent>.v.<version>, docs/protocol.md
	// "Versions and rollouts"). They are granted when the credentials are
	// issued and are not part of the user name.
	Versions string
}

// VersionList returns the versions of Versions.
func (id Identity) VersionList() []string {
	if id.Versions == "" {
		return nil
	}
	return strings.Split(id.Versions, ",")
}

// User returns the user name of the identity, the name in its user JWT and
// the last token of its inbox prefix: "agent-TextAgent", "client-alice",
// "orchestrator", "admin".
func (id Identity) User() string {
	if id.Name == "" {
		return string(id.Role)
	}
	return string(id.Role) + "-" + id.Name
}

// InboxPrefix returns _INBOX.<user>: a secure mesh lets an identity read
// replies (JetStream acks, pulled messages, answers) only under its own
// prefix, so no one reads another's.
func (id Identity) InboxPrefix() string { return "_INBOX." + id.User() }

// Validate reports whether the identity can be issued: a known role, a name
// for agents and clients (an agent name's rules: ValidateAgentName), none
// for the orchestrator and admin.
func (id Identity) Validate() error {
	switch id.Role {
	case RoleAdmin, RoleOrchestrator:
		if id.Name != "" {
			return fmt.Errorf("%w: the %s identity takes no name (got %q)", ErrInvalidName, id.Role, id.Name)
		}
		return nil
	case RoleAgent, RoleClient:
		if err := validateStrict(string(id.Role)+" name", id.Name, maxAgentNameLen); err != nil {
			return err
		}
		if id.Versions != "" && id.Role != RoleAgent {
			return fmt.Errorf("%w: versions %q: only an agent identity serves versions", ErrInvalidName, id.Versions)
		}
		for _, v := range id.VersionList() {
			if _, err := VersionToken(v); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: role %q: use agent, client, orchestrator or admin", ErrInvalidName, id.Role)
	}
}

// ParseUser is the inverse of Identity.User.
func ParseUser(user string) (Identity, error) {
	role, name, _ := strings.Cut(user, "-")
	id := Identity{Role: Role(role), Name: name}
	if err := id.Validate(); err != nil {
		return Identity{}, fmt.Errorf("user %q is no agentmesh identity: %w", user, err)
	}
	return id, nil
}

// CredsIdentity reads the identity from the user JWT in a credentials file
// (as `agentmesh creds` prints them).
func CredsIdentity(path string) (Identity, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Identity{}, fmt.Errorf("credentials file (NATS_CREDS / --creds): %w", err)
	}
	token, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		return Identity{}, fmt.Errorf("credentials file %s: %w", path, err)
	}
	claims, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return Identity{}, fmt.Errorf("credentials file %s: the user JWT: %w", path, err)
	}
	return ParseUser(claims.Name)
}

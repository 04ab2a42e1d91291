package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/security"
)

func init() { register(newCredsCmd) }

// secureFlags are the flags of server and up about the secure mode.
type secureFlags struct {
	on        bool
	cert, key string
	credsDir  string   // where issued credentials go; default STORE/secure/creds
	issue     []string // users to issue credentials for at start
}

func (s *secureFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&s.on, "secure", false, "require TLS and credentials (JWT); keys, CA and certificate are made under STORE/secure on first start and reused")
	f.StringVar(&s.cert, "tls-cert", "", "with --secure: the server's TLS certificate (PEM) instead of a generated one; --tls-ca names its CA")
	f.StringVar(&s.key, "tls-key", "", "with --secure: the key of --tls-cert")
	f.StringVar(&s.credsDir, "creds-dir", "", "with --secure: where credentials files (USER.creds) and a copy of the CA (ca.pem) go (default STORE/secure/creds)")
	f.StringArrayVar(&s.issue, "issue", nil, "with --secure: issue credentials for this user at start, e.g. orchestrator, agent-TextAgent, client-alice (repeatable)")
}

// secureServer sets opts up for the secure mode when asked: it makes or
// loads the keys and TLS files under the store, and points this process at
// the admin credentials and the CA, so what it provisions it does as admin.
func (a *app) secureServer(opts *embedded.Options, s secureFlags) (*security.Server, error) {
	if !s.on {
		if s.cert != "" || s.key != "" {
			return nil, errors.New("--tls-cert and --tls-key need --secure")
		}
		return nil, nil
	}
	sec, err := security.Setup(opts.StoreDir, security.TLSFiles{CA: a.tlsCA, Cert: s.cert, Key: s.key}, opts.Host)
	if err != nil {
		return nil, err
	}
	opts.Configure = sec.Configure
	a.credsDir = s.credsDir
	if a.credsDir == "" {
		a.credsDir = filepath.Join(sec.Authority.Dir(), "creds")
	}
	if err := os.MkdirAll(a.credsDir, 0o700); err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(sec.TLS.CA)
	if err == nil {
		err = os.WriteFile(filepath.Join(a.credsDir, "ca.pem"), ca, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("copying the CA to %s: %w", a.credsDir, err)
	}
	for _, user := range s.issue {
		id, err := bus.ParseUser(user)
		if err != nil {
			return nil, fmt.Errorf("--issue: %w", err)
		}
		if _, err := a.credsFile(sec, id); err != nil {
			return nil, err
		}
	}
	admin, err := a.credsFile(sec, bus.Identity{Role: bus.RoleAdmin})
	if err != nil {
		return nil, err
	}
	a.creds, a.tlsCA = admin, sec.TLS.CA
	return sec, nil
}

// credsFile returns the credentials file of id under the credentials
// directory (--creds-dir), issuing it the first time (0600).
func (a *app) credsFile(sec *security.Server, id bus.Identity) (string, error) {
	path := filepath.Join(a.credsDir, id.User()+".creds")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	names, err := bus.NewNames(a.prefix)
	if err != nil {
		return "", err
	}
	creds, err := sec.Authority.Creds(id, names)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, creds, 0o600)
}

// childIdentity returns the flags a child of up runs as id with on a
// secure mesh (its credentials file and the CA), none otherwise.
func (a *app) childIdentity(sec *security.Server, id bus.Identity) ([]string, error) {
	if sec == nil {
		return nil, nil
	}
	creds, err := a.credsFile(sec, id)
	if err != nil {
		return nil, err
	}
	return []string{"--creds", creds, "--tls-ca", sec.TLS.CA}, nil
}

// dialURL is a local server's URL as this host dials it: a server listening
// on every address is reached on loopback, a name its certificate holds.
func dialURL(url string) string {
	url = strings.Replace(url, "://0.0.0.0:", "://127.0.0.1:", 1)
	return strings.Replace(url, "://[::]:", "://[::1]:", 1)
}

func newCredsCmd(a *app) *cobra.Command {
	var store, out string
	var versions []string
	cmd := &cobra.Command{
		Use:   "creds agent NAME [--version V]... | client [NAME] | orchestrator | admin",
		Short: "Print a credentials file for one identity of a secure mesh",
		Long: `creds issues a NATS user JWT for one identity of a mesh run with
'agentmesh server --secure' (or 'up --secure') and prints it with its seed in
the standard credentials format that 'nats --creds', nats.go, nats.js and
every NATS client read. It signs with the account signing key under
--store/secure, so the server needs no restart: the new identity works at
once. Each call issues a new user; earlier ones stay valid.

Roles (docs/security.md has the full permission table):
  agent NAME     take NAME's tasks, answer under mesh.result.NAME., announce as NAME
  client [NAME]  submit chat requests, pipelines and direct calls; read events and
                 the results of its own direct calls (NAME defaults to "default")
  orchestrator   run chat turns and pipelines: every task and result, all state
  admin          everything, including provisioning and state

An agent's credentials take the tasks of mesh.task.NAME; with --version V
(repeatable) also those of version V's own consumer, which an instance run
with --agent-version V (or a contract of version V) takes pinned tasks and
its share of a rollout from ('agentmesh rollout', docs/protocol.md).

A secure mesh lets an identity read replies only on its own inbox prefix,
_INBOX.<role>-<name>; agentmesh and the examples set it from the file, with
the nats CLI pass --inbox-prefix.`,
		Example: `  agentmesh creds agent NodeWordCount --store .agentmesh > wordcount.creds
  agentmesh creds client alice -o alice.creds
  NATS_CREDS=alice.creds NATS_CA=.agentmesh/secure/ca.pem agentmesh chat "hello"
  nats --creds alice.creds --tlsca .agentmesh/secure/ca.pem --inbox-prefix _INBOX.client-alice stream ls`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := identityArgs(args)
			if err != nil {
				return err
			}
			if len(versions) > 0 {
				if id.Role != bus.RoleAgent {
					return usagef("--version: only an agent's credentials serve versions")
				}
				id.Versions = strings.Join(versions, ",")
				if err := id.Validate(); err != nil {
					return usagef("--version: %v", err)
				}
			}
			auth, err := security.Load(filepath.Join(store, security.Dir))
			if err != nil {
				return err
			}
			names, err := bus.NewNames(a.prefix)
			if err != nil {
				return err
			}
			creds, err := auth.Creds(id, names)
			if err != nil {
				return err
			}
			if out == "" {
				_, err = a.out.Write(creds)
				return err
			}
			return os.WriteFile(out, creds, 0o600)
		},
	}
	cmd.Flags().StringVar(&store, "store", ".agentmesh", "store directory of the secure server (its keys are under STORE/secure)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the credentials to this file (0600) instead of stdout")
	cmd.Flags().StringArrayVar(&versions, "version", nil, "agent: also take the tasks of this version of it (repeatable)")
	return cmd
}

// identityArgs reads ROLE [NAME].
func identityArgs(args []string) (bus.Identity, error) {
	id := bus.Identity{Role: bus.Role(args[0])}
	if len(args) > 1 {
		id.Name = args[1]
	}
	switch {
	case id.Role == bus.RoleClient && id.Name == "":
		id.Name = "default"
	case id.Role == bus.RoleAgent && id.Name == "":
		return id, errors.New("creds agent needs the agent's name: agentmesh creds agent NAME")
	}
	if err := id.Validate(); err != nil {
		return id, fmt.Errorf("creds %s: %w", strings.Join(args, " "), err)
	}
	return id, nil
}

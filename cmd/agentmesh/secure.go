package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
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
	quotas    quotaFlags
	flags     *pflag.FlagSet // the command's, to tell which flags were given
}

// quotaFlags are the mesh account's quotas (security.Quotas); 0 is none.
type quotaFlags struct {
	connections, streams, consumers int64
	store, memory                   envBytes
}

func (q *quotaFlags) register(f *pflag.FlagSet) {
	f.Int64Var(&q.connections, "max-connections", 0, "with --secure: connections the mesh's account allows at once, every identity's together and the server's own (NATS has no per-identity limit); 0 no limit")
	f.Var(&q.store, "max-store", "with --secure: JetStream file storage the account may use, e.g. 20GiB; it must hold what the mesh's streams reserve (--stream-max-bytes, --bucket-max-bytes, --files-max-bytes); 0 no limit")
	f.Var(&q.memory, "max-memory", "with --secure: JetStream memory storage the account may use, e.g. 1GiB; 0 no limit")
	f.Int64Var(&q.streams, "max-streams", 0, "with --secure: JetStream streams the account may have, the mesh's own streams, buckets and object store included; 0 no limit")
	f.Int64Var(&q.consumers, "max-consumers", 0, "with --secure: JetStream consumers the account may have, every agent's and client's included; 0 no limit")
}

// quotas returns the flags' quotas, and the flags given (none when f is
// nil: demo starts its stack with no such flags).
func (q *quotaFlags) quotas(f *pflag.FlagSet) (security.Quotas, []string) {
	var given []string
	for _, name := range []string{"max-connections", "max-store", "max-memory", "max-streams", "max-consumers"} {
		if f == nil {
			break
		}
		if fl := f.Lookup(name); fl != nil && fl.Changed {
			given = append(given, "--"+name)
		}
	}
	return security.Quotas{Connections: q.connections, Store: q.store.v, Memory: q.memory.v, Streams: q.streams, Consumers: q.consumers}, given
}

func (s *secureFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&s.on, "secure", false, "require TLS and credentials (JWT); keys, CA and certificate are made under STORE/secure on first start and reused")
	f.StringVar(&s.cert, "tls-cert", "", "with --secure: the server's TLS certificate (PEM) instead of a generated one; --tls-ca names its CA")
	f.StringVar(&s.key, "tls-key", "", "with --secure: the key of --tls-cert")
	f.StringVar(&s.credsDir, "creds-dir", "", "with --secure: where credentials files (USER.creds) and a copy of the CA (ca.pem) go (default STORE/secure/creds)")
	f.StringArrayVar(&s.issue, "issue", nil, "with --secure: issue credentials for this user at start, e.g. orchestrator, agent-TextAgent, client-alice (repeatable)")
	s.quotas.register(f)
	s.flags = f
}

// secureServer sets opts up for the secure mode when asked: it makes or
// loads the keys and TLS files under the store, and points this process at
// the admin credentials and the CA, so what it provisions it does as admin.
func (a *app) secureServer(opts *embedded.Options, s secureFlags) (*security.Server, error) {
	quotas, given := s.quotas.quotas(s.flags)
	if !s.on {
		if s.cert != "" || s.key != "" {
			return nil, errors.New("--tls-cert and --tls-key need --secure")
		}
		if len(given) > 0 {
			return nil, usagef("%s: quotas are the secure mesh account's limits and need --secure", strings.Join(given, ", "))
		}
		return nil, nil
	}
	if err := quotas.Validate(); err != nil {
		return nil, usageError{err}
	}
	sec, err := security.Setup(opts.StoreDir, security.TLSFiles{CA: a.tlsCA, Cert: s.cert, Key: s.key}, opts.Host)
	if err != nil {
		return nil, err
	}
	// The quotas of this start, in the account before the server loads it.
	if err := sec.Authority.SetQuotas(nil, quotas); err != nil {
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

// serveRevocations answers 'agentmesh creds revoke' for the secure server
// srv on nc, an admin connection of this process, until nc closes: it
// applies each revocation to srv and its store, and removes the revoked
// identity's file from the credentials directory (void now; the next start
// issues a new one).
func (a *app) serveRevocations(nc *nats.Conn, sec *security.Server, srv *embedded.Server) error {
	r := &security.Revoker{Authority: sec.Authority, Server: srv.NATS(), Revoked: func(user string) {
		_ = os.Remove(filepath.Join(a.credsDir, user+".creds"))
		fmt.Fprintf(a.errOut, "agentmesh: revoked %s: its credentials issued until now are refused\n", user)
	}, TenantRevoked: func(tenant, user string) {
		fmt.Fprintf(a.errOut, "agentmesh: revoked %s of tenant %s: its credentials issued until now are refused\n", user, tenant)
	}, Errorf: func(format string, args ...any) {
		fmt.Fprintf(a.errOut, "agentmesh: "+format+"\n", args...)
	}}
	_, err := r.Serve(nc)
	return err
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
	var store, out, tenant string
	var versions []string
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "creds agent NAME [--version V]... | client [NAME] | orchestrator | admin",
		Short: "Print a credentials file for one identity of a secure mesh; revoke an identity",
		Long: `creds issues a NATS user JWT for one identity of a mesh run with
'agentmesh server --secure' (or 'up --secure') and prints it with its seed in
the standard credentials format that 'nats --creds', nats.go, nats.js and
every NATS client read. It signs with the account signing key under
--store/secure, so the server needs no restart: the new identity works at
once. Each call issues a new user; earlier ones stay valid until they
expire (--expires) or the identity is revoked ('agentmesh creds revoke').

A client's files live in a bucket of its own (mesh_files_NAME): creds
makes it as admin on the mesh at --nats when it is running; else the
server makes it at its next start.

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

With --tenant NAME the identity is one of tenant NAME (an account the
server runs with --tenant NAME): it connects to that tenant's mesh only.

A secure mesh lets an identity read replies only on its own inbox prefix,
_INBOX.<role>-<name>; agentmesh and the examples set it from the file, with
the nats CLI pass --inbox-prefix.`,
		Example: `  agentmesh creds agent NodeWordCount --store .agentmesh > wordcount.creds
  agentmesh creds client alice -o alice.creds
  agentmesh creds client contractor --expires 24h -o contractor.creds
  agentmesh creds revoke client-alice
  agentmesh creds --tenant acme client alice -o acme-alice.creds
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
			if expires < 0 {
				return usagef("--expires %s: give a positive duration, e.g. 24h (or 0 for credentials that do not expire)", expires)
			}
			auth, err := security.Load(filepath.Join(store, security.Dir))
			if err != nil {
				return err
			}
			names, err := bus.NewNames(a.prefix)
			if err != nil {
				return err
			}
			var opts []security.CredsOption
			if expires > 0 {
				opts = append(opts, security.WithExpiry(expires))
			}
			var creds []byte
			if tenant != "" {
				creds, err = auth.TenantCreds(tenant, id, names, opts...)
			} else {
				creds, err = auth.Creds(id, names, opts...)
			}
			if err != nil {
				return err
			}
			if out == "" {
				_, err = a.out.Write(creds)
			} else {
				err = os.WriteFile(out, creds, 0o600)
			}
			if err != nil || id.Role != bus.RoleClient {
				return err
			}
			a.makeClientFiles(cmd.Context(), auth, filepath.Join(store, security.Dir), names, tenant, id.Name)
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&store, "store", ".agentmesh", "store directory of the secure server (its keys are under STORE/secure)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the credentials to this file (0600) instead of stdout")
	cmd.Flags().StringArrayVar(&versions, "version", nil, "agent: also take the tasks of this version of it (repeatable)")
	cmd.Flags().DurationVar(&expires, "expires", 0, "the credentials stop working this long after they are issued, e.g. 24h (default: never)")
	cmd.PersistentFlags().StringVar(&tenant, "tenant", "", "issue an identity of this tenant (an account the server runs with --tenant NAME) instead of the mesh account's")
	cmd.AddCommand(newCredsRevokeCmd(a, &store, &tenant))
	return cmd
}

func newCredsRevokeCmd(a *app, store, tenant *string) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke USER | revoke ROLE [NAME]",
		Short: "Revoke every credentials file of one identity, e.g. client-alice (admin)",
		Long: `revoke withdraws one identity of a secure mesh: every credentials file of
it issued until now stops working, and its connections are closed at once.
Credentials issued for it afterwards ('agentmesh creds') work. USER is
the identity as --issue names it: client-alice, agent-TextAgent,
orchestrator; admin cannot be revoked.

The server's process applies it ('agentmesh server --secure' or 'up
--secure'): revoke reads the keys of the identity's credentials from the
ledger under --store/secure (every 'creds' and --issue records one), sends
them on $AGENTMESH.ACCOUNT.REVOKE as admin (--creds, or a short-lived admin
credential it signs itself), and the server adds them, with its time, to
the account's revocations, which it keeps under STORE/secure, so a restart
keeps them. A revoked identity's file under the server's --creds-dir is
removed (the next start issues a new one). In a cluster every node's
process applies it to its own server and store; a node that is down at
the time misses it: revoke again once it is back. With --tenant NAME the
identity is tenant NAME's (the ledger under --store/secure/tenants/NAME),
revoked in that tenant's account only. See docs/security.md.`,
		Example: `  agentmesh creds revoke client-alice --store .agentmesh
  agentmesh creds revoke agent NodeWordCount
  agentmesh creds revoke --tenant acme client-alice
  agentmesh creds client alice -o alice.creds   # a new credential works`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := revokeArgs(args)
			if err != nil {
				return err
			}
			dir := filepath.Join(*store, security.Dir)
			auth, err := security.Load(dir)
			if err != nil {
				return err
			}
			nc, err := a.adminConn(cmd.Context(), auth, dir)
			if err != nil {
				return err
			}
			defer nc.Close()
			var reply security.RevokeReply
			if *tenant != "" {
				reply, err = auth.RevokeTenant(cmd.Context(), nc, *tenant, id.User())
			} else {
				reply, err = auth.Revoke(cmd.Context(), nc, id.User())
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return json.NewEncoder(a.out).Encode(reply)
			}
			fmt.Fprintf(a.out, "revoked %s: %d credentials (every one issued up to %s) no longer connect, and its connections are closed\n",
				reply.User, reply.Keys, time.Unix(reply.At, 0).UTC().Format(time.RFC3339))
			again := strings.TrimSpace(string(id.Role) + " " + id.Name)
			if *tenant != "" {
				again = "--tenant " + *tenant + " " + again
			}
			fmt.Fprintf(a.out, "issue new ones with: agentmesh creds %s --store %s\n", again, *store)
			return nil
		},
	}
}

// revokeArgs reads USER (client-alice) or ROLE [NAME] (client alice).
func revokeArgs(args []string) (bus.Identity, error) {
	if len(args) == 1 && strings.Contains(args[0], "-") {
		return bus.ParseUser(args[0])
	}
	return identityArgs(args)
}

// adminConn connects to the secure server as admin: with --creds when
// given (they must be admin's), else with a credential signed from the
// keys in dir that expires in a minute; the CA is --tls-ca or the one in
// dir.
func (a *app) adminConn(ctx context.Context, auth *security.Authority, dir string) (*nats.Conn, error) {
	opts := bus.ConnectOptions{URL: a.natsURL, CredsFile: a.creds, TLSCA: a.tlsCA, Name: "agentmesh creds revoke", RetryFor: a.connectWait.v}
	if opts.TLSCA == "" {
		opts.TLSCA = filepath.Join(dir, "ca.pem")
	}
	if opts.CredsFile != "" {
		if id, err := bus.CredsIdentity(opts.CredsFile); err != nil || id.Role != bus.RoleAdmin {
			return nil, fmt.Errorf("--creds %s: only admin may revoke (got %s, %v): leave --creds out to sign a short-lived admin credential from --store", opts.CredsFile, id.User(), err)
		}
		return opts.Connect(ctx)
	}
	names, err := bus.NewNames(a.prefix)
	if err != nil {
		return nil, err
	}
	creds, err := auth.Creds(bus.Identity{Role: bus.RoleAdmin}, names, security.WithExpiry(time.Minute))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "agentmesh-admin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts.CredsFile = filepath.Join(tmp, "admin.creds")
	if err := os.WriteFile(opts.CredsFile, creds, 0o600); err != nil {
		return nil, err
	}
	return opts.Connect(ctx)
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

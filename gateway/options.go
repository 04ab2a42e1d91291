package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// Option configures a Gateway.
type Option func(*config)

type config struct {
	prefix      string
	identity    bus.Identity
	tokens      []tokenConn
	handlers    []mounted
	source      string
	logger      *slog.Logger
	taskTimeout time.Duration
	maxBody     int64
	maxUpload   int64
	maxHeader   int64
	hosts       []string
	provision   bus.ProvisionOptions
	validate    Validator
	hooks       []namedHook
}

type tokenConn struct {
	token string
	nc    *nats.Conn
	id    bus.Identity
}

type mounted struct {
	pattern string
	h       http.Handler
}

// WithPrefix sets the mesh's subject prefix (default "mesh").
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithIdentity names the identity of the connection given to New on a
// secure mesh (bus.CredsIdentity of its credentials file): a client may not
// read conversation and run state, so those endpoints answer 403 for it.
func WithIdentity(id bus.Identity) Option { return func(c *config) { c.identity = id } }

// WithToken makes bearer tokens required on /api/*: a request carrying token
// acts on the mesh through nc, connected with the credentials of id. Give
// it once per token; requests with no token or another one get 401.
func WithToken(token string, nc *nats.Conn, id bus.Identity) Option {
	return func(c *config) { c.tokens = append(c.tokens, tokenConn{token: token, nc: nc, id: id}) }
}

// WithHandler mounts h at pattern (an http.ServeMux pattern such as
// "/a2a/" or "GET /.well-known/agent.json") beside the API, for bridges
// that serve the mesh under other paths. Bearer tokens are not checked for
// it: h does its own authentication.
func WithHandler(pattern string, h http.Handler) Option {
	return func(c *config) { c.handlers = append(c.handlers, mounted{pattern, h}) }
}

// WithSource sets the CloudEvents source of what the gateway publishes
// (default "agentmesh/gateway").
func WithSource(source string) Option { return func(c *config) { c.source = source } }

// WithLogger sets the logger of request failures (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithTaskTimeout sets how long an invoked task may take when the request
// names no timeout_ms (default 30s).
func WithTaskTimeout(d time.Duration) Option { return func(c *config) { c.taskTimeout = d } }

// WithMaxBody bounds request bodies other than file uploads (default 1 MiB);
// a larger one is refused with 413 too_large.
func WithMaxBody(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithMaxHeader bounds a request's line and headers (default 32 KiB); a
// larger one is refused with 431 too_large. Server sets the same bound on
// the HTTP server, so a larger one is not even read whole.
func WithMaxHeader(n int64) Option { return func(c *config) { c.maxHeader = n } }

// WithHosts names more hosts (a name, or host:port) the gateway is reached
// by when it listens on a loopback address behind a proxy on the same
// machine that passes the users' Host on: requests for them are served,
// and pages of their http and https origins are the gateway's own. By
// default a loopback gateway serves loopback names only (against DNS
// rebinding).
func WithHosts(hosts ...string) Option {
	return func(c *config) { c.hosts = append(c.hosts, hosts...) }
}

// WithMaxUpload bounds one uploaded file (default 256 MiB); a larger one
// is refused with 413 too_large and nothing is stored.
func WithMaxUpload(n int64) Option { return func(c *config) { c.maxUpload = n } }

// WithProvision sets what the gateway's connections provision when they
// bind to the mesh (default: bind, creating what is missing, changing
// nothing that exists; identities other than admin only bind).
func WithProvision(o bus.ProvisionOptions) Option { return func(c *config) { c.provision = o } }

// Validator checks a pipeline spec against the live contracts lookup
// returns, as the orchestrator does when the spec is submitted, and returns
// the waves it would run. The orchestrator's is orchestrator.ValidatePipeline.
type Validator func(spec pipelinespec.PipelineSpec, lookup func(agent string) (schemas.AgentContract, bool)) (waves [][]string, err error)

// WithValidator checks submitted and validated pipelines with v before they
// are sent (required): a spec the orchestrator would refuse gets its 400 at
// once, with every problem, and /api/pipelines/validate answers v's waves.
func WithValidator(v Validator) Option { return func(c *config) { c.validate = v } }

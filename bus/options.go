package bus

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultURL is the NATS server used when no URL is configured.
const DefaultURL = "nats://127.0.0.1:4222"

const (
	defaultConnectTimeout = 5 * time.Second
	reconnectWait         = time.Second
	reconnectJitter       = 500 * time.Millisecond
	firstRetryDelay       = 250 * time.Millisecond
	maxRetryDelay         = 5 * time.Second
)

// ConnectOptions say how to reach and authenticate to a NATS server. The zero
// value connects to DefaultURL without credentials.
type ConnectOptions struct {
	URL          string // one URL or a comma-separated list; default DefaultURL
	CredsFile    string // JWT user credentials file
	NKeySeedFile string // NKey seed file
	User         string
	Password     string
	Token        string
	TLSCA        string // CA certificate file to trust
	TLSCert      string // client certificate file (with TLSKey)
	TLSKey       string // client key file
	Name         string // connection name shown by the server

	// RetryFor keeps trying the first connection for at most this long while
	// no server answers (a server starting next to this process), waiting
	// 250ms, then twice as long each time up to 5s. Zero tries once. Refused
	// credentials and bad settings are never retried.
	RetryFor time.Duration
	// OnRetry, when set, is told of each failed attempt before the wait.
	OnRetry func(attempt int, wait time.Duration, err error)
}

// OptionsFromEnv reads NATS_URL, NATS_CREDS, NATS_NKEY, NATS_USER,
// NATS_PASSWORD, NATS_TOKEN, NATS_CA, NATS_CERT and NATS_KEY.
func OptionsFromEnv() ConnectOptions {
	return ConnectOptions{
		URL:          os.Getenv("NATS_URL"),
		CredsFile:    os.Getenv("NATS_CREDS"),
		NKeySeedFile: os.Getenv("NATS_NKEY"),
		User:         os.Getenv("NATS_USER"),
		Password:     os.Getenv("NATS_PASSWORD"),
		Token:        os.Getenv("NATS_TOKEN"),
		TLSCA:        os.Getenv("NATS_CA"),
		TLSCert:      os.Getenv("NATS_CERT"),
		TLSKey:       os.Getenv("NATS_KEY"),
	}
}

// Connect dials the server. Once connected, the connection reconnects forever,
// about once a second. Each dial gives up when ctx ends, or after 5 s when
// ctx has no deadline; while no server answers, Connect dials again with
// back-off for up to RetryFor. The error says which URL failed and what to
// do, and wraps ErrNoServer or ErrAuth where that is the cause.
func (o ConnectOptions) Connect(ctx context.Context) (*nats.Conn, error) {
	start := time.Now()
	delay := firstRetryDelay
	for attempt := 1; ; attempt++ {
		nc, err := o.dial(ctx)
		if err == nil || !errors.Is(err, ErrNoServer) || o.RetryFor <= 0 {
			return nc, err
		}
		waited := time.Since(start)
		if waited+delay > o.RetryFor {
			return nil, fmt.Errorf("%w; gave up after %d attempts in %s", err, attempt, waited.Round(time.Millisecond))
		}
		if o.OnRetry != nil {
			o.OnRetry(attempt, delay, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w; stopped waiting: %w", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// dial makes one connection attempt.
func (o ConnectOptions) dial(ctx context.Context) (*nats.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rawURL := o.URL
	if rawURL == "" {
		rawURL = DefaultURL
	}
	shown := redactURLs(rawURL)
	opts, err := o.natsOptions(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w", shown, err)
	}

	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(rawURL, opts...)
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, explainConnectError(shown, r.err)
		}
		if o.CredsFile != "" {
			// An agentmesh identity signs the tasks it sends and checks
			// who sent the tasks it takes (CredentialsOf).
			if c, err := LoadCredentials(o.CredsFile); err == nil {
				credentials.Store(r.nc, c)
			}
		}
		return r.nc, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("connecting to NATS at %s: %w", shown, ctx.Err())
	}
}

func (o ConnectOptions) natsOptions(ctx context.Context) ([]nats.Option, error) {
	timeout := defaultConnectTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	opts := []nats.Option{
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectJitter(reconnectJitter, reconnectJitter),
	}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	if o.CredsFile != "" {
		if _, err := os.Stat(o.CredsFile); err != nil {
			return nil, fmt.Errorf("credentials file (NATS_CREDS / --creds): %w", err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
		// An agentmesh identity reads replies only under its own inbox
		// prefix on a secure mesh; other credentials keep the default.
		if id, err := CredsIdentity(o.CredsFile); err == nil {
			opts = append(opts, nats.CustomInboxPrefix(id.InboxPrefix()),
				nats.ClosedHandler(func(nc *nats.Conn) { credentials.Delete(nc) }))
		}
	}
	if o.NKeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file %s (NATS_NKEY): %w", o.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, errors.New("TLS client certificate needs both a certificate (NATS_CERT) and a key (NATS_KEY)")
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return opts, nil
}

func explainConnectError(shown string, err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired),
		errors.Is(err, nats.ErrAuthRevoked), errors.Is(err, nats.ErrAccountAuthExpired),
		strings.Contains(strings.ToLower(err.Error()), "authorization"):
		return fmt.Errorf("%w: the NATS server at %s refused the credentials (%v): check NATS_CREDS, NATS_NKEY, NATS_USER/NATS_PASSWORD or NATS_TOKEN (--creds)", ErrAuth, shown, err)
	case errors.Is(err, nats.ErrMaxAccountConnectionsExceeded), errors.Is(err, nats.ErrMaxConnectionsExceeded):
		return fmt.Errorf("connecting to NATS at %s: %w: the server, or the account of these credentials, has all the connections it allows: close some, or raise the limit (agentmesh server --max-connections)", shown, err)
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%w at %s (%v): start one with `agentmesh server` or pass --nats URL (NATS_URL)", ErrNoServer, shown, err)
	default:
		return fmt.Errorf("connecting to NATS at %s: %w: check the URL (--nats, NATS_URL) and TLS settings (NATS_CA, NATS_CERT, NATS_KEY)", shown, err)
	}
}

// redactURLs hides passwords and tokens in a comma-separated URL list.
func redactURLs(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				p = u.Redacted()
			} else {
				u.User = url.User("xxxxx")
				p = u.String()
			}
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

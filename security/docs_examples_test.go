package security_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// violations collects the permission violations the server reports to a
// connection.
type violations struct {
	mu   sync.Mutex
	errs []error
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err)
}

// waitFor waits until a violation naming subject was reported, or ctx ends.
func (v *violations) waitFor(ctx context.Context, subject string) bool {
	for {
		v.mu.Lock()
		for _, err := range v.errs {
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
				v.mu.Unlock()
				return true
			}
		}
		v.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestSecurityDocNatsExample does what docs/security.md's `nats` command
// does, with nats.go: connect as the client alice with the CA, the
// credentials and the inbox prefix written there, and run the command (a
// JetStream API request). It must succeed: a documented example that the
// permissions refuse is a wrong document.
func TestSecurityDocNatsExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`nats --server \S+ --tlsca \S+ --creds (\w+)\.creds \\\n\s*--inbox-prefix (\S+) (.+)\n`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/security.md has no `nats --server ... --creds NAME.creds --inbox-prefix P COMMAND` example")
	}
	user, prefix, command := string(m[1]), string(m[2]), strings.Fields(string(m[3]))
	id := bus.Identity{Role: bus.RoleClient, Name: user}
	if want := "_INBOX." + id.User(); prefix != want {
		t.Errorf("the example's inbox prefix is %s; %s may subscribe only under %s", prefix, id.User(), want)
	}

	s := securetest.Start(t)
	var v violations
	nc, err := nats.Connect(s.URL(), nats.UserCredentials(s.Creds(t, id)), nats.RootCAs(s.CA()),
		nats.CustomInboxPrefix(prefix), nats.ErrorHandler(v.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch {
	case len(command) == 3 && command[0] == "stream" && command[1] == "info":
		st, err := js.Stream(ctx, command[2]) // $JS.API.STREAM.INFO.<name>
		if err != nil {
			t.Fatalf("nats %s as %s: %v", strings.Join(command, " "), id.User(), err)
		}
		if st.CachedInfo().Config.Name != command[2] {
			t.Errorf("stream info answered for %q", st.CachedInfo().Config.Name)
		}
	case len(command) == 2 && command[0] == "stream" && command[1] == "ls":
		names := js.StreamNames(ctx) // $JS.API.STREAM.NAMES, as nats stream ls asks first
		for range names.Name() {
		}
		if names.Err() != nil || v.waitFor(ctx, "$JS.API.STREAM.NAMES") {
			t.Fatalf("nats stream ls as %s fails: %v %v", id.User(), names.Err(), v.errs)
		}
	default:
		t.Fatalf("the example runs `nats %s`, which this test does not know how to run", strings.Join(command, " "))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.errs) > 0 {
		t.Errorf("the example caused errors: %v", v.errs)
	}
}

// TestBridgesDocClientPermissions checks what docs/bridges.md tells of a
// client's credentials against a secure server: it may not publish cancel
// requests, and it may (or, if the document says so, may not) write the
// object store.
func TestBridgesDocClientPermissions(t *testing.T) {
	raw, err := os.ReadFile("../docs/bridges.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(raw)), " ")
	i := strings.Index(doc, "A client may not publish cancel requests")
	if i < 0 {
		t.Fatal("docs/bridges.md no longer says what a client may not publish; update this test")
	}
	claim := doc[i:min(len(doc), i+600)]
	saysNoWrite := strings.Contains(claim, "nor write to the object store")

	s := securetest.Start(t)
	id := bus.Identity{Role: bus.RoleClient, Name: "bridge"}
	var v violations
	opts := bus.ConnectOptions{URL: s.URL(), CredsFile: s.Creds(t, id), TLSCA: s.CA(), Name: id.User()}
	nc, err := opts.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetErrorHandler(v.handler)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	control, _ := s.Names.Control("TextAgent")
	if err := nc.Publish(control, []byte(`{"taskid":"t-1"}`)); err != nil {
		t.Fatal(err)
	}
	if !v.waitFor(ctx, control) {
		t.Errorf("a client published a cancel request on %s; docs/bridges.md says it may not", control)
	}

	js, _ := jetstream.New(nc)
	s.ClientFiles(t, id.Name) // as `agentmesh creds client bridge` makes it
	obs, err := js.ObjectStore(ctx, s.Names.ClientFilesStore(id.Name))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := resolvers.NewObjectStore(obs).Store(ctx, bytes.NewReader([]byte("a file part")), "", map[string]string{resolvers.MetaFilename: "part.txt"})
	switch {
	case saysNoWrite && err == nil:
		t.Errorf("docs/bridges.md says a client may not write the object store, but %s stored %s", id.User(), ref.ID)
	case !saysNoWrite && err != nil:
		t.Errorf("docs/bridges.md says a client may write the object store, but storing failed: %v", err)
	}
}

package bus_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/security"
)

// credsOf issues credentials for id under a (made in dir when missing)
// and loads them.
func credsOf(t testing.TB, dir string, id bus.Identity) *bus.Credentials {
	t.Helper()
	a, err := security.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a.Creds(id, bus.MustNames(""))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), id.User()+".creds")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := bus.LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func taskMsg(t testing.TB, replyTo string) *nats.Msg {
	t.Helper()
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "test", map[string]string{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetExt(bus.ExtReplyTo, replyTo)
	msg, err := bus.Encode("mesh.task.TextAgent", ev)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// A task signed by an identity of the mesh names it; a task changed after
// signing, unsigned, signed with another's JWT or by another mesh does not.
func TestTaskSender(t *testing.T) {
	mesh := t.TempDir()
	agent := credsOf(t, mesh, bus.Identity{Role: bus.RoleAgent, Name: "TextAgent"})
	alice := credsOf(t, mesh, bus.Identity{Role: bus.RoleClient, Name: "alice"})
	bob := credsOf(t, mesh, bus.Identity{Role: bus.RoleClient, Name: "bob"})
	other := credsOf(t, t.TempDir(), bus.Identity{Role: bus.RoleClient, Name: "bob"})

	msg := taskMsg(t, "mesh.result.TextAgent.client.alice.t1")
	if err := alice.Sign(msg); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second from the cache of verified JWTs
		if id, err := agent.Sender(msg); err != nil || id != alice.Identity() {
			t.Fatalf("Sender = %v, %v; want client-alice", id, err)
		}
	}

	cases := map[string]func() *nats.Msg{
		"unsigned": func() *nats.Msg { return taskMsg(t, "x") },
		"replyto changed": func() *nats.Msg {
			m := taskMsg(t, "mesh.result.TextAgent.client.alice.t1")
			_ = alice.Sign(m)
			m.Header.Set("ce-replyto", "mesh.result.TextAgent.client.bob.t1")
			return m
		},
		"data changed": func() *nats.Msg {
			m := taskMsg(t, "r")
			_ = alice.Sign(m)
			m.Data = []byte(`{"text":"pwned"}`)
			return m
		},
		"other subject": func() *nats.Msg {
			m := taskMsg(t, "r")
			_ = alice.Sign(m)
			m.Subject = "mesh.task.OtherAgent"
			return m
		},
		"bob's JWT, alice's signature": func() *nats.Msg {
			m, b := taskMsg(t, "r"), taskMsg(t, "r")
			_ = alice.Sign(m)
			_ = bob.Sign(b)
			m.Header.Set(bus.HeaderSender, b.Header.Get(bus.HeaderSender))
			return m
		},
		"another mesh's bob": func() *nats.Msg {
			m := taskMsg(t, "r")
			_ = other.Sign(m)
			return m
		},
		"garbage": func() *nats.Msg {
			m := taskMsg(t, "r")
			m.Header.Set(bus.HeaderSender, "not a jwt")
			m.Header.Set(bus.HeaderSignature, "AAAA")
			return m
		},
	}
	for name, mk := range cases {
		if id, err := agent.Sender(mk()); !errors.Is(err, bus.ErrUnsigned) {
			t.Errorf("%s: Sender = %v, %v; want ErrUnsigned", name, id, err)
		}
	}
}

// FuzzTaskSender: the sender headers of a task are outside input; no
// value of them names an identity without a valid signature.
func FuzzTaskSender(f *testing.F) {
	mesh := f.TempDir()
	agent := credsOf(f, mesh, bus.Identity{Role: bus.RoleAgent, Name: "TextAgent"})
	alice := credsOf(f, mesh, bus.Identity{Role: bus.RoleClient, Name: "alice"})
	signed := taskMsg(f, "r")
	if err := alice.Sign(signed); err != nil {
		f.Fatal(err)
	}
	f.Add(signed.Header.Get(bus.HeaderSender), signed.Header.Get(bus.HeaderSignature), []byte(`{"text":"hello"}`))
	f.Add("", "", []byte(nil))
	f.Add("eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.AAAA", "AAAA", []byte("x"))
	f.Fuzz(func(t *testing.T, sender, sig string, data []byte) {
		m := taskMsg(t, "r")
		m.Data = data
		m.Header.Set(bus.HeaderSender, sender)
		m.Header.Set(bus.HeaderSignature, sig)
		id, err := agent.Sender(m)
		if err == nil && (id != alice.Identity() || sig != signed.Header.Get(bus.HeaderSignature)) {
			t.Fatalf("Sender = %v for an unsigned variation", id)
		}
		if err != nil && !errors.Is(err, bus.ErrUnsigned) {
			t.Fatalf("Sender error %v does not wrap ErrUnsigned", err)
		}
	})
}

// BenchmarkTaskSender measures signing a task and checking its sender.
func BenchmarkTaskSender(b *testing.B) {
	mesh := b.TempDir()
	agent := credsOf(b, mesh, bus.Identity{Role: bus.RoleAgent, Name: "TextAgent"})
	alice := credsOf(b, mesh, bus.Identity{Role: bus.RoleClient, Name: "alice"})
	msg := taskMsg(b, "mesh.result.TextAgent.client.alice.t1")
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if err := alice.Sign(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, err := agent.Sender(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package security_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// cliConn connects as id the way the nats CLI does with a context made
// for it: the credentials file, the CA, the identity's inbox prefix, and
// nothing of agentmesh (no task signing).
func cliConn(t *testing.T, m *secureMesh, id bus.Identity) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(m.URL(), nats.UserCredentials(m.Creds(t, id)), nats.RootCAs(m.CA()),
		nats.CustomInboxPrefix(id.InboxPrefix()))
	if err != nil {
		t.Fatalf("connecting as %s: %v", id.User(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// cliTask is a task as one would type it for `nats req mesh.task.TextAgent`:
// CloudEvents headers by hand, no Agentmesh-Sender nor -Signature.
func cliTask(subject, id string) *nats.Msg {
	msg := nats.NewMsg(subject)
	msg.Header.Set("ce-specversion", "1.0")
	msg.Header.Set("ce-id", id)
	msg.Header.Set("ce-source", "nats-cli")
	msg.Header.Set("ce-type", bus.TypeTaskRequested)
	msg.Header.Set("Content-Type", "application/json")
	msg.Data = []byte(`{"inputs":{"text":{"data_type":"TEXT","value":"pwned"}},"params":{"op":"upper"}}`)
	return msg
}

// A task a plain NATS client publishes on a secure mesh without the
// signature agentmesh clients add (or with a forged one) is not run, and
// its sender hears why: a notice with code forbidden on
// mesh.dead.<agent>.refused, which it may read (the full dead letter on
// mesh.dead.<agent> it may not), naming the task id and the stream
// sequence its publish was acknowledged with.
func TestUnsignedTaskIsRefusedWhereItsSenderReads(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	nc := cliConn(t, m, alice)
	task, _ := m.names.Task(text.Name)
	refused, _ := m.names.DeadRefused(text.Name)
	notices := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(refused, notices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	forged := cliTask(task, "cli-forged-1")
	forged.Header.Set(bus.HeaderSender, "eyJhbGciOiJlZDI1NTE5In0.e30.c2ln")
	forged.Header.Set(bus.HeaderSignature, "c2lnbmF0dXJl")
	for _, tc := range []struct {
		name, id     string
		msg          *nats.Msg
		code, reason string
	}{
		{"unsigned (nats req)", "cli-1", cliTask(task, "cli-1"), schemas.CodeForbidden, "not signed by an identity of this mesh: send it with agentmesh credentials (headers " + bus.HeaderSender},
		{"forged signature", "cli-forged-1", forged, schemas.CodeForbidden, "not signed by an identity of this mesh: the sender JWT"},
		{"no headers, no body", "", &nats.Msg{Subject: task}, schemas.CodeMalformedEvent, "publish in binary mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// nats req: the stream's acknowledgement is the reply.
			reply, err := nc.RequestMsg(tc.msg, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var ack struct {
				Stream string `json:"stream"`
				Seq    uint64 `json:"seq"`
			}
			if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Seq == 0 {
				t.Fatalf("the publish was not acknowledged by the stream: %q (%v)", reply.Data, err)
			}
			n := waitNotice(t, notices, ack.Seq)
			if got := n.Header.Get(bus.HeaderDeadCode); got != tc.code {
				t.Errorf("code %q, want %s", got, tc.code)
			}
			if got := n.Header.Get(bus.HeaderDeadStream); got != ack.Stream {
				t.Errorf("stream %q, want %s", got, ack.Stream)
			}
			if reason := n.Header.Get(bus.HeaderDeadReason); !strings.Contains(reason, tc.reason) {
				t.Errorf("the reason %q does not say %q", reason, tc.reason)
			}
			if got := n.Header.Get("ce-id"); got != tc.id {
				t.Errorf("task id %q, want %q", got, tc.id)
			}
			if len(n.Data) != 0 || n.Header.Get("ce-source") != "" {
				t.Errorf("the notice, which every identity reads, carries the task: %v %q", n.Header, n.Data)
			}
			if tc.id != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if raw, err := m.res.Results.GetLastMsgForSubject(ctx, m.names.Result(text.Name, tc.id)); err == nil {
					t.Errorf("the refused task was run: %s", raw.Data)
				}
			}
		})
	}

	// The notices are in MESH_DEAD: a sender that was not listening reads
	// them with a consumer of its own, filtered on them.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	oc, err := js.OrderedConsumer(ctx, m.names.DeadStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{refused}})
	if err != nil {
		t.Fatalf("alice may not read %s: %v", refused, err)
	}
	batch, err := oc.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for range batch.Messages() {
		stored++
	}
	if stored != 3 {
		t.Errorf("%d refusals stored on %s, want 3 (one per task)", stored, refused)
	}

	// The dead letters themselves, with the tasks' data, stay unreadable.
	dead, _ := m.names.Dead(text.Name)
	c := m.connect(t, alice)
	if _, err := c.SubscribeSync(dead); err != nil {
		t.Fatal(err)
	}
	c.denied(t, "Subscription", dead)
	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer dcancel()
	if _, err := c.js.OrderedConsumer(dctx, m.names.DeadStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{dead}}); err == nil {
		t.Errorf("alice made a consumer on %s", dead)
	}
}

// waitNotice waits for the refusal notice of the task stored at seq.
func waitNotice(t *testing.T, notices <-chan *nats.Msg, seq uint64) *nats.Msg {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case n := <-notices:
			if n.Header.Get(bus.HeaderDeadSequence) == strconv.FormatUint(seq, 10) {
				return n
			}
		case <-timeout:
			t.Fatalf("no refusal on the notice subject for the task at sequence %d", seq)
			return nil
		}
	}
}

package chat_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkChatTurn measures one offline-planned chat turn that calls one
// agent (request -> orchestrator -> task -> agent -> result -> state ->
// response), next to the raw nats.go baseline of the same hops: a
// JetStream-published request taken by a pull consumer, a JetStream task
// taken by a second pull consumer, and a core reply. The ratio is reported
// as x-raw on the chat sub-benchmark.
func BenchmarkChatTurn(b *testing.B) {
	var raw time.Duration
	b.Run("raw-nats", func(b *testing.B) {
		m := meshtest.New(b)
		nc := m.Srv.Conn(b)
		js, _ := jetstream.New(nc)
		ctx := context.Background()
		mk := func(name, subj string) jetstream.Consumer {
			s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Retention: jetstream.WorkQueuePolicy})
			if err != nil {
				b.Fatal(err)
			}
			c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		reqs, tasks := mk("BENCH_REQ", "bench.req"), mk("BENCH_TASK", "bench.task")
		rc, _ := reqs.Consume(func(msg jetstream.Msg) {
			_, _ = js.Publish(ctx, "bench.task", msg.Data())
			_ = msg.Ack()
		})
		defer rc.Stop()
		tc, _ := tasks.Consume(func(msg jetstream.Msg) {
			_ = nc.Publish("bench.reply."+string(msg.Data()), []byte("done"))
			_ = msg.Ack()
		})
		defer tc.Stop()
		b.ResetTimer()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprint(i)
			sub, _ := nc.SubscribeSync("bench.reply." + id)
			if _, err := js.Publish(ctx, "bench.req", []byte(id)); err != nil {
				b.Fatal(err)
			}
			if _, err := sub.NextMsg(10 * time.Second); err != nil {
				b.Fatal(err)
			}
			_ = sub.Unsubscribe()
		}
		raw = time.Since(start) / time.Duration(b.N)
	})
	b.Run("chat-turn", func(b *testing.B) {
		m := meshtest.New(b)
		m.Agent(b, chatSearchContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			fc := schemas.FromIDs(schemas.ContentImages, "a", "b")
			return fixture.OK("ImageSearch", "found 2", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
		}, 4)
		chatReplica(b, m, nil, []string{"ImageSearch"})
		js := m.Srv.JetStream(b)
		nc := m.Srv.Conn(b)
		b.ResetTimer()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			conv := fmt.Sprintf("bench%d", i)
			sub, _ := nc.SubscribeSync(m.Srv.Names().Events(conv, "chat"))
			if _, _, err := client.SendChat(context.Background(), js, m.Srv.Names(), conv, "find sunsets", "bench"); err != nil {
				b.Fatal(err)
			}
			for {
				msg, err := sub.NextMsg(10 * time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if msg.Header.Get("ce-type") == "io.agentmesh.chat.responded" {
					break
				}
			}
			_ = sub.Unsubscribe()
		}
		per := time.Since(start) / time.Duration(b.N)
		if raw > 0 {
			b.ReportMetric(float64(per)/float64(raw), "x-raw")
		}
	})
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestREADMENatsExample does what the README's "Calling the mesh from any
// NATS client" section tells a reader to do, with nats.go in place of the
// nats CLI: subscribe to the result subject first, publish the task as
// written, see the result; then read it again from the stream named there.
func TestREADMENatsExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(readme)
	start := strings.Index(sec, "## Calling the mesh from any NATS client")
	if start < 0 {
		t.Fatal("README.md has no section \"Calling the mesh from any NATS client\"")
	}
	sec = sec[start:]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	sub := regexp.MustCompile(`nats sub '([^']+)'`).FindStringSubmatchIndex(sec)
	pub := regexp.MustCompile(`(?s)nats pub (\S+) --header Content-Type:(\S+) \\\n\s*'(.*?)'\n`).FindStringSubmatchIndex(sec)
	get := regexp.MustCompile(`nats stream get (\S+) --last-for (\S+)`).FindStringSubmatch(sec)
	if sub == nil || pub == nil || get == nil {
		t.Fatalf("the section lacks a nats sub, nats pub or nats stream get command:\n%s", sec)
	}
	if sub[0] > pub[0] {
		t.Fatal("the README subscribes after publishing: the subscription would miss the result")
	}
	resultSubj := sec[sub[2]:sub[3]]
	taskSubj, contentType, payload := sec[pub[2]:pub[3]], sec[pub[4]:pub[5]], sec[pub[6]:pub[7]]

	url := pipelineMesh(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	s, err := nc.SubscribeSync(resultSubj)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(taskSubj)
	msg.Header.Set("Content-Type", contentType)
	msg.Data = []byte(payload)
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	res, err := s.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no result on %s: %v", resultSubj, err)
	}
	var data struct {
		Success bool `json:"success"`
		Outputs map[string]struct {
			Value string `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(res.Data, &data); err != nil || !data.Success || data.Outputs["text"].Value != "HELLO" {
		t.Errorf("result %s (%v); the README promises outputs.text.value \"HELLO\"", res.Data, err)
	}
	if !strings.Contains(sec, "`outputs.text.value` is `\"HELLO\"`") {
		t.Error("the README no longer says what the result holds; say it and keep this test in step")
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, get[1])
	if err != nil {
		t.Fatalf("the README names stream %s: %v", get[1], err)
	}
	// The stream stores a message on its own queue: a subscriber can see
	// the result a moment before the stream holds it.
	var kept *jetstream.RawStreamMsg
	fixture.Until(ctx.Done(), func() bool {
		kept, err = stream.GetLastMsgForSubject(ctx, get[2])
		return !errors.Is(err, jetstream.ErrMsgNotFound)
	})
	if err != nil || string(kept.Data) != string(res.Data) {
		t.Errorf("stream %s, last for %s: %v; want the result again", get[1], get[2], err)
	}
}

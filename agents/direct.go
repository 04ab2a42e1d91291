package agents

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmesh/agentmesh/schemas"
)

// EndpointCall is the name of the NATS micro endpoint every agent instance
// serves on mesh.call.<agent>: the direct call path.
const EndpointCall = "call"

// The direct call path: a task event sent with core request-reply to
// mesh.call.<agent> is decoded and validated by accept, run by run and
// stamped by stamp, exactly as a task taken from the stream, and the
// result event is the reply. There is no stream, no ack, no retry and no
// dead letter: the caller's timeout bounds the call, and a call that
// fails in a way a redelivery could cure is answered with a retryable
// failure instead.
//
// micro runs an endpoint's handler synchronously and measures its
// processing time around it, so an instance answers its direct calls one
// at a time and `nats micro stats` shows true requests, errors and
// processing time. The instances of an agent share micro's queue group
// "q", so more instances answer more calls at once.

// addCallEndpoint registers the direct call endpoint on svc.
func (r *Runtime) addCallEndpoint(svc micro.Service) error {
	return svc.AddEndpoint(EndpointCall, micro.HandlerFunc(r.serveCall),
		micro.WithEndpointSubject(r.callSubj),
		micro.WithEndpointMetadata(map[string]string{
			"format":   "task event (io.agentmesh.task.requested) in, result event out; see docs/protocol.md",
			"durable":  r.taskSubj,
			"delivery": "at-most-once",
		}))
}

// serveCall answers one direct call with the task's result event.
func (r *Runtime) serveCall(req micro.Request) {
	if req.Reply() == "" {
		r.log.Warn("direct call without a reply subject: send it with request-reply (nats req), or publish it to the durable subject", "subject", req.Subject(), "durable", r.taskSubj)
		_ = req.Error("400", "a direct call needs a reply subject", nil) // counted as an error by micro
		return
	}
	d := &delivery{raw: &nats.Msg{Subject: req.Subject(), Header: nats.Header(req.Headers()), Data: req.Data()}, attempt: 1, start: time.Now(), slot: noSlot{}}
	r.directGate.RLock()
	defer r.directGate.RUnlock()
	var res schemas.AgentResult
	err := r.accept(d)
	var foreign error
	if err == nil {
		foreign = r.directOwner(d)
	}
	switch {
	case r.directClosed:
		res = schemas.Failure(r.contract.Name, schemas.CodeUnavailable, "this instance of "+r.contract.Name+" is stopping: call again (another instance answers)", true)
	case err != nil:
		res = schemas.Failure(r.contract.Name, schemas.CodeMalformedEvent, "task event on "+req.Subject()+": "+oneLine(err), false)
	case foreign != nil:
		res = schemas.Failure(r.contract.Name, schemas.CodeForbidden, oneLine(foreign), false)
	default:
		var retry error
		if res, retry = r.run(d); retry != nil {
			res = r.unretried(retry)
		}
	}
	r.stamp(d, &res)
	outcome := schemas.OutcomeCompleted
	if !res.Success {
		outcome = schemas.OutcomeFailed
	}
	// Observed before the reply goes out, so that an observer has seen
	// the end of the task by the time its caller has the result.
	r.finished(d, outcome, res)
	if err := r.respondCall(req, d, res); err != nil {
		r.log.Error("answering a direct call", "task", d.event.ID, "err", err)
	}
}

// unretried turns a failure the durable path would retry into a retryable
// failed result: the direct path does not retry.
func (r *Runtime) unretried(cause error) schemas.AgentResult {
	code := schemas.CodeUnavailable
	if re, ok := errors.AsType[*schemas.ResultError](cause); ok && re.Code != "" {
		code = re.Code
	}
	return schemas.Failure(r.contract.Name, code, fmt.Sprintf("%s (a direct call is not retried: call again, or publish the task to %s, which retries)",
		oneLine(cause), r.taskSubj), true)
}

// respondCall sends the result event as the reply. A failed result also
// carries micro's error headers: Nats-Service-Error-Code, a number (see
// serviceCode), and Nats-Service-Error, "<code>: <message>".
func (r *Runtime) respondCall(req micro.Request, d *delivery, res schemas.AgentResult) error {
	msg, res, err := r.resultMessage(req.Reply(), d.event, res)
	if err != nil {
		// A result event that cannot be encoded still ends the call.
		_ = req.Error("500", "encoding the result event: "+oneLine(err), nil)
		return err
	}
	headers := micro.WithHeaders(micro.Headers(msg.Header))
	if res.Success {
		return req.Respond(msg.Data, headers)
	}
	e := res.Err().(*schemas.ResultError)
	desc := schemas.Clip(strings.Join(strings.Fields(e.Code+": "+e.Message), " "), 4096) // a header: the body has the whole
	return req.Error(strconv.Itoa(serviceCode(e.Code)), desc, msg.Data, headers)
}

// serviceCode is the number micro's Nats-Service-Error-Code header carries
// for a mesh error code (the micro protocol asks for a number): 400 for
// what the caller sent, 404 not found, 499 cancelled, 503 unavailable, 504
// timeout, 500 otherwise.
func serviceCode(code string) int {
	switch code {
	case schemas.CodeInvalidInput, schemas.CodeInvalidParams, schemas.CodeMalformedEvent:
		return 400
	case schemas.CodeNotFound:
		return 404
	case schemas.CodeCancelled:
		return 499
	case schemas.CodeUnavailable:
		return 503
	case schemas.CodeTimeout:
		return 504
	}
	return 500
}

// closeDirect waits for the direct calls in flight and makes the ones
// still queued on the endpoint's subscription answer "stopping".
func (r *Runtime) closeDirect() {
	r.directGate.Lock()
	r.directClosed = true
	r.directGate.Unlock()
}

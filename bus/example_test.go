package bus_test

import (
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// A task travels as a CloudEvent in binary mode: its attributes in NATS
// headers (ce-*), its data in the body, on the subject Names gives the
// agent's tasks. Decode reads it back and checks it.
func Example() {
	names := bus.MustNames("mesh")
	subject, err := names.Task("Shout")
	if err != nil {
		fmt.Println(err)
		return
	}
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("hello", "example")}}
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "/example", task)
	if err != nil {
		fmt.Println(err)
		return
	}
	ev.SetExt(bus.ExtRunID, "run-1")
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(msg.Subject, msg.Header.Get("ce-type"))

	got, err := bus.Decode(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	var req schemas.TaskRequest
	if err := got.DataAs(&req); err != nil {
		fmt.Println(err)
		return
	}
	text, _ := req.Inputs["text"].Text()
	fmt.Println(got.ID == ev.ID, got.Ext(bus.ExtRunID), text)
	fmt.Println(names.Result("Shout", "t-1"))
	// Output:
	// mesh.task.Shout io.agentmesh.task.requested
	// true run-1 hello
	// mesh.result.Shout.t-1
}

// Names refuses a name that cannot be a subject token, with an error that
// matches ErrInvalidName and says what is wrong.
func ExampleNames_Task() {
	_, err := bus.MustNames("mesh").Task("two words")
	fmt.Println(err != nil, errors.Is(err, bus.ErrInvalidName))
	// Output: true true
}

// Package proctest runs the processes a test starts (the agentmesh binary,
// node examples, SDK servers): it waits for the line a process prints when
// it is ready, keeps its stderr for the test's messages, and stops it when
// the test ends.
package proctest

// Package eval reads eval sets and scores chat turns against them. An eval
// set (YAML) lists cases, each a chat message with expectations on the
// final answer (contains, not_contains, regex), on the agents called (which,
// in what order, with which params), on the turn's state, cost and
// latency. `agentmesh eval FILE` runs each case N times against a live
// mesh, prints a table and JUnit XML, and exits by the set's threshold.
package eval

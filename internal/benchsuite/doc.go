// Package benchsuite holds the mesh's benchmarks as pairs: the mesh's way of
// doing something and the plain nats.go (or sdk-go) way of doing the same
// thing, measured on the same server in the same run so the ratio means
// something on a noisy machine. `agentmesh bench` runs the suite; the
// packages' `go test -bench` benchmarks run the same bodies.
package benchsuite

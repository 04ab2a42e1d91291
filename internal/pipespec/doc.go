// Package pipespec reads pipeline specs from files and text (YAML or JSON),
// with the sub-pipelines they name by file, and normalises them, for the
// orchestrator, the gateway and package client alike. It links no NATS.
package pipespec

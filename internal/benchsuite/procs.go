package benchsuite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// Role is a process of the shape scenarios (wave, chain, for_each, chat):
// they run the mesh's parts as separate processes, as a user does, and
// the hand-driven baseline sends its tasks to the same agent process.
type Role string

const (
	// RoleAgents serves the shape scenarios' agents (ShapeAgents).
	RoleAgents Role = "agents"
	// RoleOrchestrator runs one orchestrator replica with chat attached
	// (offline planner: no LLM), as `agentmesh orchestrator` does.
	RoleOrchestrator Role = "orchestrator"
)

// Roles lists the run-state scenarios' roles, in the order they are
// started.
var Roles = []Role{RoleAgents, RoleOrchestrator}

// allRoles lists every role: the run-state scenarios', then the task and
// pipeline scenarios' (hops.go).
var allRoles = append(slices.Clone(Roles), RoleHopAgents, RoleHopBaseline, RolePipelineAgents, RolePipelineOrchestrator)

// ShapeAgentConcurrency is how many tasks the agents process runs at once.
const ShapeAgentConcurrency = 16

// ReadyLine is what a role's process prints on stdout once it is ready.
func ReadyLine(r Role) string { return "benchsuite " + string(r) + " ready" }

// ParseRole checks a role's name.
func ParseRole(s string) (Role, error) {
	for _, r := range allRoles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(allRoles))
	for i, r := range allRoles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("benchmark role %q does not exist: use one of %s", s, strings.Join(names, ", "))
}

// RunRole plays role on nc until ctx ends, calling ready once it is
// ready: the agents process serves every shape agent; the orchestrator
// process runs a replica and is ready once it sees every shape agent (so
// start the agents first); the task and pipeline scenarios' roles are in
// hops.go. Both the agentmesh binary (a hidden subcommand) and the
// suite's test binary (re-executed) run it.
func RunRole(ctx context.Context, nc *nats.Conn, names bus.Names, role Role, ready func()) error {
	serve := func(run func(context.Context, Env) (io.Closer, error)) error {
		env, err := processEnv(nc, names)
		if err != nil {
			return err
		}
		c, err := run(ctx, env)
		if err != nil {
			return err
		}
		ready()
		<-ctx.Done()
		return c.Close()
	}
	switch role {
	case RoleHopAgents:
		return serve(runHopAgents)
	case RoleHopBaseline:
		return serve(runHopBaseline)
	case RolePipelineAgents:
		return serve(runPipelineAgents)
	case RolePipelineOrchestrator:
		return serve(func(ctx context.Context, env Env) (io.Closer, error) {
			return startOrchestrator(ctx, env, pipeNoop, pipeEmit)
		})
	case RoleAgents:
		env := Env{NC: nc, Names: names}
		var closers []io.Closer
		defer func() {
			for _, c := range closers {
				_ = c.Close()
			}
		}()
		for _, a := range ShapeAgents() {
			c, err := Serve(ctx, env, a, agents.WithConcurrency(ShapeAgentConcurrency))
			if err != nil {
				return fmt.Errorf("agent %s: %w", a.Contract().Name, err)
			}
			closers = append(closers, c)
		}
		ready()
		<-ctx.Done()
		return nil
	case RoleOrchestrator:
		o, err := orchestrator.New(nc, orchestrator.WithNames(names), orchestrator.WithChat())
		if err != nil {
			return err
		}
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		up, done := make(chan struct{}), make(chan error, 1)
		go func() { done <- o.RunReady(runCtx, func() { close(up) }) }()
		select {
		case <-up:
		case err := <-done:
			return fmt.Errorf("orchestrator: %w", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for _, a := range ShapeAgents() {
			if err := o.Registry().Wait(wctx, a.Contract().Name, 1); err != nil {
				stop()
				return errors.Join(fmt.Errorf("the orchestrator does not see agent %s (is the agents process up?): %w", a.Contract().Name, err), <-done)
			}
		}
		ready()
		return <-done
	}
	return fmt.Errorf("benchmark role %q does not exist", role)
}

// proc is a started role process.
type proc struct {
	cmd    *exec.Cmd
	stderr *proctest.Buffer
	exited chan struct{}
	err    error // cmd.Wait's, set before exited is closed
}

// startRole starts cmd (a process playing role) and returns once it
// printed ReadyLine(role); Close interrupts it and waits for it to end
// (killing it after ten seconds).
func startRole(cmd *exec.Cmd, role Role) (*proc, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stderr: &proctest.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s process (%s): %w", role, cmd.Path, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), ReadyLine(role)) {
				seen = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the %s process exited before it was ready: %v: %s", role, p.err, p.stderr)
	case <-time.After(60 * time.Second):
		return nil, errors.Join(fmt.Errorf("the %s process was not ready after a minute: %s", role, p.stderr), p.Close())
	}
}

// Close interrupts the process and waits for it to end.
func (p *proc) Close() error {
	if p.cmd.Process.Signal(os.Interrupt) == nil {
		select {
		case <-p.exited:
			return nil
		case <-time.After(10 * time.Second):
		}
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return nil
}

// Pid is the process's id.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

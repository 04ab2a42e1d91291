package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netLab is a private network made for one test out of Linux network
// namespaces: a hub namespace holding a bridge, and one namespace per node
// linked to the bridge by a veth pair. Node i has the address 10.77.0.<i+1>;
// the hub (where the test's own connections come from) has 10.77.0.254.
// Nothing is added to the host's own network, so the addresses never clash
// with it, and every namespace name carries the test process's pid and a
// counter, so that runs in parallel do not collide. cut takes a node off
// the bridge (its veth on the hub side goes down: its processes still talk
// to each other, nobody else reaches them) and heal puts it back.
type netLab struct {
	t     *testing.T
	ip    string
	hub   string
	nodes []string
}

// netLabPrefix starts every namespace a netLab makes: netLabPrefix<pid>-<n>-.
const netLabPrefix = "amlab-"

var netLabSeq atomic.Int64

// newNetLab makes a lab of n nodes, removed when the test ends. It skips the
// test where namespaces cannot be made: not root, or no `ip netns`.
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the partition test makes network namespaces and veth pairs, which needs root (CI runs it as root)")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"} {
			if _, serr := os.Stat(p); serr == nil {
				ip, err = p, nil
				break
			}
		}
	}
	if err != nil {
		t.Skip("skipped: no `ip` command (Debian's iproute2) to make network namespaces")
	}
	removeStaleNamespaces(ip)
	id := fmt.Sprintf("%s%d-%d-", netLabPrefix, os.Getpid(), netLabSeq.Add(1))
	l := &netLab{t: t, ip: ip, hub: id + "hub"}
	if out, err := exec.Command(ip, "netns", "add", l.hub).CombinedOutput(); err != nil {
		t.Skipf("skipped: `ip netns add` does not work here (%v: %s); the partition test needs network namespaces", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(l.remove)
	l.run("-n", l.hub, "link", "set", "lo", "up")
	l.run("-n", l.hub, "link", "add", "br0", "type", "bridge")
	l.run("-n", l.hub, "addr", "add", "10.77.0.254/24", "dev", "br0")
	l.run("-n", l.hub, "link", "set", "br0", "up")
	for i := range n {
		ns := fmt.Sprintf("%sn%d", id, i+1)
		l.run("netns", "add", ns)
		l.nodes = append(l.nodes, ns)
		l.run("-n", ns, "link", "set", "lo", "up")
		// The node's end is eth0 in its namespace; the hub's end is n<i>.
		l.run("-n", l.hub, "link", "add", l.hubLink(i), "type", "veth", "peer", "name", "eth0", "netns", ns)
		l.run("-n", l.hub, "link", "set", l.hubLink(i), "master", "br0", "up")
		l.run("-n", ns, "addr", "add", l.nodeIP(i)+"/24", "dev", "eth0")
		l.run("-n", ns, "link", "set", "eth0", "up")
	}
	return l
}

// removeStaleNamespaces removes the namespaces of lab runs whose process
// is gone (a test binary killed before its cleanup ran).
func removeStaleNamespaces(ip string) {
	out, err := exec.Command(ip, "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, netLabPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue // not ours, or its test still runs
		}
		_ = exec.Command(ip, "netns", "del", name).Run()
	}
}

// run runs ip with args and fails the test if it fails.
func (l *netLab) run(args ...string) {
	l.t.Helper()
	if out, err := exec.Command(l.ip, args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes every namespace of the lab (their veths and the bridge
// go with them). The processes in them must have ended: the lab's cleanup
// is registered before theirs, so it runs after.
func (l *netLab) remove() {
	for _, ns := range append(l.nodes, l.hub) {
		if out, err := exec.Command(l.ip, "netns", "del", ns).CombinedOutput(); err != nil {
			l.t.Errorf("removing network namespace %s: %v: %s", ns, err, out)
		}
	}
}

func (l *netLab) hubLink(i int) string { return fmt.Sprintf("n%d", i+1) }

// nodeIP is node i's address.
func (l *netLab) nodeIP(i int) string { return fmt.Sprintf("10.77.0.%d", i+1) }

// command runs name with args in node i's namespace (ip netns exec
// replaces itself with the command, so the process is the command's). The
// process is killed with the test binary, should that die first.
func (l *netLab) command(i int, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(l.ip, append([]string{"netns", "exec", l.nodes[i], name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// cut takes node i off the network: the hub's end of its veth goes down.
func (l *netLab) cut(i int) {
	l.t.Helper()
	l.run("-n", l.hub, "link", "set", l.hubLink(i), "down")
}

// heal puts node i back on the network.
func (l *netLab) heal(i int) {
	l.t.Helper()
	l.run("-n", l.hub, "link", "set", l.hubLink(i), "up")
}

// dialer dials from the hub's namespace (nats.SetCustomDialer): the test
// process stays in the host's namespace, and only its sockets are made in
// the hub's.
func (l *netLab) dialer() hubDialer { return hubDialer{ns: "/var/run/netns/" + l.hub} }

type hubDialer struct{ ns string }

// Dial makes the socket on a thread of its own that enters the hub's
// namespace (a socket keeps the namespace it was made in); the thread
// goes back to the host's namespace before it serves anything else, or
// ends with its goroutine when it cannot.
func (d hubDialer) Dial(network, address string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		c, back, err := d.dialIn(network, address)
		if back {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

// dialIn dials from the hub's namespace on the calling (locked) thread and
// reports whether the thread is back in its own namespace.
func (d hubDialer) dialIn(network, address string) (net.Conn, bool, error) {
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, true, err
	}
	defer self.Close()
	hub, err := os.Open(d.ns)
	if err != nil {
		return nil, true, err
	}
	defer hub.Close()
	if err := unix.Setns(int(hub.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("entering %s: %w", d.ns, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, network, address)
	return c, unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil, err
}

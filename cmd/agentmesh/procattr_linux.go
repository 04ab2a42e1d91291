package main

import "syscall"

// childProcAttr makes the kernel send SIGTERM to a child when this process
// dies, even by SIGKILL, so `agentmesh up` never leaves orphans behind.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

//go:build !linux

package main

import "syscall"

// childProcAttr: other systems have no parent-death signal; children are
// stopped by the supervisor's own shutdown.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

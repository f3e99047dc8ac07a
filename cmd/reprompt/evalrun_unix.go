//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a process group of its own, so that an
// interrupt reaches go test and the test binary it starts (interrupt),
// and the terminal's does not reach them unasked.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// interrupt sends SIGINT to cmd's process group: a test binary under
// evals.ProgressEnv stops its eval cleanly, with its result written.
func interrupt(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

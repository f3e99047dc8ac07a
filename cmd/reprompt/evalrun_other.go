//go:build !unix

package main

import "os/exec"

// ownGroup does nothing here: there are no process groups to signal.
func ownGroup(*exec.Cmd) {}

// interrupt kills go test: without signals, the eval cannot be asked to
// stop cleanly, and its result may be cut short.
func interrupt(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// killGroup kills go test.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

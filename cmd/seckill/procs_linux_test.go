package main

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel SIGKILL cmd when the test binary ends, however
// it ends: a test binary killed by its timeout would otherwise leave its
// servers running against the shared Redis and database, and they would
// break the packages tested after it.
func dieWithTest(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

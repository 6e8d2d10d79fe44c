package controlplane

import "syscall"

// Pdeathsig kills the binaries when the test process dies, even by SIGKILL
// (go test's timeout), so no etcd outlives its test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

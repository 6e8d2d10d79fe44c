package prometheus

import "syscall"

// Pdeathsig kills Prometheus when the test process dies, even by SIGKILL
// (go test's timeout), so no server outlives its test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

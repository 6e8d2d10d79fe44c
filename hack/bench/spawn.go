package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// spawnEnv switches the bench binary into its spawn helper mode.
const spawnEnv = "NSDOCTOR_BENCH_SPAWN_OUT"

// spawn is the helper the meter starts each measured command through. Go
// starts children with CLONE_VM (vfork), and Linux charges the parent's
// peak RSS to the child's ru_maxrss at exec: measured straight from the
// bench, which holds fixtures of 100k objects, every command would "use"
// the bench's memory. This small process starts the command instead and
// writes its wall time, ru_maxrss (KiB) and CPU time (user + system, s)
// to the file named by spawnEnv.
func spawn(out string, argv []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Seconds()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(127)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss)
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if err := os.WriteFile(out, fmt.Appendf(nil, "%f %d %f\n", elapsed, rss, cpu), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(127)
	}
	os.Exit(code)
}

//go:build unix

package plugintest

import (
	"os"
	"runtime"
	"syscall"
)

func maxRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	// Linux counts ru_maxrss in kilobytes, macOS in bytes.
	if runtime.GOOS == "darwin" {
		return ru.Maxrss
	}
	return ru.Maxrss * 1024
}

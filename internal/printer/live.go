package printer

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Live shows work in progress on stderr, a line per item (a namespace
// being waited for, a purge run): on a terminal the lines are redrawn in
// place as they change (mpb draws them); elsewhere a line is printed each
// time an item's text changes, so logs get one line per real change.
type Live struct {
	w        io.Writer
	terminal bool
	p        *mpb.Progress

	mu    sync.Mutex
	lines map[string]*liveLine
}

type liveLine struct {
	text atomic.Pointer[string] // read by mpb's render loop without a lock
	bar  *mpb.Bar
	done bool
}

// NewLive returns a display on w; terminal says whether w is one. A
// terminal that reports no width (a bare pseudo-terminal) gets plain
// lines: nothing could be drawn in place on it.
func NewLive(w io.Writer, terminal bool) *Live {
	if f, ok := w.(interface{ Fd() uintptr }); terminal && ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err != nil || cols <= 0 {
			terminal = false
		}
	}
	l := &Live{w: w, terminal: terminal, lines: map[string]*liveLine{}}
	if terminal {
		l.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(width), mpb.WithAutoRefresh())
	}
	return l
}

// Set shows text for key, adding its line the first time.
func (l *Live) Set(key, text string) {
	l.mu.Lock()
	line, seen := l.lines[key]
	if seen && (line.done || *line.text.Load() == text) {
		l.mu.Unlock()
		return
	}
	if !seen {
		line = &liveLine{}
		l.lines[key] = line
	}
	line.text.Store(&text)
	l.mu.Unlock()
	if !l.terminal {
		_, _ = fmt.Fprintln(l.w, text)
		return
	}
	if !seen {
		// mpb's calls are made without l.mu: its render loop calls the
		// decorator, which reads the text lock-free.
		bar := l.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return *line.text.Load() })))
		l.mu.Lock()
		line.bar = bar
		l.mu.Unlock()
	}
}

// Done shows text for key for the last time: its line stops changing.
func (l *Live) Done(key, text string) {
	l.Set(key, text)
	l.mu.Lock()
	line := l.lines[key]
	bar := line.bar
	line.done, line.bar = true, nil
	l.mu.Unlock()
	if bar != nil {
		bar.SetTotal(-1, true)
	}
}

// Close ends the display: on a terminal, the lines stay as last drawn.
func (l *Live) Close() {
	l.mu.Lock()
	var bars []*mpb.Bar
	for _, line := range l.lines {
		if line.bar != nil {
			bars = append(bars, line.bar)
			line.bar = nil
		}
	}
	l.mu.Unlock()
	for _, bar := range bars {
		bar.SetTotal(-1, true)
	}
	if l.p != nil {
		l.p.Wait()
	}
}

// Print writes text above the live lines (a warning), or in place of them
// where nothing is drawn.
func (l *Live) Print(text string) {
	if l.p != nil {
		_, _ = l.p.Write([]byte(text))
		return
	}
	_, _ = io.WriteString(l.w, text)
}

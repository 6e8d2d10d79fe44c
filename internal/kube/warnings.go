package kube

import (
	"context"

	"k8s.io/client-go/rest"
)

// The API server's warnings (admission webhooks' and its own) are shown
// the way kubectl shows them, for the requests that change something:
// a sweep lists every resource type, deprecated ones included, and their
// deprecation warnings are not the user's concern.

type (
	warningSinkKey struct{}
	writingKey     struct{}
)

// WithWarnings returns a context whose write requests hand the API
// server's warnings to sink (called from client-go's goroutines).
func WithWarnings(ctx context.Context, sink func(text string)) context.Context {
	return context.WithValue(ctx, warningSinkKey{}, sink)
}

// Writing marks the requests sent with ctx as writes, whose warnings
// reach the sink WithWarnings set.
func Writing(ctx context.Context) context.Context { return context.WithValue(ctx, writingKey{}, true) }

// warningHandler forwards a write's warnings to its context's sink, and
// drops the others.
type warningHandler struct{}

var _ rest.WarningHandlerWithContext = warningHandler{}

func (warningHandler) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" || ctx.Value(writingKey{}) == nil {
		return
	}
	if sink, ok := ctx.Value(warningSinkKey{}).(func(string)); ok {
		sink(text)
	}
}

package apierror

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// fromTransport reads an error of the way to the server, typed: client-go
// returns the transport's errors wrapped in a url.Error.
func fromTransport(err error) (Error, bool) {
	switch {
	case isTLS(err):
		// Before the timeouts: a certificate is no slow answer.
		return Error{Kind: Unreachable, Cause: CauseTLS}, true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), utilnet.IsTimeout(err):
		return Error{Kind: Timeout}, true
	case utilnet.IsConnectionRefused(err):
		return Error{Kind: Unreachable, Cause: CauseRefused}, true
	case utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err), utilnet.IsHTTP2ConnectionLost(err):
		return Error{Kind: Unreachable, Cause: CauseBroken}, true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		// A name that does not exist stays so; a resolver that failed
		// to answer may answer the next time.
		if dns.IsNotFound {
			return Error{Kind: Unreachable, Cause: CauseUnknownHost}, true
		}
		return Error{Kind: Unreachable, Cause: CauseNetwork}, true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		// url.Error is one: any failure of the request on its way.
		return Error{Kind: Unreachable, Cause: CauseNetwork}, true
	}
	return Error{}, false
}

// isTLS tells a failed TLS handshake: a server certificate the client
// does not trust, or a client certificate the server refused (its alert).
func isTLS(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		alert            tls.AlertError
		record           tls.RecordHeaderError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &invalid) || errors.As(err, &hostname) ||
		errors.As(err, &verification) || errors.As(err, &alert) || errors.As(err, &record)
}

// transportWords reads the words of a transport error that lost its type
// (joined into another error's text, or kept as text): Go's net/http and
// net, crypto/x509 and crypto/tls wordings.
func transportWords(msg string) (Error, bool) {
	switch {
	case strings.Contains(msg, "x509: "), strings.Contains(msg, "tls: "):
		return Error{Kind: Unreachable, Cause: CauseTLS}, true
	case containsAny(msg, []string{"Client.Timeout exceeded", "deadline exceeded", "would exceed context deadline", "i/o timeout", "TLS handshake timeout"}):
		// "would exceed context deadline": client-go's rate limiter
		// refuses to wait past the deadline (rest/request.go
		// tryThrottleWithInfo wraps golang.org/x/time/rate's untyped
		// error): the request was never sent, for lack of time.
		return Error{Kind: Timeout}, true
	case strings.Contains(msg, "connection refused"):
		return Error{Kind: Unreachable, Cause: CauseRefused}, true
	case strings.Contains(msg, "no such host"):
		return Error{Kind: Unreachable, Cause: CauseUnknownHost}, true
	case containsAny(msg, []string{"connection reset by peer", "http2: server sent GOAWAY", "use of closed network connection", "unexpected EOF"}) || strings.HasSuffix(msg, ": EOF") || msg == "EOF":
		return Error{Kind: Unreachable, Cause: CauseBroken}, true
	}
	return Error{}, false
}

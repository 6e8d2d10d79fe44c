package cli

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// Exit codes, the one place they are defined (docs/exit-codes.md lists
// them for users). Through kubectl on Windows every non-zero code becomes 1.
const (
	// ExitOK: the command did what was asked; explain: nothing is stuck.
	ExitOK = 0
	// ExitError: the command failed (API error, unreachable server, ...).
	ExitError = 1
	// ExitUsage: bad flags, arguments or names; nothing was sent.
	ExitUsage = 2
	// ExitStuck: explain found a terminating namespace held by blockers.
	ExitStuck = 3
	// ExitNotFound: the namespace named does not exist.
	ExitNotFound = 4
	// ExitIncomplete: purge --force stopped (timeout) with the namespace
	// still there; re-running it continues.
	ExitIncomplete = 5
)

// exitError carries an exit code with an optional message; an empty
// message prints nothing (explain's "stuck" outcome is not an error).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

func notFoundErrorf(format string, args ...any) error {
	return &exitError{code: ExitNotFound, msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error to the documented exit code.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	default:
		return ExitError
	}
}

// describe turns any error into the one line users see: what went wrong
// and what to do, never a stack or a multi-line dump.
func describe(err error, server string) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return oneLine(ee.msg)
	}
	return oneLine(explainAPIError(err, server))
}

func explainAPIError(err error, server string) string {
	switch {
	case clientcmd.IsEmptyConfig(err):
		return "no cluster configured: set --kubeconfig, KUBECONFIG or --server"
	case clientcmd.IsConfigurationInvalid(err) || strings.HasPrefix(err.Error(), "error loading config file"):
		return fmt.Sprintf("invalid kubeconfig: %v (check --kubeconfig, KUBECONFIG and --context)", err)
	}
	e := apierror.Classify(err)
	switch {
	case e.Kind == apierror.Unauthorized:
		return fmt.Sprintf("the API server at %s rejected the credentials (401 Unauthorized): log in again or check --token/--user", server)
	case e.Kind == apierror.Forbidden:
		return fmt.Sprintf("%v (see docs/rbac.md for the permissions ns-doctor needs)", apiMessage(err))
	case e.Kind == apierror.Timeout, e.Kind == apierror.Transient && (e.Reason == metav1.StatusReasonTimeout || e.Code == http.StatusGatewayTimeout):
		return fmt.Sprintf("the API server at %s did not answer in time: check that it is up, or raise --request-timeout", server)
	case e.Kind == apierror.Unreachable && e.Cause == apierror.CauseRefused:
		return fmt.Sprintf("cannot reach the API server at %s: connection refused; check --kubeconfig/--context and that the cluster is running", server)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Sprintf("cannot reach the API server at %s: %v; check --kubeconfig/--context and your network", server, uerr.Err)
	}
	return err.Error()
}

// lostAccess says why a user may not read a namespace it names, and what
// works. A tenant's access often came from a RoleBinding in that very
// namespace: its deletion removed the RoleBinding with the rest (a
// RoleBinding holds no finalizer), and a terminating namespace accepts no
// new one; access that does not live in the namespace does.
func lostAccess(err error, namespace string) error {
	user, subject := "", "--user=<you>"
	if refused := apierror.Classify(err); refused.User != "" {
		user = refused.User
		subject = "--user=" + user
		if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
			subject = "--serviceaccount=" + sa
		}
	}
	binding := "ns-doctor-explain"
	if user != "" {
		binding += "-" + strings.Trim(nonName.ReplaceAllString(strings.ToLower(user), "-"), "-")
	}
	return &exitError{code: ExitError, msg: fmt.Sprintf("%s; if your access to namespace %s came from a RoleBinding in it, its deletion removed that RoleBinding with the rest, "+
		"and a terminating namespace accepts no new one: a cluster admin can run kubectl ns-doctor explain %s, or grant you access that does not live in the namespace: "+
		"kubectl create clusterrolebinding %s --clusterrole=ns-doctor-explain %s (docs/rbac.md)", apiMessage(err), namespace, namespace, binding, subject)}
}

// nonName are the characters an object's name cannot hold.
var nonName = regexp.MustCompile(`[^a-z0-9.-]+`)

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// oneLine is a message as the one stderr line users see: on one line,
// escaped (an API error quotes webhook authors' text), and bounded.
func oneLine(s string) string {
	return printer.Cut(printer.Escape(strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")), maxErrorLine)
}

// maxErrorLine bounds the error line; the report (-o json) keeps it all.
const maxErrorLine = 1000

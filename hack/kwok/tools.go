//go:build tools

// Package tools records the command this module builds, kwok (the
// Kubernetes SIG's kubelet simulator), so `go mod tidy` keeps its
// dependencies. It lives apart from the plugin's module and from the
// control plane's: kwok pins its own client-go.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)

package compat

import "fmt"

// Ordering is the deletion order ns-doctor follows for a cluster, and why:
// the one thing the namespace controllers of 1.31 to 1.36 do differently
// (docs/compatibility.md). It carries what else the server's version
// implies (Server), so everything that follows the order can follow the
// API server's behaviours too.
type Ordering struct {
	ServerVersion string `json:"serverVersion,omitempty"`
	// Ordered is the OrderedNamespaceDeletion feature gate: pods are
	// deleted first, and nothing else while any remain.
	Ordered bool           `json:"orderedDeletion"`
	Source  OrderingSource `json:"orderedDeletionSource"`
	// Server is every version-dependent behaviour as assumed for the
	// server; reports print it on its own (JSON "server").
	Server Server `json:"-"`
}

// OrderingSource says how the ordering was chosen.
type OrderingSource string

// Ordering sources.
const (
	// FromServerVersion: the default of the server's minor.
	FromServerVersion OrderingSource = "ServerVersion"
	// FromFlag: --ordered-deletion=on|off.
	FromFlag OrderingSource = "Flag"
	// FromUnknownVersion: the server's version could not be read or
	// parsed; today's default (ordered) is assumed.
	FromUnknownVersion OrderingSource = "UnknownVersion"
)

// GateRemovedError refuses --ordered-deletion=off for a server whose
// namespace controller can only delete pods first.
type GateRemovedError struct{ ServerVersion string }

func (e *GateRemovedError) Error() string {
	return fmt.Sprintf("--ordered-deletion=off cannot apply to this cluster: its version %s has no OrderedNamespaceDeletion gate (removed in 1.37), so its namespace controller always deletes pods first; drop the flag (off is for 1.30 to 1.36)", e.ServerVersion)
}

// OrderingFor resolves --ordered-deletion (auto, on, off) for a server
// reporting gitVersion (empty: not known).
func OrderingFor(mode, gitVersion string) (Ordering, error) {
	o := Ordering{ServerVersion: gitVersion, Server: For(gitVersion)}
	switch mode {
	case "on", "off":
		if mode == "off" && o.Server.Known && o.Server.Has(OrderingGateRemoved) {
			return o, &GateRemovedError{ServerVersion: gitVersion}
		}
		o.Ordered, o.Source = mode == "on", FromFlag
		return o, nil
	case "auto", "":
	default:
		return o, fmt.Errorf("invalid --ordered-deletion %q: use auto, on or off", mode)
	}
	// The default of the server's minor (the gate came to 1.31.7 and
	// 1.32.3 as beta, off; beta and on in 1.33, GA and locked on in 1.34,
	// removed in 1.37); an unparsable version, or a build without version
	// ldflags (v0.0.0-master), is taken as current: ordered.
	o.Ordered, o.Source = o.Server.Has(OrderedDeletion), FromServerVersion
	if !o.Server.Known {
		o.Source = FromUnknownVersion
	}
	return o, nil
}

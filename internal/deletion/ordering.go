package deletion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// Ordering is the deletion order ns-doctor follows for a cluster, and why:
// the one thing the namespace controllers of 1.31 to 1.36 do differently
// (docs/compatibility.md).
type Ordering struct {
	ServerVersion string `json:"serverVersion,omitempty"`
	// Ordered is the OrderedNamespaceDeletion feature gate: pods are
	// deleted first, and nothing else while any remain.
	Ordered bool           `json:"orderedDeletion"`
	Source  OrderingSource `json:"orderedDeletionSource"`
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

// OrderedByDefault tells whether the namespace controller of a release
// deletes pods first with its default feature gates. The gate
// OrderedNamespaceDeletion came to 1.31.7 and 1.32.3 as beta, off; it is
// beta and on in 1.33, GA and locked on from 1.34.
func OrderedByDefault(v *version.Version) bool {
	return v.Major() > 1 || (v.Major() == 1 && v.Minor() >= 33)
}

// OrderingFor resolves --ordered-deletion (auto, on, off) for a server
// reporting gitVersion (empty: not known).
func OrderingFor(mode, gitVersion string) (Ordering, error) {
	o := Ordering{ServerVersion: gitVersion}
	switch mode {
	case "on", "off":
		o.Ordered, o.Source = mode == "on", FromFlag
		return o, nil
	case "auto", "":
	default:
		return o, fmt.Errorf("invalid --ordered-deletion %q: use auto, on or off", mode)
	}
	v, err := version.ParseGeneric(gitVersion)
	if err != nil || v.Major() == 0 {
		// Unparsable, or a build without version ldflags (v0.0.0-master).
		o.Ordered, o.Source = true, FromUnknownVersion
		return o, nil
	}
	o.Ordered, o.Source = OrderedByDefault(v), FromServerVersion
	return o, nil
}

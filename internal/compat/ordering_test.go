package compat

import (
	"errors"
	"strings"
	"testing"
)

func TestOrderingFor(t *testing.T) {
	for _, tc := range []struct {
		mode, version string
		ordered       bool
		source        OrderingSource
	}{
		{"auto", "v1.36.3", true, FromServerVersion},
		{"auto", "v1.33.13", true, FromServerVersion},
		{"auto", "v1.33.5-eks-1234", true, FromServerVersion},
		{"auto", "v1.32.9-gke.1000", false, FromServerVersion},
		{"auto", "v1.31.14", false, FromServerVersion},
		{"auto", "v2.0.0", true, FromServerVersion},
		{"auto", "", true, FromUnknownVersion},
		{"auto", "weird", true, FromUnknownVersion},
		{"auto", "v0.0.0-master+$Format:%H$", true, FromUnknownVersion},
		{"on", "v1.31.14", true, FromFlag},
		{"off", "v1.36.3", false, FromFlag},
		{"auto", "v1.37.2", true, FromServerVersion},
		{"auto", "v1.38.0-beta.0", true, FromServerVersion},
		{"on", "v1.37.2", true, FromFlag},
		{"off", "", false, FromFlag},
	} {
		o, err := OrderingFor(tc.mode, tc.version)
		if err != nil || o.Ordered != tc.ordered || o.Source != tc.source || o.ServerVersion != tc.version {
			t.Errorf("%s %q: %+v, %v; want ordered=%v from %s", tc.mode, tc.version, o, err, tc.ordered, tc.source)
		}
	}
	if _, err := OrderingFor("maybe", "v1.36.3"); err == nil {
		t.Error("an unknown mode was accepted")
	}
	// No controller of 1.37 or later can delete all together.
	for _, v := range []string{"v1.37.2", "v1.37.0-gke.100", "v1.38.0-beta.0"} {
		_, err := OrderingFor("off", v)
		var removed *GateRemovedError
		if !errors.As(err, &removed) || !strings.Contains(err.Error(), v) {
			t.Errorf("off on %s: %v; want the gate's removal, naming the version", v, err)
		}
	}
}

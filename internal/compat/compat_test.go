package compat

import (
	"slices"
	"testing"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		version string
		known   bool
		holds   []Behaviour
	}{
		{"v1.31.14", true, nil},
		{"v1.33.13", true, []Behaviour{OrderedDeletion}},
		{"v1.36.3", true, []Behaviour{OrderedDeletion}},
		{"v1.36.9-eks-1", true, []Behaviour{OrderedDeletion}},
		{"v1.37.2", true, []Behaviour{OrderedDeletion, OrderingGateRemoved, UpdateWithoutNamespace, UnsafeDeleteDryRun, StorageErrorCause, StaticAdmission}},
		{"v1.38.0-beta.0", true, []Behaviour{OrderedDeletion, OrderingGateRemoved, UpdateWithoutNamespace, UnsafeDeleteDryRun, StorageErrorCause, StaticAdmission}},
		// Unknown: what is safe to send is not assumed (no direct update of
		// orphans, no unsafe dry run); what only changes words is.
		{"", false, []Behaviour{OrderedDeletion, StorageErrorCause, StaticAdmission}},
		{"v0.0.0-master+$Format:%H$", false, []Behaviour{OrderedDeletion, StorageErrorCause, StaticAdmission}},
	} {
		s := For(tc.version)
		if s.Known != tc.known || len(s.Assumed) != len(Changes()) {
			t.Errorf("%q: known=%v with %d assumptions", tc.version, s.Known, len(s.Assumed))
		}
		for _, c := range Changes() {
			if want := slices.Contains(tc.holds, c.Behaviour); s.Has(c.Behaviour) != want {
				t.Errorf("%q: %s holds=%v, want %v", tc.version, c.Behaviour, s.Has(c.Behaviour), want)
			}
		}
	}
	if (Server{}).Has(UnsafeDeleteDryRun) || !(Server{}).Has(OrderedDeletion) {
		t.Error("the zero Server does not assume what an unknown version does")
	}
}

func TestMinorAndWords(t *testing.T) {
	if got := For("v1.37.2-gke.1").Minor(); got != "1.37" {
		t.Errorf("Minor = %q", got)
	}
	if got := For("").Minor(); got != "" {
		t.Errorf("unknown Minor = %q", got)
	}
	if got := For("v1.36.3").Words(); got != "v1.36.3" {
		t.Errorf("1.36 words = %q", got)
	}
	if got := For("v1.37.2").Words(); got != "v1.37.2: no other deletion order, orphans updated in place, unsafe delete dry runs, storage errors with their cause, admission from disk (*.static.k8s.io)" {
		t.Errorf("1.37 words = %q", got)
	}
}

func TestStaticName(t *testing.T) {
	for name, want := range map[string]bool{"deny.static.k8s.io": true, "static.k8s.io.example.com": false, "guard.example.com": false} {
		if StaticName(name) != want {
			t.Errorf("StaticName(%q) != %v", name, want)
		}
	}
}

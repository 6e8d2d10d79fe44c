package owners

import (
	"slices"
	"testing"
)

var tenants = PointType{Group: "acme.test", Version: "v1", Resource: "tenants", Kind: "Tenant", Singular: "tenant", ShortNames: []string{"tn"}}

// A namespace finalizer points into the cluster-scoped types of the
// groups its domain names, by the names its part after "/" embeds; it
// names the type itself when its domain is the type's, or a word of it is
// the kind, so that an object not found there is gone.
func TestLookups(t *testing.T) {
	other := PointType{Group: "other.test", Version: "v1", Resource: "things", Kind: "Thing", Singular: "thing"}
	types := []PointType{tenants, other}
	for _, tc := range []struct {
		finalizer string
		types     []string
		names     []string
		namesKind bool
	}{
		{"acme.test/tenant-team-a", []string{"tenants.acme.test"}, []string{"tenant-team-a", "team-a"}, true},
		{"tenants.acme.test/team-a", []string{"tenants.acme.test"}, []string{"team-a"}, true},
		{"acme.test/team-a", []string{"tenants.acme.test"}, []string{"team-a"}, false},
		{"ns.acme.test/tn.blue", []string{"tenants.acme.test"}, []string{"tn.blue", "blue"}, true},
		{"acme.test/x", nil, nil, false},
		{"acme.test", nil, nil, false},
		{"elsewhere.test/tenant-team-a", nil, nil, false},
	} {
		var got, names []string
		namesKind := false
		for _, l := range Lookups(tc.finalizer, types) {
			got, names, namesKind = append(got, l.Type.String()), l.Names, l.NamesKind
		}
		if !slices.Equal(got, tc.types) || !slices.Equal(names, tc.names) || namesKind != tc.namesKind {
			t.Errorf("%s: types %q names %q names kind %v; want %q %q %v", tc.finalizer, got, names, namesKind, tc.types, tc.names, tc.namesKind)
		}
	}
}

// Whether an object still selects a namespace is its spec's namespace
// selectors evaluated against the namespace's labels, as the API server's
// label selectors are: a list of selectors or of names, nested a level or
// two; an empty selector selects every namespace.
func TestSelectionOf(t *testing.T) {
	labels := map[string]string{"team": "a", "kubernetes.io/metadata.name": "team-a"}
	sel := func(m map[string]any) map[string]any { return map[string]any{"spec": m} }
	for _, tc := range []struct {
		name  string
		obj   map[string]any
		want  Selection
		field string
	}{
		{"matchLabels selects", sel(map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}}}), Selects, "spec.namespaceSelector"},
		{"matchLabels no longer", sel(map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "b"}}}), NoLongerSelects, "spec.namespaceSelector"},
		{"matchExpressions", sel(map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "team", "operator": "In", "values": []any{"a", "c"}}}}}), Selects, "spec.namespaceSelector"},
		{"a list, one selects", sel(map[string]any{"namespaceSelectors": []any{
			map[string]any{"matchLabels": map[string]any{"team": "z"}}, map[string]any{"matchLabels": map[string]any{"team": "a"}}}}), Selects, "spec.namespaceSelectors"},
		{"names", sel(map[string]any{"namespaces": []any{"team-b"}}), NoLongerSelects, "spec.namespaces"},
		{"nested", sel(map[string]any{"target": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}}}}), Selects, "spec.target.namespaceSelector"},
		{"empty selects all", sel(map[string]any{"namespaceSelector": map[string]any{}}), Selects, "spec.namespaceSelector"},
		{"none", sel(map[string]any{"size": "small"}), NoSelector, ""},
		{"invalid is skipped", sel(map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "team", "operator": "Bogus"}}}}), NoLongerSelects, "spec.namespaceSelector"},
	} {
		got, field := SelectionOf(tc.obj, "team-a", labels)
		if got != tc.want || field != tc.field {
			t.Errorf("%s: %s %q, want %s %q", tc.name, got, field, tc.want, tc.field)
		}
	}
}

// Only a gone object, or one that no longer selects the namespace,
// releases the finalizer; one that still selects it, or that could not be
// found by a name the finalizer may not embed, says nothing of the kind.
func TestPointedReleased(t *testing.T) {
	for _, tc := range []struct {
		p    Pointed
		want bool
	}{
		{Pointed{State: ObjectGone}, true},
		{Pointed{State: ObjectPresent, Selection: NoLongerSelects}, true},
		{Pointed{State: ObjectPresent, Selection: Selects}, false},
		{Pointed{State: ObjectPresent, Selection: NoSelector}, false},
		{Pointed{State: ObjectDeleting, Selection: NoLongerSelects}, false},
		{Pointed{State: ObjectNotFound}, false},
		{Pointed{State: ObjectUnknown}, false},
	} {
		if tc.p.Released() != tc.want {
			t.Errorf("%+v released %v", tc.p, !tc.want)
		}
	}
}

// A finalizer's name part embeds an object's name however it is embedded:
// whole, after a kind's prefix, before a kind's suffix, between both; at
// separators only, never inside a word; longest first.
func TestEmbedded(t *testing.T) {
	names := []string{"team-a", "a", "eam-a", "blue", "team-a-prod", "prod", "other"}
	for finalizer, want := range map[string][]string{
		"ns.acme.test/team-a":                 {"team-a"},
		"ns.acme.test/ces-team-a":             {"team-a"},
		"ns.acme.test/team-a-tenant":          {"team-a"},
		"ns.acme.test/tn.team-a-prod.cleanup": {"team-a-prod", "team-a", "prod"},
		"ns.acme.test/steam-a":                nil,
		"ns.acme.test/Blue-Tenant":            {"blue"},
		"ns.acme.test":                        nil,
	} {
		if got := Embedded(finalizer, names); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", finalizer, got, want)
		}
	}
}

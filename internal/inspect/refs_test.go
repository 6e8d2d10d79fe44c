package inspect

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// The references operators' specs use are found by their field names,
// at any depth (a pod template's env too), each once, in field order;
// references to another namespace and values are left alone.
func TestSpecRefs(t *testing.T) {
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(`
credentials:
  source: Secret
  secretRef: {namespace: demo, name: cloud-creds, key: creds}
writeConnectionSecretToRef: {name: conn}
providerConfigRef: {name: default}
tls: {secretName: cert}
remoteSecretRef: {namespace: elsewhere, name: theirs}
template:
  spec:
    serviceAccountName: runner
    containers:
    - env:
      - name: TOKEN
        valueFrom: {secretKeyRef: {name: token, key: t}}
      - name: MODE
        valueFrom: {configMapKeyRef: {name: settings, key: m}}
password: hunter2
`), &spec); err != nil {
		t.Fatal(err)
	}
	want := []diagnose.HolderRef{
		{Field: "spec.credentials.secretRef", Kind: diagnose.RefSecret, Name: "cloud-creds"},
		{Field: "spec.template.spec.containers[].env[].valueFrom.configMapKeyRef", Kind: diagnose.RefConfigMap, Name: "settings"},
		{Field: "spec.template.spec.containers[].env[].valueFrom.secretKeyRef", Kind: diagnose.RefSecret, Name: "token"},
		{Field: "spec.template.spec.serviceAccountName", Kind: diagnose.RefServiceAccount, Name: "runner"},
		{Field: "spec.tls.secretName", Kind: diagnose.RefSecret, Name: "cert"},
	}
	if got := specRefs(spec, "demo"); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// A spec full of references keeps the bound, and the same ones each time.
func TestSpecRefsBounded(t *testing.T) {
	spec := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		spec[k+"SecretName"] = k
	}
	first := specRefs(spec, "demo")
	if len(first) != maxRefs || first[0].Name != "a" {
		t.Fatalf("%+v", first)
	}
	for range 5 {
		if got := specRefs(spec, "demo"); !reflect.DeepEqual(got, first) {
			t.Fatalf("not stable: %+v", got)
		}
	}
	if got := specRefs("not a map", "demo"); len(got) != 0 {
		t.Errorf("%+v", got)
	}
}

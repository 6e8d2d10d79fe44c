package kube

import "testing"

// A pod's node is its Table row's Node cell; <none> is unscheduled, and a
// table without that column is an error, not a guess.
func TestNodeColumn(t *testing.T) {
	row := func(node string) string {
		return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","type":"string"},{"name":"Status","type":"string"},{"name":"Node","type":"string"}],
			"rows":[{"cells":["web-0","Terminating","` + node + `"]}]}`
	}
	for body, want := range map[string]string{row("node-1"): "node-1", row("<none>"): ""} {
		if got, err := nodeColumn([]byte(body)); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", body, got, err, want)
		}
	}
	if _, err := nodeColumn([]byte(`{"kind":"Table","columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["web-0"]}]}`)); err == nil {
		t.Error("no Node column, no error")
	}
}

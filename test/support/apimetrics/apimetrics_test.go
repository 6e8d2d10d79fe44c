package apimetrics

import (
	"maps"
	"testing"
)

// The counts that grew are the delta; the "before" read of /metrics is
// not the measured command's, its own reads of /metrics are.
func TestDelta(t *testing.T) {
	got := Delta(map[string]float64{"GET /metrics": 7, "GET /apis": 3, "LIST configmaps": 10, "PUT leases": 4},
		map[string]float64{"GET /metrics": 10, "GET /apis": 4, "LIST configmaps": 12, "PUT leases": 4, "DELETE configmaps": 5})
	if want := map[string]float64{"GET /metrics": 2, "GET /apis": 1, "LIST configmaps": 2, "DELETE configmaps": 5}; !maps.Equal(got, want) || Total(got) != 10 {
		t.Errorf("Delta = %v, want %v", got, want)
	}
}

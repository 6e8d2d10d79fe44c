package guardlatency

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestMeasure runs Measure by hand on a control plane of its own:
//
//	NSDOCTOR_GUARD_BENCH=1 go test -count=1 -timeout 30m -v -run TestMeasure ./hack/bench/guardlatency
//
// NSDOCTOR_GUARD_BENCH_OBJECTS and _SAMPLES change the size. It is skipped
// otherwise: `make bench` calls Measure itself.
func TestMeasure(t *testing.T) {
	if os.Getenv("NSDOCTOR_GUARD_BENCH") == "" {
		t.Skip("set NSDOCTOR_GUARD_BENCH=1 to measure the guard (several minutes)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := plugintest.Build(dir, "", false); err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	objects, _ := strconv.Atoi(os.Getenv("NSDOCTOR_GUARD_BENCH_OBJECTS"))
	samples, _ := strconv.Atoi(os.Getenv("NSDOCTOR_GUARD_BENCH_SAMPLES"))
	r, err := Measure(ctx, Options{Config: cp.Config, Kubeconfig: cp.Kubeconfig, Plugin: dir + "/kubectl-ns_doctor",
		Objects: objects, Samples: samples, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", r.Markdown())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// The quantiles are Prometheus's: linear within the bucket.
func TestHistogramQuantile(t *testing.T) {
	body := `x_bucket{le="0.1",a="b"} 5
x_bucket{le="0.5",a="b"} 9
x_bucket{le="1",a="b"} 10
x_bucket{le="+Inf",a="b"} 10
x_bucket{le="0.1",a="c"} 100
`
	h := parseHistogram(body, "x", `a="b"`)
	if h.count != 10 {
		t.Fatalf("count %v", h.count)
	}
	if got := h.quantile(0.5); got != 100*time.Millisecond {
		t.Errorf("p50 %s, want 100ms (the 5th of 10 is the top of the first bucket)", got)
	}
	if got := h.quantile(0.7); got != 300*time.Millisecond {
		t.Errorf("p70 %s, want 300ms", got)
	}
	if got := quantile([]time.Duration{3, 1, 2, 4}, 0.5); got != 2 {
		t.Errorf("sample p50 %v", got)
	}
}

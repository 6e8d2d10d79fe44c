// Package apimetrics reads kube-apiserver's own request counter, so the
// demo and the benchmarks count every request a command makes, whatever
// client it uses.
package apimetrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// RequestCounts sums apiserver_request_total by "VERB resource" (or path
// for non-resource requests such as discovery).
func RequestCounts(ctx context.Context, client kubernetes.Interface) (map[string]float64, error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		labels := line[len("apiserver_request_total{") : sp-1]
		what := label(labels, "resource")
		if sub := label(labels, "subresource"); sub != "" {
			what += "/" + sub
		}
		if what == "" {
			what = label(labels, "path") // present only on some versions
		}
		if what == "" {
			what = "/metrics"
			if label(labels, "verb") != "GET" || label(labels, "scope") != "" {
				what = "(non-resource)"
			}
		}
		out[label(labels, "verb")+" "+what] += v
	}
	return out, sc.Err()
}

// Delta is what was counted between two reads of RequestCounts, less
// the "before" read of /metrics itself, which "after" counts.
func Delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if k == "GET /metrics" {
			v--
		}
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total sums counts.
func Total(counts map[string]float64) float64 {
	t := 0.0
	for _, v := range counts {
		t += v
	}
	return t
}

// label extracts name="value" from a Prometheus label set.
func label(labels, name string) string {
	i := strings.Index(","+labels, ","+name+"=\"")
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

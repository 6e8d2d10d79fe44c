package plugintest

import (
	"context"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// AggregatedAPI serves gadgets from an aggregated API private to the test,
// unregistered when the test ends.
func AggregatedAPI(t *testing.T, c *scenario.Cluster) *scenario.AggregatedAPI {
	t.Helper()
	agg, err := c.StartAggregatedAPI(context.Background(), UniqueName(t)+".example.com", "Gadget", "gadgets")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agg.Close(context.Background()) })
	return agg
}

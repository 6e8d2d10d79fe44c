package rescue

import (
	"context"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// inForce.afterMs is the time from the run's start whatever the outcome (here:
// nothing to ask a dry run about); it was once always 0s, set on a copy.
func TestProveHoldSaysHowLongItTook(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("going", time.Minute)
	got := proveHold(context.Background(), c.Clients(), "going", time.Now().Add(-time.Second))
	if got.Proven || got.Why == "" || got.AfterMs < 1000 {
		t.Errorf("got %+v, want not proven, why, and after at least 1s", got)
	}
}

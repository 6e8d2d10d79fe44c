package watch

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// LeaderElection is --leader-elect and its timings, as
// kube-controller-manager names them.
type LeaderElection struct {
	Namespace, Name, Identity string
	LeaseDuration             time.Duration
	RenewDeadline             time.Duration
	RetryPeriod               time.Duration
	// WatchDog, when set, tells /healthz whether a leader still renews
	// its Lease (leaderelection.NewLeaderHealthzAdaptor).
	WatchDog *leaderelection.HealthzAdaptor
}

// Lead runs work while this replica holds the Lease, and returns when ctx
// ends (nil, the Lease given up for the next replica at once) or the Lease
// is lost (ErrLostLease: a leader that lost it stops, as controllers do,
// and comes back as a standby). leading hears each change.
func (le LeaderElection) Lead(ctx context.Context, clients *kube.Clients, work func(context.Context), leading func(bool)) error {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.Name,
		clients.Kube.CoreV1(), clients.Kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	lost := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            le.Name,
		WatchDog:        le.WatchDog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading(true)
				work(ctx)
			},
			OnStoppedLeading: func() {
				leading(false)
				close(lost)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if le.WatchDog != nil {
		// NewLeaderElector does not tie the adaptor to the elector (only
		// RunOrDie does): untied, it says healthy whatever the Lease.
		le.WatchDog.SetLeaderElection(elector)
	}
	elector.Run(ctx)
	select {
	case <-lost:
		if ctx.Err() == nil {
			return fmt.Errorf("%w %s/%s", ErrLostLease, le.Namespace, le.Name)
		}
	default:
	}
	return nil
}

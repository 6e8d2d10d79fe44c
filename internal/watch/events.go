package watch

import (
	"context"
	"hash/fnv"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// maxEventMessage bounds an Event's message (events.k8s.io refuses a note
// over 1 kB; the core API keeps the same bound here).
const maxEventMessage = 1024

// eventShards are the broadcasters Events go through: each writes its
// Events one at a time and queues at most 1,000 (client-go drops the
// rest), so ten thousand stuck namespaces found at once would wait for one
// another's requests, and lose some; each namespace's Events stay with one
// broadcaster, whose correlator keeps its count.
const eventShards = 32

// NewRecorder records Events about namespaces as a controller does:
// broadcasters whose correlators turn the same Event repeated into one
// Event with a count (so a namespace stuck for the same reason keeps one
// Event, updated at each resync), and whose refusals do not stop the
// watch. refused is called once, for the first Event the API server
// refuses for lack of permission; the watch goes on without Events.
func NewRecorder(ctx context.Context, events typedcorev1.EventsGetter, m *Metrics, refused func(error)) (record.EventRecorder, func()) {
	sink := &refusingSink{EventSink: &typedcorev1.EventSinkImpl{Interface: events.Events("")}, metrics: m, refused: refused}
	var shards sharded
	var stops []func()
	for range eventShards {
		b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
			// One Event per namespace per resync for hours: the default
			// spam filter (a burst of 25, then one per 5 minutes) would
			// drop most.
			BurstSize: 100, QPS: 1,
		}))
		b.StartRecordingToSink(sink)
		shards, stops = append(shards, b.NewRecorder(scheme.Scheme, v1.EventSource{Component: eventSourceComponent})), append(stops, b.Shutdown)
	}
	return boundedRecorder{shards}, func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// sharded sends each object's Events to one recorder of several, by name.
type sharded []record.EventRecorder

func (s sharded) of(obj runtime.Object) record.EventRecorder {
	name := ""
	if ref, ok := obj.(*v1.ObjectReference); ok {
		name = ref.Name
	} else if m, err := meta.Accessor(obj); err == nil {
		name = m.GetName()
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return s[h.Sum32()%uint32(len(s))]
}

func (s sharded) Event(obj runtime.Object, eventtype, reason, message string) {
	s.of(obj).Event(obj, eventtype, reason, message)
}

func (s sharded) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	s.of(obj).Eventf(obj, eventtype, reason, format, args...)
}

func (s sharded) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	s.of(obj).AnnotatedEventf(obj, annotations, eventtype, reason, format, args...)
}

// refusingSink reports a Forbidden once and swallows it, so client-go does
// not log it again for every Event.
type refusingSink struct {
	record.EventSink
	metrics *Metrics
	refused func(error)
	once    sync.Once
}

func (s *refusingSink) Create(e *v1.Event) (*v1.Event, error) { return s.check(s.EventSink.Create(e)) }
func (s *refusingSink) Update(e *v1.Event) (*v1.Event, error) { return s.check(s.EventSink.Update(e)) }
func (s *refusingSink) Patch(e *v1.Event, p []byte) (*v1.Event, error) {
	return s.check(s.EventSink.Patch(e, p))
}

func (s *refusingSink) check(e *v1.Event, err error) (*v1.Event, error) {
	if err == nil || !apierrors.IsForbidden(err) {
		return e, err
	}
	if s.metrics != nil {
		s.metrics.eventRefused()
	}
	s.once.Do(func() {
		if s.refused != nil {
			s.refused(err)
		}
	})
	return e, nil
}

// boundedRecorder cuts messages to what the API server stores.
type boundedRecorder struct{ record.EventRecorder }

func (r boundedRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.EventRecorder.Event(obj, eventtype, reason, cutMessage(message))
}

func cutMessage(s string) string {
	if len(s) <= maxEventMessage {
		return s
	}
	cut := maxEventMessage - 3
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

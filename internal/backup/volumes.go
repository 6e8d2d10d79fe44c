package backup

// The marks rescue leaves on a PersistentVolume it sets to Retain, which a
// restore reads to bind the volume again and give its policy back.
const (
	// ReclaimAnnotation keeps the reclaim policy the volume had before.
	ReclaimAnnotation = "ns-doctor.io/reclaim-policy-before-rescue"
	// RetainedForAnnotation names the namespace whose rescue retained it.
	RetainedForAnnotation = "ns-doctor.io/rescued-namespace"
)

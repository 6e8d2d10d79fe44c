package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// operatorGroup is the API group of an operator that was uninstalled
	// with its custom resources still out there: nobody removes its
	// finalizer.
	operatorGroup     = "uninstalled.bench.ns-doctor.io"
	operatorFinalizer = operatorGroup + "/cleanup"
	// manyPurgeConfigMaps is the plain content beside each leftover, so
	// every namespace also needs a real deletion, not only a strip.
	manyPurgeConfigMaps = 5
)

// manyPurge is one contender of the purge-many phase: the commands that
// empty one batch, and its samples (one per run, all commands together).
type manyPurge struct {
	name    string
	short   string // in batch ids and namespace names
	argvs   func(batch string, names []string, backup string) [][]string
	samples []sample
}

// oneRunArgvs purges the whole batch with a single command.
func oneRunArgvs(batch string, _ []string, backup string) [][]string {
	return [][]string{{"kubectl", "ns-doctor", "purge", "--all-terminating", "-l", "batch=" + batch, "--force", "--yes",
		"--remove-finalizers=" + operatorGroup + "/*", "--backup-dir", backup}}
}

// separateRunArgvs purges the batch one namespace per command, each with
// the backup folder the single run would give it.
func separateRunArgvs(_ string, names []string, backup string) [][]string {
	return perNamespaceArgvs([]string{"kubectl", "ns-doctor"}, names, operatorGroup+"/*", backup)
}

// perNamespaceArgvs is the shell loop users write, as commands: `purge NAME
// --force --yes --remove-finalizers=F` for each namespace, through plugin
// (kubectl ns-doctor, or the binary itself), each NAME backed up under
// backup/NAME.
func perNamespaceArgvs(plugin, names []string, removeFinalizers, backup string) [][]string {
	out := make([][]string, len(names))
	for i, ns := range names {
		out[i] = append(slices.Clone(plugin), "purge", ns, "--force", "--yes",
			"--remove-finalizers="+removeFinalizers, "--backup-dir", filepath.Join(backup, ns))
	}
	return out
}

// purgeMany measures purging many namespaces an uninstalled operator left
// stuck in one run against one run per namespace. The namespace controller
// is not running on this control plane (purgeVsController starts it only
// for its own timing), so the measured commands are all that works.
func (b *bench) purgeMany(ctx context.Context) error {
	gvr, err := b.fx.EnsureCRD(ctx, operatorGroup, "Leftover", "leftovers")
	if err != nil {
		return err
	}
	n := b.o.manyPurgeNS
	cs := []*manyPurge{
		{name: "one run (--all-terminating -l)", short: "one", argvs: oneRunArgvs},
		{name: fmt.Sprintf("%d separate runs", n), short: "sep", argvs: separateRunArgvs},
	}
	var pops []float64
	for r := range b.o.manyPurgeRuns {
		// Each run starts with the other contender, as in measureRuns.
		for k := range cs {
			pop, err := b.purgeBatch(ctx, gvr, cs[(r+k)%len(cs)], r)
			if err != nil {
				return err
			}
			pops = append(pops, pop)
		}
	}
	b.rep.purgeManySection(n, len(b.fx.crds), pops, cs)
	return nil
}

// purgeBatch builds a fresh batch for run r, empties it with c's commands
// and fails unless every namespace is gone. It returns the build time.
func (b *bench) purgeBatch(ctx context.Context, gvr schema.GroupVersionResource, c *manyPurge, r int) (float64, error) {
	batch := fmt.Sprintf("pmany-%d-%s", r, c.short)
	t0 := time.Now()
	names, err := b.operatorLeftovers(ctx, gvr, batch)
	if err != nil {
		return 0, err
	}
	pop := since(t0)
	backup := filepath.Join(b.tmp, "backup", batch)
	defer func() { _ = os.RemoveAll(backup) }()
	time.Sleep(settle)
	s, err := b.meter.runAll(ctx, c.argvs(batch, names, backup))
	if err != nil {
		return 0, fmt.Errorf("purge-many, %s, run %d: %w", c.name, r+1, err)
	}
	if err := b.batchGone(ctx, "batch="+batch, len(names)); err != nil {
		return 0, fmt.Errorf("purge-many, %s, run %d: %w", c.name, r+1, err)
	}
	c.samples = append(c.samples, s)
	logf("[purge-many] run %d %-35s %7.2fs %6.0f requests %3.0f discoveries (built in %.1fs)", r+1, c.name, s.Seconds, s.Requests, discoveries(s), pop)
	return pop, nil
}

// operatorLeftovers makes the namespaces of one batch as
// test/purge/many_test.go does: labelled batch=<batch>, each with one
// custom resource held by operatorFinalizer and a few plain ConfigMaps,
// then deleted (content first: NamespaceLifecycle).
func (b *bench) operatorLeftovers(ctx context.Context, gvr schema.GroupVersionResource, batch string) ([]string, error) {
	names := make([]string, b.o.manyPurgeNS)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", batch, i)
	}
	err := parallel(ctx, len(names), 8, func(i int) error {
		ns := names[i]
		if err := b.fx.CreateNamespaceWithLabels(ctx, ns, map[string]string{"batch": batch}); err != nil {
			return err
		}
		if err := b.fx.CreateCustomResource(ctx, gvr, "Leftover", ns, "leftover", operatorFinalizer); err != nil {
			return err
		}
		for j := range manyPurgeConfigMaps {
			if err := b.fx.CreateConfigMap(ctx, ns, fmt.Sprintf("plain-%d", j), nil); err != nil {
				return err
			}
		}
		return b.fx.DeleteNamespace(ctx, ns)
	})
	return names, err
}

// batchGone fails naming every namespace of the batch (the namespaces
// with the labels of selector) still there: purge exits only once its
// namespaces are gone, so one left is a wrong result, not a slow one.
func (b *bench) batchGone(ctx context.Context, selector string, of int) error {
	l, err := b.fx.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	if len(l.Items) == 0 {
		return nil
	}
	left := make([]string, len(l.Items))
	for i, ns := range l.Items {
		left[i] = fmt.Sprintf("%s (%s, finalizers %v)", ns.Name, ns.Status.Phase, ns.Spec.Finalizers)
	}
	if len(left) > 10 {
		left = append(left[:10], fmt.Sprintf("and %d more", len(l.Items)-10))
	}
	return fmt.Errorf("%d of %d namespaces still there after the commands exited: %s", len(l.Items), of, strings.Join(left, ", "))
}

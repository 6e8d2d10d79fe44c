package consent

import (
	"strings"
	"testing"
)

// The terminal and the elicitation ask the same words: after a closing
// sentence the question follows on its line, otherwise on its own.
func TestPromptAndMessageSayTheSameRequest(t *testing.T) {
	closing := Request{Change: `purge namespace "shop"`, Lines: []string{Where("dev", "kind-dev"), "  leaks: x"},
		Closing: "Everything is saved first.", Question: "Type the namespace name to go on", Want: "shop"}
	want := "This will purge namespace \"shop\"\n  context \"dev\", cluster \"kind-dev\"\n    leaks: x\nEverything is saved first. Type the namespace name to go on"
	if got := closing.Prompt(); got != want+": " {
		t.Errorf("prompt:\n%q\nwant\n%q", got, want+": ")
	}
	if got := closing.Message(); got != want+"." {
		t.Errorf("message:\n%q", got)
	}
	open := closing
	open.Closing = ""
	if got := open.Prompt(); !strings.HasSuffix(got, "leaks: x\nType the namespace name to go on: ") {
		t.Errorf("prompt without a closing sentence: %q", got)
	}
	for typed, ok := range map[string]bool{"shop": true, "shop\n": true, " shop ": true, "sho": false, "": false, "shop2": false} {
		if open.Accepts(typed) != ok {
			t.Errorf("Accepts(%q) = %v", typed, !ok)
		}
	}
}

type volume struct {
	Name   string `json:"name"`
	Policy string `json:"policy"`
}

type doc struct {
	Namespace string   `json:"namespace"`
	Volumes   []volume `json:"volumes"`
	Tokens    []string `json:"tokens"`
	hidden    string
}

// A fingerprint covers every field the document's JSON says, whatever the
// order of its lists, and nothing it does not say.
func TestFingerprintCoversTheWholeDocument(t *testing.T) {
	base := func() doc {
		return doc{Namespace: "shop", Volumes: []volume{{"pv-a", "Delete"}, {"pv-b", "Retain"}}, Tokens: []string{"a", "b"}}
	}
	plan, err := NewPlan(base())
	if err != nil || !strings.HasPrefix(plan.Fingerprint, "sha256:") || !strings.HasPrefix(plan.ID, "plan-") {
		t.Fatalf("%+v %v", plan, err)
	}
	if again, _ := NewPlan(base()); again.ID == plan.ID || again.Fingerprint != plan.Fingerprint {
		t.Errorf("the same document: %+v, %+v", again, plan)
	}
	for what, change := range map[string]func(d *doc){
		"a field":         func(d *doc) { d.Namespace = "shop2" },
		"a list's item":   func(d *doc) { d.Volumes[1].Policy = "Delete" },
		"an item added":   func(d *doc) { d.Tokens = append(d.Tokens, "c") },
		"an item removed": func(d *doc) { d.Volumes = d.Volumes[:1] },
	} {
		d := base()
		change(&d)
		if moved, err := plan.Moved(d); err != nil || !moved {
			t.Errorf("%s: moved %v, %v", what, moved, err)
		}
	}
	for what, change := range map[string]func(d *doc){
		"lists reordered": func(d *doc) { d.Volumes[0], d.Volumes[1] = d.Volumes[1], d.Volumes[0]; d.Tokens = []string{"b", "a"} },
		"an unsaid field": func(d *doc) { d.hidden = "x" },
	} {
		d := base()
		change(&d)
		if moved, err := plan.Moved(d); err != nil || moved {
			t.Errorf("%s: moved %v, %v", what, moved, err)
		}
	}
}

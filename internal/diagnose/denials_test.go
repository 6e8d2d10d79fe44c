package diagnose

import (
	"reflect"
	"testing"
)

// The controller joins a pass's errors with ", ": each denial keeps its
// own words, however many there are.
func TestDenialsSplitTheControllersMessage(t *testing.T) {
	msg := `Failed to delete all resource types, 3 remaining: admission webhook "a.example.com" denied the request: events stay, ` +
		`admission webhook "a.example.com" denied the request: events stay, admission webhook "b.example.com" denied the request: no, not, ever`
	want := [][2]string{{"a.example.com", "events stay"}, {"a.example.com", "events stay"}, {"b.example.com", "no, not, ever"}}
	if got := denials(msg); !reflect.DeepEqual(got, want) {
		t.Errorf("denials = %q, want %q", got, want)
	}
	if got := denials(`admission webhook "c" denied the request`); !reflect.DeepEqual(got, [][2]string{{"c", ""}}) {
		t.Errorf("a denial without words: %q", got)
	}
	if got := denials("nothing denied"); got != nil {
		t.Errorf("no denial: %q", got)
	}
}

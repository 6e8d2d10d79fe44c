package main

import (
	"fmt"
	"slices"
	"testing"
)

// Over 2n runs every contender takes every place; for 3, every order runs once.
func TestOrder(t *testing.T) {
	seen := map[string]bool{}
	for r := range 6 {
		seen[fmt.Sprint(order(r, 3))] = true
	}
	if len(seen) != 6 || !slices.Equal(order(0, 3), []int{0, 1, 2}) || !slices.Equal(order(1, 2), []int{1, 0}) {
		t.Errorf("orders %v", seen)
	}
}

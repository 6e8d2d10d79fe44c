// Command racy writes one variable from two goroutines: built with -race
// it must end with exit code 66, the signal the end-to-end packages rely on.
package main

import "sync"

func main() {
	n := 0
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { n++ })
	}
	wg.Wait()
	_ = n
}

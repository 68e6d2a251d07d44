// lockmix.go: the lockmix workload, mirroring workloads/lockmix/lockmix.cpp: --tasks goroutines
// updating shared state under one sync.Mutex, --between increments before each update and
// --hold inside it.

package main

import (
	"flag"
	"fmt"
	"sync"
)

type lockmixWorkload struct {
	tasks, ops, hold, between uint64
	mu                        sync.Mutex
	count, sum, work          uint64
}

func (w *lockmixWorkload) run() {
	w.count, w.sum, w.work = 0, 0, 0
	var wg sync.WaitGroup
	for t := uint64(0); t < w.tasks; t++ {
		wg.Add(1)
		go func(t uint64) {
			defer wg.Done()
			var own uint64
			for op := uint64(0); op < w.ops; op++ {
				own += countUp(w.between)
				w.mu.Lock()
				count, sum := w.count, w.sum
				held := countUp(w.hold)
				w.count = count + 1
				w.sum = sum + t*w.ops + op
				w.work += held
				w.mu.Unlock()
			}
			w.mu.Lock()
			w.work += own
			w.mu.Unlock()
		}(t)
	}
	wg.Wait()
}

func (w *lockmixWorkload) check() error {
	n := w.tasks * w.ops
	wantSum := uint64(0)
	if n > 0 {
		if n%2 == 0 {
			wantSum = n / 2 * (n - 1)
		} else {
			wantSum = (n - 1) / 2 * n
		}
	}
	wantWork := n * (w.hold + w.between)
	if w.count != n || w.sum != wantSum || w.work != wantWork {
		return fmt.Errorf("lockmix: the state counted %d updates summing to %d (work %d), expected %d summing to %d (work %d)",
			w.count, w.sum, w.work, n, wantSum, wantWork)
	}
	return nil
}

func (w *lockmixWorkload) goroutinesPerRun() uint64 { return w.tasks }

func newLockmix(flags *flag.FlagSet) func() (workload, error) {
	tasks := flags.Uint64("tasks", 8, "goroutines sharing the mutex")
	ops := flags.Uint64("ops", 2000, "updates per goroutine")
	hold := flags.Uint64("hold", 100, "increments inside each critical section")
	between := flags.Uint64("between", 1000, "increments before each update")
	return func() (workload, error) {
		return &lockmixWorkload{tasks: *tasks, ops: *ops, hold: *hold, between: *between}, nil
	}
}

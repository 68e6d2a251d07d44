// wakeup.go: the wakeup workload, mirroring workloads/wakeup/wakeup.cpp: Go's own
// BenchmarkWakeupParallel shape (runtime/proc_test.go, benchWakeupParallel), with its busy spin
// (spin(d): `for nanotime() < end {}`, here on time.Now).

package main

import (
	"flag"
	"fmt"
	"sync"
	"time"
)

type wakeupWorkload struct {
	rounds           uint64
	delay, wakeDelay time.Duration
	received, wrong  uint64
}

// spinFor is Go's spin(d): busy until d has passed.
func spinFor(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

func (w *wakeupWorkload) run() {
	ping, pong := make(chan uint64), make(chan uint64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	note := func(got, turn uint64) {
		mu.Lock()
		w.received++
		if got != turn {
			w.wrong++
		}
		mu.Unlock()
	}
	w.received, w.wrong = 0, 0
	wg.Add(2)
	go func() {
		defer wg.Done()
		for r := uint64(0); r < w.rounds; r++ {
			spinFor(w.delay + w.wakeDelay) // sender
			ping <- r
			spinFor(w.delay) // receiver
			note(<-pong, r)
		}
	}()
	go func() {
		defer wg.Done()
		for r := uint64(0); r < w.rounds; r++ {
			spinFor(w.delay) // receiver
			note(<-ping, r)
			spinFor(w.delay + w.wakeDelay) // sender
			pong <- r
		}
	}()
	wg.Wait()
}

func (w *wakeupWorkload) check() error {
	if w.wrong != 0 {
		return fmt.Errorf("wakeup: %d receives got another turn's value", w.wrong)
	}
	if w.received != 2*w.rounds {
		return fmt.Errorf("wakeup received %d values, expected %d", w.received, 2*w.rounds)
	}
	return nil
}

func (w *wakeupWorkload) goroutinesPerRun() uint64 { return 2 }

func newWakeup(flags *flag.FlagSet) func() (workload, error) {
	rounds := flags.Uint64("rounds", 500, "turns each goroutine takes as sender and as receiver")
	delay := flags.Uint64("delay-us", 20, "microseconds each goroutine spins before its receive")
	wakeDelay := flags.Uint64("wake-delay-us", 5, "microseconds the sender spins beyond delay-us")
	return func() (workload, error) {
		if *rounds == 0 {
			return nil, fmt.Errorf("--rounds 0: use at least one turn")
		}
		return &wakeupWorkload{rounds: *rounds, delay: time.Duration(*delay) * time.Microsecond,
			wakeDelay: time.Duration(*wakeDelay) * time.Microsecond}, nil
	}
}

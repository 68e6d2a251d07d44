// pingpong.go: the pingpong workload, mirroring workloads/pingpong/pingpong.cpp: Go's
// BenchmarkPingPongHog (runtime/proc_test.go) with --pairs pairs and --hog hogs.
//
// Each pair hands a token through two unbuffered channels --rounds times; each hog spins in
// countUp chunks until every pair is done, or --hog-iters increments. Go preempts a hog by
// signal (async preemption, Go 1.14+) as well as at its calls; schedlab only at safe points.

package main

import (
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
)

// pingPongHogChunk is kHogChunk in pingpong.cpp: increments between two looks at the pairs.
const pingPongHogChunk = 4096

type pingPongWorkload struct {
	pairs, rounds, hog, hogIters uint64
	tokens, hogSpun              []uint64
}

func (w *pingPongWorkload) run() {
	var pairsDone atomic.Uint64
	var wg sync.WaitGroup
	for h := uint64(0); h < w.hog; h++ {
		wg.Add(1)
		go func(h uint64) {
			defer wg.Done()
			var spun uint64
			for {
				n := w.hogIters - spun
				if n > pingPongHogChunk {
					n = pingPongHogChunk
				}
				spun += countUp(n)
				if spun >= w.hogIters || pairsDone.Load() >= w.pairs {
					break
				}
			}
			w.hogSpun[h] = spun
		}(h)
	}
	for i := uint64(0); i < w.pairs; i++ {
		ping, pong := make(chan uint64), make(chan uint64)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := uint64(0); r < w.rounds; r++ {
				pong <- <-ping + 1
			}
		}()
		go func(i uint64) {
			defer wg.Done()
			var token uint64
			for r := uint64(0); r < w.rounds; r++ {
				ping <- token + 1
				token = <-pong
			}
			w.tokens[i] = token
			pairsDone.Add(1)
		}(i)
	}
	wg.Wait()
}

func (w *pingPongWorkload) check() error {
	for i, t := range w.tokens {
		if t != 2*w.rounds {
			return fmt.Errorf("pingpong pair %d's token came back as %d after %d round trips, expected %d",
				i, t, w.rounds, 2*w.rounds)
		}
	}
	for h, s := range w.hogSpun {
		if s == 0 || s > w.hogIters {
			return fmt.Errorf("pingpong hog %d spun %d increments, expected 1 to --hog-iters %d", h, s, w.hogIters)
		}
	}
	return nil
}

func (w *pingPongWorkload) goroutinesPerRun() uint64 { return 2*w.pairs + w.hog }

func newPingPong(flags *flag.FlagSet) func() (workload, error) {
	pairs := flags.Uint64("pairs", 1, "pairs of goroutines")
	rounds := flags.Uint64("rounds", 10000, "round trips per pair")
	hog := flags.Uint64("hog", 0, "CPU-bound goroutines beside the pairs")
	hogIters := flags.Uint64("hog-iters", 1000000000, "the most increments a hog spins")
	return func() (workload, error) {
		if *pairs == 0 {
			return nil, fmt.Errorf("--pairs 0: use at least one pair")
		}
		if *hogIters == 0 {
			return nil, fmt.Errorf("--hog-iters 0: use 1 or more")
		}
		return &pingPongWorkload{pairs: *pairs, rounds: *rounds, hog: *hog, hogIters: *hogIters,
			tokens: make([]uint64, *pairs), hogSpun: make([]uint64, *hog)}, nil
	}
}

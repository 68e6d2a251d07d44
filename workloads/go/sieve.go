// sieve.go: the sieve workload, mirroring workloads/sieve/sieve.cpp: Go's concurrent prime
// sieve (the Go tour's), made to end: the generator stops after the --primes-th prime and
// closes its channel, and each filter closes its output when its input closes.

package main

import (
	"flag"
	"fmt"
	"math"
	"sync"
)

const sieveMaxPrimes = 1000000 // kSieveMaxPrimes in sieve.hpp

// nthPrime is nth_prime in sieve.cpp: a sequential sieve up to Rosser's bound.
func nthPrime(n uint64) uint64 {
	limit := uint64(15)
	if n >= 6 {
		x := float64(n)
		limit = uint64(x*(math.Log(x)+math.Log(math.Log(x)))) + 1
	}
	composite := make([]bool, limit+1)
	count := uint64(0)
	for v := uint64(2); v <= limit; v++ {
		if composite[v] {
			continue
		}
		count++
		if count == n {
			return v
		}
		for m := v * v; m <= limit; m += v {
			composite[m] = true
		}
	}
	panic("nthPrime: the bound was too small")
}

type sieveWorkload struct {
	primes, lastPrime, found, last, after uint64
}

func (w *sieveWorkload) run() {
	w.found, w.last, w.after = 0, 0, 0
	var wg sync.WaitGroup
	in := make(chan uint64)
	wg.Add(1)
	go func(gen chan<- uint64) {
		defer wg.Done()
		for v := uint64(2); v <= w.lastPrime; v++ {
			gen <- v
		}
		close(gen)
	}(in)
	for i := uint64(0); i < w.primes; i++ {
		prime, ok := <-in
		if !ok {
			break
		}
		w.found++
		w.last = prime
		if i+1 == w.primes {
			break
		}
		out := make(chan uint64)
		wg.Add(1)
		go func(in <-chan uint64, out chan<- uint64, p uint64) {
			defer wg.Done()
			for v := range in {
				if v%p != 0 {
					out <- v
				}
			}
			close(out)
		}(in, out, prime)
		in = out
	}
	for range in {
		w.after++
	}
	wg.Wait()
}

func (w *sieveWorkload) check() error {
	if w.found != w.primes || w.last != w.lastPrime || w.after != 0 {
		return fmt.Errorf("sieve found %d primes, the last %d, then %d more numbers; expected %d primes, the last %d, then none",
			w.found, w.last, w.after, w.primes, w.lastPrime)
	}
	return nil
}

func (w *sieveWorkload) goroutinesPerRun() uint64 { return w.primes }

func newSieve(flags *flag.FlagSet) func() (workload, error) {
	primes := flags.Uint64("primes", 1000, "primes to find")
	return func() (workload, error) {
		if *primes < 1 || *primes > sieveMaxPrimes {
			return nil, fmt.Errorf("--primes %d: use 1..%d", *primes, sieveMaxPrimes)
		}
		return &sieveWorkload{primes: *primes, lastPrime: nthPrime(*primes)}, nil
	}
}

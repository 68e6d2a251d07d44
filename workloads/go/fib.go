// fib.go: the fib-go and fib workloads, mirroring workloads/fib/fib.cpp.
//
// fib-go is the seed's goroutine shape: every call with n > base and n > cutoff starts two
// goroutines, for fib(n-1) and fib(n-2), and receives both results over channels; both are
// started before either is received, as the C++ version spawns both children before joining.
// base is 2 (fib(1) = fib(2) = 1, the seed's) or 1 (fib(n) = n below 2, tzcnt's fib).
// fib is the Cilk shape: every call with n >= 2 and n > cutoff starts one goroutine for
// fib(n-1), computes fib(n-2) itself, then receives. Other calls are serial, with each shape's
// base case (fib-go: fib(1) = fib(2) = 1; fib: fib(n) = n for n < 2).
//
// Each result channel has one slot: it stands for the C++ task handle, which holds the result
// until it is joined, so a child finishes without waiting for its parent to receive.

package main

import (
	"flag"
	"fmt"
)

const (
	fibMaxN     = 50 // as kFibMaxN in fib.hpp
	fibSeedBase = 2  // as kFibSeedBase: the go shape's default base case
)

type fibShape int

const (
	shapeGo   fibShape = iota // two goroutines per call
	shapeCilk                 // one goroutine per call
)

func fibSerialGo(n int) uint64 {
	if n <= 2 {
		return 1
	}
	return fibSerialGo(n-1) + fibSerialGo(n-2)
}

func fibSerialCilk(n int) uint64 {
	if n < 2 {
		return uint64(n)
	}
	return fibSerialCilk(n-1) + fibSerialCilk(n-2)
}

// fibSerialBase is the serial leaf of a go-shape call with this base case.
func fibSerialBase(n, base int) uint64 {
	if base == fibSeedBase {
		return fibSerialGo(n)
	}
	return fibSerialCilk(n)
}

func fibGo(n, cutoff, base int) uint64 {
	if n <= base || n <= cutoff {
		return fibSerialBase(n, base)
	}
	a := make(chan uint64, 1)
	b := make(chan uint64, 1)
	go func() { a <- fibGo(n-1, cutoff, base) }()
	go func() { b <- fibGo(n-2, cutoff, base) }()
	return <-a + <-b
}

func fibCilk(n, cutoff int) uint64 {
	if n < 2 || n <= cutoff {
		return fibSerialCilk(n)
	}
	a := make(chan uint64, 1)
	go func() { a <- fibCilk(n-1, cutoff) }()
	b := fibCilk(n-2, cutoff)
	return <-a + b
}

// fibReference is the iterative fib, for checking.
func fibReference(n int) uint64 {
	var a, b uint64 = 0, 1
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

// fibGoroutines counts the goroutines one call tree starts, as fib_tasks() in fib.cpp:
// none at a serial call, else the call's own plus its children's.
func fibGoroutines(shape fibShape, n, cutoff, base int) uint64 {
	lastBase, perCall := 1, uint64(1) // fib: serial below 2, one goroutine per call
	if shape == shapeGo {
		lastBase, perCall = base, 2
	}
	t := make([]uint64, n+1)
	for m := 0; m <= n; m++ {
		if m > lastBase && m > cutoff {
			t[m] = perCall + t[m-1] + t[m-2]
		}
	}
	return t[n]
}

type fibWorkload struct {
	shape           fibShape
	n, cutoff, base int
	result          uint64
}

func (w *fibWorkload) run() {
	if w.shape == shapeGo {
		w.result = fibGo(w.n, w.cutoff, w.base)
	} else {
		w.result = fibCilk(w.n, w.cutoff)
	}
}

func (w *fibWorkload) check() error {
	if want := fibReference(w.n); w.result != want {
		return fmt.Errorf("fib(%d) returned %d, expected %d", w.n, w.result, want)
	}
	return nil
}

func (w *fibWorkload) goroutinesPerRun() uint64 {
	return fibGoroutines(w.shape, w.n, w.cutoff, w.base)
}

func newFib(shape fibShape, defaultN int) constructor {
	return func(flags *flag.FlagSet) func() (workload, error) {
		n := flags.Int("n", defaultN, "compute fib(n)")
		cutoff := flags.Int("cutoff", 0, "calls with n <= cutoff run serially; 0: none")
		base := fibSeedBase
		if shape == shapeGo { // only fib-go has --base, as in schedlab's registry
			flags.IntVar(&base, "base", fibSeedBase, "calls with n <= base return at once: 2 or 1")
		}
		return func() (workload, error) {
			if base != 1 && base != fibSeedBase {
				return nil, fmt.Errorf("--base %d is not a base case: use 2 (fib(1) = fib(2) = 1) or 1 (fib(n) = n below 2)", base)
			}
			// The ranges of make_fib(): fib-go with base 2 has no fib(0) (its leaves start at 1).
			minN := 0
			if shape == shapeGo && base == fibSeedBase {
				minN = 1
			}
			if *n < minN || *n > fibMaxN {
				return nil, fmt.Errorf("--n %d is out of range: use %d <= n <= %d", *n, minN, fibMaxN)
			}
			if *cutoff < 0 {
				return nil, fmt.Errorf("--cutoff %d is negative: use 0 (no cutoff) or a positive n", *cutoff)
			}
			return &fibWorkload{shape: shape, n: *n, cutoff: *cutoff, base: base}, nil
		}
	}
}

var (
	newFibGo   = newFib(shapeGo, 27)
	newFibCilk = newFib(shapeCilk, 30)
)

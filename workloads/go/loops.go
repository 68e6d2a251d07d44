// loops.go: the loops workload, mirroring workloads/loops/loops.cpp.
//
// The seeds' CPU-bound program: the root goroutine starts one goroutine per task, joined by a
// sync.WaitGroup; goroutine i runs lengths[i] iterations of an increment loop and adds the count
// it computed to a shared atomic total, which must equal the sum of the lengths. The lengths
// (uniform, one-long, heavy-tail) are those of workloads/loops/lengths.hpp, bit for bit.

package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// splitMix64 is the generator of lengths.hpp.
type splitMix64 struct{ state uint64 }

func (s *splitMix64) next() uint64 {
	s.state += 0x9E3779B97F4A7C15
	z := s.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// portableCbrt is portable_cbrt() of lengths.hpp: the same operations, so the same bits (Go's
// math.Cbrt and math.Pow are not glibc's). The float64() conversions forbid the compiler to fuse
// a product with an addition.
func portableCbrt(a float64) float64 {
	f, e := math.Frexp(a) // a = f * 2^e, f in [0.5, 1)
	r := ((e % 3) + 3) % 3
	f = math.Ldexp(f, r) // f in [0.5, 4), e - r divisible by 3
	e -= r
	y := 1.0
	for i := 0; i < 8; i++ {
		y = (float64(2*y) + f/float64(y*y)) / 3
	}
	return math.Ldexp(y, e/3)
}

// loopLengths is loop_lengths() of lengths.hpp.
func loopLengths(tasks, iters uint64, skew string, seed uint64, longAt string) ([]uint64, error) {
	if skew != "uniform" && skew != "one-long" && skew != "heavy-tail" {
		return nil, fmt.Errorf("--skew %s: unknown; use uniform, one-long or heavy-tail", skew)
	}
	if longAt != "first" && longAt != "last" && longAt != "random" {
		return nil, fmt.Errorf("--long-at %s: unknown; use first, last or random", longAt)
	}
	if hi, _ := bits.Mul64(tasks, iters); hi != 0 {
		return nil, fmt.Errorf("--tasks %d times --iters %d overflows 64 bits; lower either",
			tasks, iters)
	}
	lengths := make([]uint64, tasks)
	for i := range lengths {
		lengths[i] = iters
	}
	switch {
	case skew == "one-long" && tasks > 0:
		at := uint64(0)
		switch longAt {
		case "last":
			at = tasks - 1
		case "random":
			rng := splitMix64{state: seed}
			at = rng.next() % tasks
		}
		lengths[at] = iters * tasks / 2
	case skew == "heavy-tail":
		const alpha = 1.5
		xm := float64(iters) * (alpha - 1) / alpha
		limit := iters * tasks / 4
		if limit < 1 {
			limit = 1
		}
		rng := splitMix64{state: seed}
		for i := range lengths {
			u := float64(rng.next()>>11) * 0x1p-53 // [0, 1)
			v := 1 - u                             // (0, 1], exact
			x := math.Floor(xm / portableCbrt(float64(v*v)))
			switch {
			case x < 1:
				lengths[i] = 1
			case x >= float64(limit):
				lengths[i] = limit
			default:
				lengths[i] = uint64(x)
			}
		}
	}
	return lengths, nil
}

type loopsWorkload struct {
	lengths []uint64
	want    uint64 // sum of lengths
	total   atomic.Uint64
}

func (w *loopsWorkload) run() {
	w.total.Store(0)
	var wg sync.WaitGroup
	wg.Add(len(w.lengths))
	for _, length := range w.lengths {
		go func(n uint64) {
			defer wg.Done()
			w.total.Add(countUp(n))
		}(length)
	}
	wg.Wait()
}

func (w *loopsWorkload) check() error {
	if got := w.total.Load(); got != w.want {
		return fmt.Errorf("loops summed %d increments, expected %d", got, w.want)
	}
	return nil
}

func (w *loopsWorkload) goroutinesPerRun() uint64 { return uint64(len(w.lengths)) }

type loopsFlags struct {
	tasks, iters, seed *uint64
	skew, longAt       *string
}

func registerLoopsFlags(flags *flag.FlagSet) loopsFlags {
	return loopsFlags{
		tasks:  flags.Uint64("tasks", 2000, "goroutines the root starts"),
		iters:  flags.Uint64("iters", 1000000, "loop iterations per goroutine, before skew"),
		skew:   flags.String("skew", "uniform", "uniform, one-long or heavy-tail"),
		seed:   flags.Uint64("seed", 1, "the generator seed of heavy-tail and of one-long's random position"),
		longAt: flags.String("long-at", "first", "one-long: the long task first, last or at a random position"),
	}
}

func (f loopsFlags) lengths() ([]uint64, error) {
	return loopLengths(*f.tasks, *f.iters, *f.skew, *f.seed, *f.longAt)
}

func newLoops(flags *flag.FlagSet) func() (workload, error) {
	f := registerLoopsFlags(flags)
	return func() (workload, error) {
		lengths, err := f.lengths()
		if err != nil {
			return nil, err
		}
		w := &loopsWorkload{lengths: lengths}
		for _, n := range lengths {
			w.want += n
		}
		return w, nil
	}
}

// printLoopLengths serves `schedlab-go loop-lengths --tasks T --iters M --skew S --seed X`:
// one JSON line {"lengths":[...]} (or {"error":"..."} and status 1), for the test that checks
// this generator against the C++ one.
func printLoopLengths(args []string, out io.Writer) int {
	flags := newFlagSet("loop-lengths")
	f := registerLoopsFlags(flags)
	err := parseFlags(flags, args)
	var lengths []uint64
	if err == nil {
		lengths, err = f.lengths()
	}
	if err != nil {
		printLine(out, struct {
			Error string `json:"error"`
		}{err.Error()})
		return 1
	}
	printLine(out, struct {
		Lengths []uint64 `json:"lengths"`
	}{lengths})
	return 0
}

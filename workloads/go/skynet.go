// skynet.go: the skynet workload, mirroring workloads/skynet/skynet.cpp, written as the original
// Go program (atemerev/skynet, go/skynet.go) writes it.
//
// Every inner node starts 10 goroutines and receives their 10 sums from one unbuffered channel;
// leaf i sends its ordinal number i. The root runs on the goroutine that runs the measured
// region (the original starts it as a goroutine of its own and receives its sum over a channel),
// so that the goroutines counted are the tasks schedlab counts: every node but the root.

package main

import (
	"flag"
	"fmt"
)

const (
	skynetFanOut    = 10         // the benchmark's definition: a 10-way tree
	skynetMaxLeaves = 1000000000 // kSkynetMaxLeaves in skynet.hpp
)

// skynetSum returns the sum of the leaves below a node whose first leaf is num and which has
// size leaves, starting a goroutine per child.
func skynetSum(num, size uint64) uint64 {
	if size == 1 {
		return num
	}
	rc := make(chan uint64)
	child := size / skynetFanOut
	for i := uint64(0); i < skynetFanOut; i++ {
		go skynet(rc, num+i*child, child)
	}
	var sum uint64
	for i := 0; i < skynetFanOut; i++ {
		sum += <-rc
	}
	return sum
}

// skynet is one goroutine of the tree: it sends its subtree's sum to its parent.
func skynet(c chan<- uint64, num, size uint64) {
	c <- skynetSum(num, size)
}

type skynetWorkload struct {
	leaves, result uint64
}

func (w *skynetWorkload) run() { w.result = skynetSum(0, w.leaves) }

func (w *skynetWorkload) check() error {
	// leaves (leaves - 1) / 2, halving the even factor first (skynet_sum in skynet.cpp).
	want := w.leaves / 2 * (w.leaves - 1)
	if w.leaves%2 != 0 {
		want = (w.leaves - 1) / 2 * w.leaves
	}
	if w.result != want {
		return fmt.Errorf("skynet with %d leaves summed to %d, expected %d", w.leaves, w.result, want)
	}
	return nil
}

// goroutinesPerRun is skynet_tasks(): every node but the root.
func (w *skynetWorkload) goroutinesPerRun() uint64 {
	return (w.leaves*skynetFanOut-1)/(skynetFanOut-1) - 1
}

func newSkynet(flags *flag.FlagSet) func() (workload, error) {
	leaves := flags.Uint64("leaves", 1000000, "leaves of the tree, a power of 10")
	return func() (workload, error) {
		v := *leaves
		for v > 1 && v%skynetFanOut == 0 {
			v /= skynetFanOut
		}
		if v != 1 || *leaves > skynetMaxLeaves {
			return nil, fmt.Errorf("--leaves %d is not a power of 10 up to 10^9: the tree is 10-way, use e.g. --leaves 1000000", *leaves)
		}
		return &skynetWorkload{leaves: *leaves}, nil
	}
}

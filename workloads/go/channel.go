// channel.go: the channel workload, mirroring workloads/channel/channel.cpp: tzcnt's channel
// benchmark shape, --values numbers through one buffered channel of --capacity.

package main

import (
	"flag"
	"fmt"
	"sync"
)

type channelWorkload struct {
	values, producers, consumers, capacity uint64
	counts, sums                           []uint64
}

func (w *channelWorkload) run() {
	ch := make(chan uint64, w.capacity)
	var consumers sync.WaitGroup
	for c := uint64(0); c < w.consumers; c++ {
		consumers.Add(1)
		go func(c uint64) {
			defer consumers.Done()
			var count, sum uint64
			for v := range ch {
				count++
				sum += v
			}
			w.counts[c], w.sums[c] = count, sum
		}(c)
	}
	var producers sync.WaitGroup
	per, rem := w.values/w.producers, w.values%w.producers
	base := uint64(0)
	for p := uint64(0); p < w.producers; p++ {
		count := per
		if p < rem {
			count++
		}
		producers.Add(1)
		go func(base, count uint64) {
			defer producers.Done()
			for i := uint64(0); i < count; i++ {
				ch <- base + i
			}
		}(base, count)
		base += count
	}
	producers.Wait()
	close(ch)
	consumers.Wait()
}

func (w *channelWorkload) check() error {
	var count, sum uint64
	for c := range w.counts {
		count += w.counts[c]
		sum += w.sums[c]
	}
	n := w.values
	want := uint64(0)
	if n > 0 {
		if n%2 == 0 {
			want = n / 2 * (n - 1)
		} else {
			want = (n - 1) / 2 * n
		}
	}
	if count != n || sum != want {
		return fmt.Errorf("channel: the consumers received %d values summing to %d, expected %d summing to %d",
			count, sum, n, want)
	}
	return nil
}

func (w *channelWorkload) goroutinesPerRun() uint64 { return w.producers + w.consumers }

func newChannel(flags *flag.FlagSet) func() (workload, error) {
	values := flags.Uint64("values", 1000000, "numbers sent through the channel")
	producers := flags.Uint64("producers", 1, "sending goroutines")
	consumers := flags.Uint64("consumers", 1, "receiving goroutines")
	capacity := flags.Uint64("capacity", 1023, "values the channel buffers")
	return func() (workload, error) {
		if *producers == 0 || *consumers == 0 {
			return nil, fmt.Errorf("--producers and --consumers must be at least 1")
		}
		return &channelWorkload{values: *values, producers: *producers, consumers: *consumers, capacity: *capacity,
			counts: make([]uint64, *consumers), sums: make([]uint64, *consumers)}, nil
	}
}

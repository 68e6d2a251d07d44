// latency.go: the measured region's scheduling latencies, from Go's own runtime/metrics.
//
// /sched/latencies:seconds (Go 1.17 and later) is "the distribution of the time goroutines have
// spent in the scheduler in a runnable state before actually running": runtime.casgstatus adds
// up a goroutine's time in _Grunnable and records it when the goroutine next runs, into an HDR
// histogram of 16 sub-buckets per power of two (runtime/histogram.go). Go samples it: a goroutine
// is tracked on one of every 8 transitions out of _Grunning (gTrackingPeriod), and a new
// goroutine from a random point of that cycle, so the counts are about an eighth of the events
// and the distribution an unbiased sample of them. Go's histogram is cumulative over the
// program's life; the difference of a read before and a read after the measured region is the
// region's. schedlab computes the percentiles from the buckets as it does for its own
// (harness/go_reference.cpp, latency.hpp).
package main

import (
	"math"
	"runtime/metrics"
)

const schedLatenciesMetric = "/sched/latencies:seconds"

// schedLatencies is one read of Go's cumulative histogram.
type schedLatencies struct {
	counts []uint64
	bounds []float64 // seconds; len(counts)+1; the first is -Inf (negative durations), the last +Inf
}

// latencySpread is a region's distribution as schedlab reads it: the non-empty buckets in
// ascending order, each [low_ns, width_ns, count].
type latencySpread struct {
	Buckets [][3]uint64 `json:"buckets"`
}

func readSchedLatencies() schedLatencies {
	sample := []metrics.Sample{{Name: schedLatenciesMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		panic("this Go has no " + schedLatenciesMetric + " (Go 1.17 or later has it)")
	}
	h := sample[0].Value.Float64Histogram()
	// Read copies into memory of its own, which the next Read may reuse: keep copies.
	return schedLatencies{counts: append([]uint64(nil), h.Counts...), bounds: append([]float64(nil), h.Buckets...)}
}

// since is the distribution of the latencies recorded between `before` and this read. Go's
// underflow bucket (a negative duration, which a clock going back can give) counts as 0 ns; its
// last bucket, unbounded above, gets the width of the one below it.
func (after schedLatencies) since(before schedLatencies) *latencySpread {
	out := &latencySpread{Buckets: [][3]uint64{}}
	for i, n := range after.counts {
		if i < len(before.counts) {
			n -= before.counts[i]
		}
		if n == 0 {
			continue
		}
		low, high := after.bounds[i], after.bounds[i+1]
		if math.IsInf(low, -1) {
			low, high = 0, 1e-9
		}
		if math.IsInf(high, 1) {
			high = low + (low - after.bounds[i-1])
		}
		lowNs := uint64(math.Round(low * 1e9))
		width := uint64(math.Round(high*1e9)) - lowNs
		if width == 0 {
			width = 1
		}
		out.Buckets = append(out.Buckets, [3]uint64{lowNs, width, n})
	}
	return out
}

// schedlab-go: the go-runtime reference rows of schedlab.
//
// schedlab's workloads are written once against its own task API and run under each C++
// scheduler. The seeds they come from are Go programs, so schedlab also runs those programs'
// shapes on Go's own G/M/P scheduler, as a reference row. This binary holds them, one workload
// per file, each mirroring the C++ workload of the same name:
//
//	schedlab-go WORKLOAD [--PARAM VALUE ...] [--warmup W] [--reps K]
//
// The flags have the names of schedlab's workload parameters and take their canonical values
// (plain decimal integers, words). GOMAXPROCS comes from the environment, set by the caller.
// Each workload builds its inputs first, then runs W unprinted warm-up repetitions and K measured
// ones; only the measured region is timed, and every repetition's result is checked. Each
// measured repetition prints one JSON line on stdout:
//
//	{"workload":"fib-go","wall_ns":123,"tasks":N,"threads":T,"ok":true,"error":""}
//
// tasks counts the goroutines one repetition starts plus one for the root (the goroutine running
// the measured region), as schedlab counts the root task. threads counts the OS threads the Go
// runtime has created since the program started (runtime/pprof's threadcreate profile: every
// M, sysmon's included), for the rows' threads_created. With --sched-latency=on each line also
// has "sched_latency": {"buckets": [[low_ns, width_ns, count], ...]}, the measured region's
// scheduling latencies from Go's own runtime/metrics (latency.go). A bad flag or a failed check
// prints one line with ok=false and the error instead, and the exit status is 1.
//
// `schedlab-go loop-lengths --tasks T --iters M --skew S --seed X` is not a workload: it prints
// the loops workload's lengths, for the test that compares them with the C++ generator's.
// `schedlab-go list` prints the workloads it has, one per line, for the test that compares them
// with the C++ registry's go twins.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"
)

// workload is one workload with its inputs ready.
type workload interface {
	run()                     // the measured region
	check() error             // nil if the last run computed the right result
	goroutinesPerRun() uint64 // goroutines one run starts, the root excluded
}

// A workload's constructor registers its flags on the flag set and returns a function that,
// once the flags are parsed, validates them and builds the inputs.
type constructor func(flags *flag.FlagSet) func() (workload, error)

var workloads = map[string]constructor{
	"fib-go":   newFibGo,
	"fib":      newFibCilk,
	"loops":    newLoops,
	"iomix":    newIomix,
	"netmix":   newNetmix,
	"skynet":   newSkynet,
	"nqueens":  newNqueens,
	"uts":      newUts,
	"pingpong": newPingPong,
	"wakeup":   newWakeup,
	"sieve":    newSieve,
	"channel":  newChannel,
	"lockmix":  newLockmix,
}

// The workloads' names, sorted: for `schedlab-go list`, which the tests compare with the C++
// registry's go twins (WorkloadEntry::go_twin), and for the error that lists them. Read from
// the map, so that no second list can drift from it.
func workloadNames() []string {
	names := make([]string, 0, len(workloads))
	for name := range workloads {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// The line printed per measured repetition, or once on failure.
type result struct {
	Workload     string         `json:"workload"`
	WallNs       int64          `json:"wall_ns"`
	Tasks        uint64         `json:"tasks"`
	Threads      int            `json:"threads"`
	SchedLatency *latencySpread `json:"sched_latency,omitempty"`
	OK           bool           `json:"ok"`
	Error        string         `json:"error"`
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout))
}

// printLine writes v as one JSON line (without HTML escaping: an error may contain "<=").
func printLine(out io.Writer, v any) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // plain strings and numbers into stdout: nothing to recover
	}
}

func fail(out io.Writer, name string, err error) int {
	printLine(out, result{Workload: name, Error: err.Error()})
	return 1
}

func runMain(args []string, out io.Writer) int {
	if len(args) == 0 {
		return fail(out, "", fmt.Errorf("no workload given: use schedlab-go WORKLOAD "+
			"[--PARAM VALUE ...] with WORKLOAD one of "+strings.Join(workloadNames(), ", ")))
	}
	name := args[0]
	// Not a workload: prints the loops workload's per-task lengths, so that a test can compare
	// them with the C++ generator's (lengths.hpp).
	if name == "loop-lengths" {
		return printLoopLengths(args[1:], out)
	}
	// Not a workload either: the workloads this program has, one name per line.
	if name == "list" {
		for _, w := range workloadNames() {
			fmt.Fprintln(out, w)
		}
		return 0
	}
	newWorkload, found := workloads[name]
	if !found {
		return fail(out, name,
			fmt.Errorf("unknown workload %q: choose one of %s", name, strings.Join(workloadNames(), ", ")))
	}

	flags := newFlagSet(name)
	warmup := flags.Uint("warmup", 0, "unprinted repetitions before the measured ones")
	reps := flags.Uint("reps", 1, "measured repetitions, one JSON line each")
	schedLatency := flags.String("sched-latency", "off", "on: report the measured region's scheduling latencies")
	build := newWorkload(flags)
	if err := parseFlags(flags, args[1:]); err != nil {
		return fail(out, name, err)
	}
	latency, err := onOff("sched-latency", *schedLatency)
	if err != nil {
		return fail(out, name, err)
	}
	w, err := build()
	if err != nil {
		return fail(out, name, err)
	}

	for rep := uint(0); rep < *warmup+*reps; rep++ {
		var before schedLatencies
		if latency {
			before = readSchedLatencies()
		}
		start := time.Now()
		w.run()
		wall := time.Since(start)
		var spread *latencySpread
		if latency {
			spread = readSchedLatencies().since(before)
		}
		if err := w.check(); err != nil {
			return fail(out, name, err)
		}
		if rep >= *warmup {
			printLine(out, result{Workload: name, WallNs: wall.Nanoseconds(),
				Tasks: w.goroutinesPerRun() + 1, Threads: pprof.Lookup("threadcreate").Count(),
				SchedLatency: spread, OK: true})
		}
	}
	return 0
}

// newFlagSet returns a flag set that reports errors to the caller instead of printing usage.
func newFlagSet(name string) *flag.FlagSet {
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	return flags
}

func parseFlags(flags *flag.FlagSet, args []string) error {
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: every parameter is --NAME VALUE", flags.Arg(0))
	}
	return nil
}

// onOff parses a schedlab on|off parameter.
func onOff(flagName, value string) (bool, error) {
	switch value {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("--%s %q: use on or off", flagName, value)
}

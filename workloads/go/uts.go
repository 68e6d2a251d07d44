// uts.go: the uts workload, mirroring workloads/uts/uts.cpp, on Go's crypto/sha1 and math.
//
// The same trees from the same random stream (rng_init, rng_spawn, rng_rand of the UTS
// distribution); one goroutine per child, joined by a sync.WaitGroup, each returning its
// subtree's counts through its own slot. The check is the tree's node, leaf and depth counts.
// Go's math library is not glibc's: a last-bit difference in log, pow or sin could change a
// floor and so the tree. It does not for the named trees: this program draws T1, T2 and T3 with
// the published counts (checked when the twin was written, 4M nodes each; the test suite runs
// the mini trees, whose sizes the C++ program agrees with).

package main

import (
	"crypto/sha1"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"sort"
	"sync"
)

type utsTree struct {
	binomial bool
	shape    string // geometric trees: linear, expdec, cyclic, fixed
	genMx    int
	b0       float64
	seed     int32
	q        float64
	m        int
	nodes    uint64
	leaves   uint64
	depth    uint64
}

// The named trees of uts.cpp's table, the same parameters and sizes.
var utsTrees = map[string]utsTree{
	"T1":      {false, "fixed", 10, 4, 19, 0, 0, 4130071, 3305118, 10},
	"T1L":     {false, "fixed", 13, 4, 29, 0, 0, 102181082, 81746377, 13},
	"T2":      {false, "cyclic", 16, 6, 502, 0, 0, 4117769, 2342762, 81},
	"T3":      {true, "", 0, 2000, 42, 0.124875, 8, 4112897, 3599034, 1572},
	"T3L":     {true, "", 0, 2000, 7, 0.200014, 5, 111345631, 89076904, 17844},
	"mini-T1": {false, "fixed", 5, 4, 19, 0, 0, 3987, 3232, 5},
	"mini-T3": {true, "", 0, 50, 52, 0.124875, 8, 1811, 1590, 48},
}

const utsMaxChildren = 100 // MAXNUMCHILDREN

type utsNode struct {
	state  [sha1.Size]byte
	height int
}

type utsCount struct{ nodes, leaves, depth uint64 }

// rng_init: SHA-1 of 16 zero bytes and the seed, big-endian.
func utsRoot(seed int32) [sha1.Size]byte {
	var in [20]byte
	binary.BigEndian.PutUint32(in[16:], uint32(seed))
	return sha1.Sum(in[:])
}

// rng_spawn: SHA-1 of the parent's state and the child's index, big-endian.
func utsChild(parent *[sha1.Size]byte, index int) [sha1.Size]byte {
	var in [sha1.Size + 4]byte
	copy(in[:], parent[:])
	binary.BigEndian.PutUint32(in[sha1.Size:], uint32(index))
	return sha1.Sum(in[:])
}

// rng_rand, then rng_toProb: the last 4 bytes, 31 bits, as a probability in [0, 1).
func utsProbability(state *[sha1.Size]byte) float64 {
	return float64(binary.BigEndian.Uint32(state[16:])&0x7fffffff) / 2147483648.0
}

func (t *utsTree) children(n *utsNode) int {
	if t.binomial {
		if n.height == 0 {
			return int(math.Floor(t.b0))
		}
		if utsProbability(&n.state) < t.q {
			return t.m
		}
		return 0
	}
	b := t.b0
	if d := float64(n.height); n.height > 0 {
		switch t.shape {
		case "expdec":
			b = t.b0 * math.Pow(d, -math.Log(t.b0)/math.Log(float64(t.genMx)))
		case "cyclic":
			if n.height > 5*t.genMx {
				b = 0
			} else {
				b = math.Pow(t.b0, math.Sin(2.0*3.141592653589793*d/float64(t.genMx)))
			}
		case "fixed":
			if n.height >= t.genMx {
				b = 0
			}
		default: // linear
			b = t.b0 * (1.0 - d/float64(t.genMx))
		}
	}
	p := 1.0 / (1.0 + b)
	u := utsProbability(&n.state)
	k := int(math.Floor(math.Log(1-u) / math.Log(1-p)))
	if k > utsMaxChildren {
		k = utsMaxChildren
	}
	return k
}

func (t *utsTree) visit(n utsNode) utsCount {
	k := t.children(&n)
	if k <= 0 {
		return utsCount{1, 1, uint64(n.height)}
	}
	below := make([]utsCount, k)
	var wg sync.WaitGroup
	for i := 0; i < k; i++ {
		child := utsNode{utsChild(&n.state, i), n.height + 1}
		slot := &below[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			*slot = t.visit(child)
		}()
	}
	wg.Wait()
	total := utsCount{1, 0, 0}
	for _, c := range below {
		total.nodes += c.nodes
		total.leaves += c.leaves
		if c.depth > total.depth {
			total.depth = c.depth
		}
	}
	return total
}

type utsWorkload struct {
	name   string
	tree   utsTree
	result utsCount
}

func (w *utsWorkload) run() { w.result = w.tree.visit(utsNode{utsRoot(w.tree.seed), 0}) }

func (w *utsWorkload) check() error {
	got, t := w.result, w.tree
	if got.nodes != t.nodes || got.leaves != t.leaves || got.depth != t.depth {
		return fmt.Errorf("uts %s had %d nodes, %d leaves, depth %d, expected %d nodes, %d leaves, depth %d",
			w.name, got.nodes, got.leaves, got.depth, t.nodes, t.leaves, t.depth)
	}
	return nil
}

// goroutinesPerRun: every node but the root.
func (w *utsWorkload) goroutinesPerRun() uint64 { return w.tree.nodes - 1 }

func newUts(flags *flag.FlagSet) func() (workload, error) {
	name := flags.String("tree", "T1", "a named tree")
	return func() (workload, error) {
		t, found := utsTrees[*name]
		if !found {
			names := make([]string, 0, len(utsTrees))
			for n := range utsTrees {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("--tree %s is not a known tree: choose one of %v", *name, names)
		}
		return &utsWorkload{name: *name, tree: t}, nil
	}
}

// nqueens.go: the nqueens workload, mirroring workloads/nqueens/nqueens.cpp.
//
// A node holds the columns of the queens placed on the rows above; it starts one goroutine per
// column of the next row that no queen attacks, waits for them with a sync.WaitGroup, and sums
// the solutions (and the nodes) they return through one slot each, as the C++ wait group does.
// The goroutines counted are the nodes carried back through the joins, less the root.

package main

import (
	"flag"
	"fmt"
	"sync"
)

const nqueensMaxN = 20 // kNqueensMaxN in nqueens.hpp

// OEIS A000170, the solutions for N = 1..20 (index 0 unused), as in nqueens.cpp.
var nqueensSolutions = [nqueensMaxN + 1]uint64{0, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680,
	14200, 73712, 365596, 2279184, 14772512, 95815104, 666090624, 4968057848, 39029188884}

type nqueensCount struct{ solutions, nodes uint64 }

func nqueensLegal(board *[nqueensMaxN]int8, row, col int) bool {
	for r := 0; r < row; r++ {
		other, distance := int(board[r]), row-r
		if col == other || col == other-distance || col == other+distance {
			return false
		}
	}
	return true
}

func nqueensSearch(n, row int, board [nqueensMaxN]int8) nqueensCount {
	if row == n {
		return nqueensCount{1, 1}
	}
	var children [nqueensMaxN]nqueensCount
	var wg sync.WaitGroup
	spawned := 0
	for col := 0; col < n; col++ {
		if !nqueensLegal(&board, row, col) {
			continue
		}
		child := board
		child[row] = int8(col)
		slot := &children[spawned]
		spawned++
		wg.Add(1)
		go func() {
			defer wg.Done()
			*slot = nqueensSearch(n, row+1, child)
		}()
	}
	wg.Wait()
	total := nqueensCount{0, 1}
	for _, c := range children[:spawned] {
		total.solutions += c.solutions
		total.nodes += c.nodes
	}
	return total
}

type nqueensWorkload struct {
	n      int
	result nqueensCount
}

func (w *nqueensWorkload) run() { w.result = nqueensSearch(w.n, 0, [nqueensMaxN]int8{}) }

func (w *nqueensWorkload) check() error {
	if want := nqueensSolutions[w.n]; w.result.solutions != want {
		return fmt.Errorf("%d-queens found %d solutions, expected %d", w.n, w.result.solutions, want)
	}
	return nil
}

// goroutinesPerRun is the nodes the last run carried through its joins, less the root; schedlab
// compares it with nqueens_tasks()'s table where that has the board.
func (w *nqueensWorkload) goroutinesPerRun() uint64 { return w.result.nodes - 1 }

func newNqueens(flags *flag.FlagSet) func() (workload, error) {
	n := flags.Int("n", 12, "the board is n x n")
	return func() (workload, error) {
		if *n < 1 || *n > nqueensMaxN {
			return nil, fmt.Errorf("--n %d is out of range: use 1 <= n <= %d", *n, nqueensMaxN)
		}
		return &nqueensWorkload{n: *n}, nil
	}
}

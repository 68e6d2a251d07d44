// spin.go: the CPU work of loops and iomix, as schedlab::count_up (workloads/spin.hpp).

package main

// countUp runs n iterations of an increment loop and returns the count. The Go compiler does
// not replace such a loop by its closed form (g++ does, which is why the C++ version needs an
// asm barrier): it only merges x with the loop counter, leaving one increment, one compare and
// one branch per iteration (the C++ loop keeps a separate counter: one add more, on another
// dependency chain). The callers publish the result, so the loop is not dead either.
func countUp(n uint64) uint64 {
	var x uint64
	for i := uint64(0); i < n; i++ {
		x++
	}
	return x
}

// footprint.hpp: which memory each task touches, on which worker, in which order: the input of
// the per-core cache model (`--counters model`, harness/counters/cache_model.hpp).
//
// Valgrind's simulator runs one thread at a time on one cache hierarchy shared by all threads,
// so it cannot see a task paying for data that another core wrote. Workloads whose tasks touch
// known ranges (locality, matmul) say so here; the harness replays the record through one LRU
// cache per worker. The record is a model's input, not a measurement: it holds the ranges a
// workload declares, not every access its code makes (stacks, queues and task objects are not
// in it).
//
// Cost: when no log is active (every run without `--counters model`), touch() is one atomic
// load and a branch. When one is active it takes one fetch_add on a shared counter (the global
// order) and appends to the calling thread's own buffer; no lock after a thread's first record
// of a run. Buffers keep their memory from run to run, so after the first (warm-up) run an
// append does not allocate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace schedlab {

// The size of the lines a walk visits (walk_line): 64 bytes, the cache line of every x86-64 core
// and of most ARM ones.
inline constexpr std::uint64_t kWalkLineBytes = 64;

// A seeded pseudo-random order of a region's lines: the k-th line (0 <= k < lines, lines a power
// of two) that a walk with `seed` visits. A bijection on [0, lines) for every seed, so a walk of
// k = 0 .. lines-1 visits each line once: three rounds of a multiply by an odd constant (a
// bijection modulo a power of two) and a right xorshift (a bijection on b-bit values), which
// leave no stride or order a hardware prefetcher could follow. The workload's chase and the
// cache model's replay of it both call this, so the model replays the order the walk ran.
inline std::uint64_t walk_line(std::uint64_t seed, std::uint64_t lines, std::uint64_t k) {
  const std::uint64_t mask = lines - 1;
  int shift = 0;
  for (std::uint64_t m = mask; m != 0; m >>= 1) ++shift;  // the bits of a line number
  shift = shift / 2 + 1;
  std::uint64_t x = (k ^ seed) & mask;
  x = (x * 0x9E3779B97F4A7C15ull + (seed >> 32)) & mask;
  x ^= x >> shift;
  x = (x * 0xBF58476D1CE4E5B9ull) & mask;
  x ^= x >> shift;
  x = (x * 0x94D049BB133111EBull) & mask;
  x ^= x >> shift;
  return x;
}

// `rows` rows of `row_bytes` bytes, `stride` bytes apart, swept `passes` times in a row; or, when
// `walked`, one region of `row_bytes` (a power of two times kWalkLineBytes) whose lines each pass
// visits in the order walk_line(walk_seed, ...) gives.
struct Footprint {
  std::uint64_t order = 0;   // position in the order the footprints began, over all workers
  std::uint32_t worker = 0;  // dense id of the thread that recorded it: 0, 1, ... per run
  std::uint32_t passes = 1;
  bool writes = false;  // the task writes the range (the model invalidates other cores' copies)
  bool walked = false;  // lines in walk_line's order, not in address order
  std::uintptr_t base = 0;
  std::uint64_t row_bytes = 0;
  std::uint64_t stride = 0;
  std::uint64_t rows = 0;
  std::uint64_t walk_seed = 0;
};

// One run's record. At most one log is active in the process at a time (as one Scheduler::run
// is). Invariant: between start() and stop(), every touch() of any thread lands in this log,
// with a distinct order; a thread's worker id is the index of its buffer, fixed for the run.
class FootprintLog {
 public:
  FootprintLog() = default;
  ~FootprintLog();
  FootprintLog(const FootprintLog&) = delete;
  FootprintLog& operator=(const FootprintLog&) = delete;

  // Clears the log and makes it the one touch() records into. Call between runs.
  void start();
  // No more records after this returns. Call after the run, once every task has finished.
  void stop();
  // Everything recorded between start() and stop(), sorted by order.
  std::vector<Footprint> records() const;
  // Threads that recorded at least one footprint.
  unsigned workers() const { return static_cast<unsigned>(used_); }

 private:
  friend void record(const Footprint&);
  std::vector<Footprint>* buffer_for_this_thread();

  std::mutex mutex_;  // guards buffers_ and used_ (a thread's first record of a run takes a buffer)
  std::vector<std::unique_ptr<std::vector<Footprint>>> buffers_;  // kept across runs, cleared
  std::size_t used_ = 0;  // buffers handed to threads in this run: [0, used_)
  std::atomic<std::uint64_t> next_order_{0};
  std::uint64_t generation_ = 0;  // which run a thread's cached buffer pointer belongs to
};

// Records that the calling task is about to sweep `bytes` from `base`, `passes` times. A no-op
// when no log is active.
void touch(const void* base, std::size_t bytes, unsigned passes, bool writes);
// The same for a strided block: `rows` rows of `row_bytes`, `stride` bytes apart (a submatrix).
void touch_rows(const void* base, std::size_t row_bytes, std::size_t stride, std::size_t rows,
                unsigned passes, bool writes);
// The same for a walk: each pass visits the `bytes / kWalkLineBytes` lines from `base` (a power of
// two of them) in walk_line(seed, ...)'s order.
void touch_walk(const void* base, std::size_t bytes, std::uint64_t seed, unsigned passes, bool writes);

}  // namespace schedlab

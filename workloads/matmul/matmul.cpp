// matmul: C = A x B by recursive decomposition into quadrants, as in the Cilk and
// runtime-benchmarks suites.
//
//   C11 += A11 B11   C12 += A11 B12   C21 += A21 B11   C22 += A21 B12    (4 tasks, joined)
//   C11 += A12 B21   C12 += A12 B22   C21 += A22 B21   C22 += A22 B22    (4 tasks, joined)
//
// The two phases write disjoint quadrants within a phase, so no locks; a block x block product
// is a serial leaf (i-k-j loops). Each task's inputs are quadrants its parent's siblings are
// also reading: a scheduler that runs the children of one node close together in time and
// on one core reuses the A and B quadrants from cache; one that scatters them does not.
//
// For the per-core cache model (footprint.hpp) a leaf records one pass over its A and B blocks
// and a written pass over its C block: exact for the model while the three blocks fit in the
// modelled cache (3 x 32 KiB at the default block of 64), an under-estimate beyond (B is really
// read once per row of A).
//
// The check is exact and cheap (Freivalds): the entries are small integers, so every sum is an
// integer far below 2^53 and double arithmetic is exact; C x must equal A (B x) for a few
// integer vectors x, in O(n^2) instead of a second O(n^3) multiply.
//
// --element int32 is tzcnt/runtime-benchmarks' matmul (dim 2048, block 32: leaves of n <= 32,
// the same quadrants in the same two phases, the same i-k-j leaf loops). Its matrices are all
// ones, which makes every entry of C equal to n; these are the same small integers as the
// double version's, which the check can tell apart from a wrong sum (an all-ones product cannot
// show a transposed quadrant), and which multiply at the same speed. Every entry of C stays
// below 6 x 16384, far inside int32; the check sums in int64.
#include "matmul.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "api.hpp"
#include "footprint.hpp"

namespace schedlab {
namespace {

template <class T>
struct View {  // a square submatrix of a row-major n x n matrix
  T* p;
  std::size_t stride;
  View quadrant(int row, int col, std::size_t half) const {
    return {p + static_cast<std::size_t>(row) * half * stride + static_cast<std::size_t>(col) * half, stride};
  }
};

// What the check sums in: exact for both element types (the file's comment).
template <class T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

template <class T>
class MatmulWorkload final : public ElidableWorkload<MatmulWorkload<T>> {
 public:
  explicit MatmulWorkload(MatmulParams p) : params_(std::move(p)), n_(static_cast<std::size_t>(params_.dim)) {}

  void prepare() override {
    a_.resize(n_ * n_);
    b_.resize(n_ * n_);
    for (std::size_t i = 0; i < n_ * n_; ++i) {
      a_[i] = static_cast<T>((i * 7 + 3) % 4);
      b_[i] = static_cast<T>((i * 5 + 1) % 3);
    }
  }

  template <class X>
  void body() {
    c_.assign(n_ * n_, T{0});
    touch(c_.data(), n_ * n_ * sizeof(T), 1, /*writes=*/true);  // the zeroing just done
    multiply_add<X>(View<T>{c_.data(), n_}, View<T>{a_.data(), n_}, View<T>{b_.data(), n_}, n_);
  }

  std::string check() override {
    using W = Wide<T>;
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<W> x(n_), bx(n_, 0), abx(n_, 0), cx(n_, 0);
      for (std::size_t i = 0; i < n_; ++i) x[i] = static_cast<W>((i * (trial + 3) + trial) % 5);
      for (std::size_t i = 0; i < n_; ++i)
        for (std::size_t j = 0; j < n_; ++j) bx[i] += static_cast<W>(b_[i * n_ + j]) * x[j];
      for (std::size_t i = 0; i < n_; ++i)
        for (std::size_t j = 0; j < n_; ++j) {
          abx[i] += static_cast<W>(a_[i * n_ + j]) * bx[j];
          cx[i] += static_cast<W>(c_[i * n_ + j]) * x[j];
        }
      for (std::size_t i = 0; i < n_; ++i) {
        if (cx[i] != abx[i]) {
          return "matmul: row " + std::to_string(i) + " of C is wrong (C x = " + std::to_string(cx[i]) +
                 ", A B x = " + std::to_string(abx[i]) + ")";
        }
      }
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override {
    // Every internal node spawns 8 tasks (two phases of 4); levels until a leaf.
    std::uint64_t tasks = 0, nodes = 1;
    for (std::size_t size = n_; size > params_.block; size /= 2) {
      tasks += nodes * 8;
      nodes *= 8;
    }
    return tasks;
  }

  void cleanup() override {
    std::vector<T>().swap(a_);
    std::vector<T>().swap(b_);
    std::vector<T>().swap(c_);
  }

 private:
  template <class X>
  void multiply_add(View<T> c, View<T> a, View<T> b, std::size_t size) {
    if (size <= params_.block) {
      const std::size_t row = size * sizeof(T);
      touch_rows(a.p, row, a.stride * sizeof(T), size, 1, /*writes=*/false);
      touch_rows(b.p, row, b.stride * sizeof(T), size, 1, /*writes=*/false);
      touch_rows(c.p, row, c.stride * sizeof(T), size, 1, /*writes=*/true);
      for (std::size_t i = 0; i < size; ++i)
        for (std::size_t k = 0; k < size; ++k) {
          const T aik = a.p[i * a.stride + k];
          for (std::size_t j = 0; j < size; ++j) c.p[i * c.stride + j] += aik * b.p[k * b.stride + j];
        }
      return;
    }
    const std::size_t h = size / 2;
    for (int phase = 0; phase < 2; ++phase) {
      typename X::WaitGroup wg;
      for (int row = 0; row < 2; ++row)
        for (int col = 0; col < 2; ++col)
          wg.go([=, this] {
            multiply_add<X>(c.quadrant(row, col, h), a.quadrant(row, phase, h), b.quadrant(phase, col, h), h);
          });
      wg.wait();
    }
  }

  const MatmulParams params_;
  const std::size_t n_;
  std::vector<T> a_, b_, c_;
};

bool power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::unique_ptr<Workload> make_matmul(MatmulParams p) {
  if (!power_of_two(p.dim) || !power_of_two(p.block) || p.block > p.dim) {
    throw std::invalid_argument("matmul --dim " + std::to_string(p.dim) + " --block " + std::to_string(p.block) +
                                ": both must be powers of two with block <= n; e.g. --dim 512 --block 64");
  }
  if (p.element == "double") return std::make_unique<MatmulWorkload<double>>(std::move(p));
  if (p.element == "int32") return std::make_unique<MatmulWorkload<std::int32_t>>(std::move(p));
  throw std::invalid_argument("matmul --element " + p.element + " is not an element type: use double or int32");
}

}  // namespace schedlab

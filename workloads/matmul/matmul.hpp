// matmul: recursive blocked matrix multiply, the Cilk suites' locality kernel (see matmul.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct MatmulParams {
  std::uint64_t dim = 512;   // matrices are dim x dim doubles, a power of two
  std::uint64_t block = 64;  // a product of block x block submatrices is a serial leaf
};

std::unique_ptr<Workload> make_matmul(MatmulParams params);

}  // namespace schedlab

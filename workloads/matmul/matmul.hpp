// matmul: recursive blocked matrix multiply, the Cilk suites' locality kernel (see matmul.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../workload.hpp"

namespace schedlab {

struct MatmulParams {
  std::uint64_t dim = 512;   // matrices are dim x dim elements, a power of two
  std::uint64_t block = 64;  // a product of block x block submatrices is a serial leaf
  // The element type: "double" (the Cilk suites') or "int32" (tzcnt/runtime-benchmarks', which
  // runs dim 2048, block 32).
  std::string element = "double";
};

std::unique_ptr<Workload> make_matmul(MatmulParams params);

}  // namespace schedlab

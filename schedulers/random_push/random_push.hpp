// random-push: the worked example of docs/extending.md (see random_push.cpp).
#pragma once

#include <memory>

#include "../runtime/runtime.hpp"

namespace schedlab {

std::unique_ptr<Scheduler> make_random_push(const RuntimeConfig& runtime);

}  // namespace schedlab

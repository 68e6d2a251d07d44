// serial: the sequential elision (see serial.cpp).
#pragma once

#include <memory>

#include "../scheduler.hpp"

namespace schedlab {

std::unique_ptr<Scheduler> make_serial();

}  // namespace schedlab

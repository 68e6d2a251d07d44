// serial: the sequential elision (see serial.cpp).
#pragma once

#include <memory>

#include "../cpu_pin.hpp"
#include "../scheduler.hpp"

namespace schedlab {

// pin: run on the first CPU this process may use (--pin on, cpu_pin.hpp).
std::unique_ptr<Scheduler> make_serial(bool pin = kPinByDefault);

}  // namespace schedlab

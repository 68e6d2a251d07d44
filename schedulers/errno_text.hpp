// errno_text.hpp: one way to print an errno in a message.
#pragma once

#include <string.h>

#include <string>

namespace schedlab {

// "No space left on device (ENOSPC)": strerror's words and the errno's name, which is what a
// user searches for.
inline std::string errno_text(int err) {
  const char* name = ::strerrorname_np(err);
  return std::string(::strerror(err)) + (name != nullptr ? " (" + std::string(name) + ")" : "");
}

}  // namespace schedlab

// columns.hpp: facts about the eight counter columns that more than one part of the counters
// needs: the outcome of trying one of a column's candidate events, and what every count covers.
// The column table itself is hw_events() (columns.cpp): where a new back end adds its spellings.
#pragma once

#include <string>

namespace schedlab::counters {

// What the counts cover, for the sidecar and `schedlab counters`.
inline constexpr const char* kScope =
    "worker threads alive at run start; threads created during a run (steal-half hand-off) are "
    "not counted";

// One candidate event of a column, tried on this machine by a back end.
struct Tried {
  std::string name;
  bool ok = false;
  std::string reason;
};

}  // namespace schedlab::counters

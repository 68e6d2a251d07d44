cmake_minimum_required(VERSION 3.25)
# The floors run one way: schedulers/ below workloads/ below harness/. No file under schedulers/
# or workloads/ may include a harness header, by name or by a path into harness/ (the build
# already keeps harness/ off their include path, harness/CMakeLists.txt: this catches the
# "../harness/x.hpp" that would slip past it, and a harness header copied below).
# Usage: cmake -DROOT=<source dir> -P no_upward_includes.cmake
file(GLOB HARNESS_HEADERS RELATIVE ${ROOT}/harness ${ROOT}/harness/*.hpp ${ROOT}/harness/*/*.hpp)
set(names)
foreach(h ${HARNESS_HEADERS})
  get_filename_component(base ${h} NAME)
  # A name that also exists below (schedulers/X.hpp, workloads/X.hpp) is that file, not the harness's.
  file(GLOB_RECURSE below ${ROOT}/schedulers/${base} ${ROOT}/workloads/${base})
  if(NOT below)
    list(APPEND names ${base} ${h})
  endif()
endforeach()
file(GLOB_RECURSE SOURCES ${ROOT}/schedulers/*.hpp ${ROOT}/schedulers/*.cpp ${ROOT}/workloads/*.hpp ${ROOT}/workloads/*.cpp)
set(bad "")
foreach(src ${SOURCES})
  file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" path "${line}")
    if(path MATCHES "(^|/)harness/" OR (path IN_LIST names AND NOT EXISTS ${ROOT}/schedulers/${path}
                                        AND NOT EXISTS ${ROOT}/workloads/${path}))
      file(RELATIVE_PATH rel ${ROOT} ${src})
      string(APPEND bad "  ${rel}: #include \"${path}\"\n")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "files below the harness include harness headers (move what they need down, "
                      "as scheduler_entry.hpp and workload_entry.hpp did):\n${bad}")
endif()
list(LENGTH SOURCES n)
message(STATUS "none of the ${n} files under schedulers/ and workloads/ includes a harness header")

// harness/paired.hpp's Hodges-Lehmann on data from stdin, for
// tests/scripts/test_paired_agreement.py, which gives the same data to
// scripts/schedlab_results/paired.py: the run summary and the report's claims must state the
// same estimate and interval for the same blocks.
//
// Each input line is one data set, numbers separated by blanks ("nan" allowed, as the harness
// drops NaNs); each output line is "centre low high" at full precision (%.17g, so that the
// comparison sees every bit), "-inf"/"inf" for an unbounded interval.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "paired.hpp"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<double> data;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      // strtod, not operator>>: it reads "nan" and "inf", which istream does not.
      char* end = nullptr;
      const double value = std::strtod(word.c_str(), &end);
      if (end == word.c_str() || *end != '\0') {
        std::fprintf(stderr, "hodges_lehmann_tool: not a number: '%s'\n", word.c_str());
        return 2;
      }
      data.push_back(value);
    }
    const schedlab::Estimate e = schedlab::hodges_lehmann(std::move(data));
    std::printf("%.17g %.17g %.17g\n", e.centre, e.low, e.high);
  }
  return 0;
}

// params.hpp: named, typed, range-checked parameters for schedulers and workloads.
//
// A parameter is declared once (name, kind, default, range, help) and used everywhere from that
// declaration: `schedlab list` prints it, the CLI accepts --NAME, presets set it, the CSV gets a
// column for it, and a bad value is refused with a message naming the parameter, the value and
// the accepted range.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace schedlab {

enum class ParamKind {
  integer,  // decimal, or with an exponent: 1000000, 1e6
  size,     // bytes, with an optional binary suffix: 65536, 64K, 2M, 1G
  choice,   // one of a fixed list of words
  path,     // a file system path, taken as given (empty: the owner's default)
};

struct ParamSpec {
  std::string name;  // as on the command line, without the dashes ("stack-size")
  ParamKind kind = ParamKind::integer;
  std::string default_value;
  std::string help;
  std::int64_t min = 0;  // integer and size
  std::int64_t max = 0;
  std::vector<std::string> choices;  // choice
  // The CSV column when the name would collide with a result column (loops' --tasks vs the
  // `tasks` a run executed); empty: derived from the name.
  std::string csv_column;
  // A number that also takes "auto": its owner chooses the value from the machine and the other
  // parameters (WorkloadEntry::settle), before any case is named or written.
  bool allows_auto = false;
  // Sets up the machine or labels a run rather than changing the design under test (pinning,
  // the A/A control's replica label). The sidecar lists these parameters (`parameters.setup`),
  // and the claims select a variant's rows whatever such a parameter's value where all of that
  // scheduler's rows of a configuration share one (a preset that pins everything is still judged).
  bool machine_setup = false;

  // The CSV column: csv_column, else the name with '-' replaced by '_'.
  std::string column() const;
  // Parses and range-checks `text`; returns the canonical spelling (plain decimal for numbers,
  // "auto" where allowed).
  // Throws ParamError naming the parameter, the value, its owner ("workload nqueens") when
  // given, and what is accepted.
  std::string canonical(const std::string& text, const std::string& owner = {}) const;
  // A one-line description of the accepted values, e.g. "1..50" or "lifo|fifo".
  std::string accepted() const;
};

// A bad parameter value; what() is one line naming the problem and the fix.
class ParamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Canonical values by parameter name.
using ParamValues = std::map<std::string, std::string>;

std::int64_t param_int(const ParamValues& v, const std::string& name);
const std::string& param_str(const ParamValues& v, const std::string& name);

// Fills in defaults and canonicalises every value; refuses names not in `specs`.
ParamValues resolve_params(const std::vector<ParamSpec>& specs, const ParamValues& given,
                           const std::string& owner);

// "n=27 cutoff=0": the canonical values in declaration order, for logs and grouping.
std::string describe(const std::vector<ParamSpec>& specs, const ParamValues& v);

}  // namespace schedlab

#include "params.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace schedlab {
namespace {

// "--n 21: out of range for workload nqueens; use 1..20": the owner named, because one name
// may mean different things to different owners (fib's n and nqueens' n).
[[noreturn]] void bad(const ParamSpec& s, const std::string& text, const std::string& why, const std::string& owner) {
  throw ParamError("--" + s.name + " " + text + ": " + why + (owner.empty() ? "" : " for " + owner) + "; use " +
                   s.accepted());
}

std::int64_t parse_number(const ParamSpec& s, const std::string& text, const std::string& owner) {
  if (text.empty()) bad(s, "''", "empty value", owner);
  std::string body = text;
  std::int64_t scale = 1;
  if (s.kind == ParamKind::size) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(body.back())));
    const int shift = last == 'K' ? 10 : last == 'M' ? 20 : last == 'G' ? 30 : 0;
    if (shift != 0) {
      body.pop_back();
      scale = std::int64_t{1} << shift;
    }
  }
  errno = 0;
  char* end = nullptr;
  const long double v = std::strtold(body.c_str(), &end);
  if (body.empty() || end != body.c_str() + body.size() || errno == ERANGE) {
    bad(s, text, "not a number", owner);
  }
  const long double scaled = v * static_cast<long double>(scale);
  if (scaled != std::floor(scaled)) bad(s, text, "not a whole number", owner);
  if (scaled < static_cast<long double>(s.min) || scaled > static_cast<long double>(s.max)) {
    bad(s, text, "out of range", owner);
  }
  return static_cast<std::int64_t>(scaled);
}

}  // namespace

std::string ParamSpec::column() const {
  if (!csv_column.empty()) return csv_column;
  std::string c = name;
  std::replace(c.begin(), c.end(), '-', '_');
  return c;
}

std::string ParamSpec::accepted() const {
  if (kind == ParamKind::choice) {
    std::string out;
    for (const auto& c : choices) out += (out.empty() ? "" : "|") + c;
    return out;
  }
  if (kind == ParamKind::path) return "a directory path";
  std::string out = std::to_string(min) + ".." + std::to_string(max);
  if (kind == ParamKind::size) out += " bytes (suffixes K, M, G)";
  if (allows_auto) out += ", or auto";
  return out;
}

std::string ParamSpec::canonical(const std::string& text, const std::string& owner) const {
  if (kind == ParamKind::choice) {
    if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
      bad(*this, text, "unknown value", owner);
    }
    return text;
  }
  if (kind == ParamKind::path) return text;
  if (allows_auto && text == "auto") return text;
  return std::to_string(parse_number(*this, text, owner));
}

std::int64_t param_int(const ParamValues& v, const std::string& name) {
  return std::stoll(param_str(v, name));
}

const std::string& param_str(const ParamValues& v, const std::string& name) {
  auto it = v.find(name);
  if (it == v.end()) throw std::logic_error("parameter " + name + " was not resolved");
  return it->second;
}

ParamValues resolve_params(const std::vector<ParamSpec>& specs, const ParamValues& given,
                           const std::string& owner) {
  for (const auto& [name, value] : given) {
    const bool known = std::any_of(specs.begin(), specs.end(),
                                   [&](const ParamSpec& s) { return s.name == name; });
    if (!known) {
      throw ParamError("--" + name + " does not apply to " + owner +
                       "; see `schedlab list` for its parameters");
    }
  }
  ParamValues out;
  for (const ParamSpec& s : specs) {
    auto it = given.find(s.name);
    out[s.name] = s.canonical(it != given.end() ? it->second : s.default_value, owner);
  }
  return out;
}

std::string describe(const std::vector<ParamSpec>& specs, const ParamValues& v) {
  std::string out;
  for (const ParamSpec& s : specs) {
    auto it = v.find(s.name);
    if (it == v.end()) continue;
    out += (out.empty() ? "" : " ") + s.name + "=" + it->second;
  }
  return out;
}

}  // namespace schedlab

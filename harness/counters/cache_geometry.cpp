// cache_geometry.cpp: parsing, checking and the sysfs defaults (see cache_geometry.hpp).
#include "counters/cache_geometry.hpp"

#include <bit>
#include <optional>
#include <sstream>

#include "metadata.hpp"
#include "params.hpp"

namespace schedlab {
namespace {

// Valgrind refuses lines below this: one instruction could straddle three lines (cg-arch.c).
constexpr std::uint64_t kMinLine = 16;

const char* kFormat = "SIZE,ASSOC,LINE with SIZE / (ASSOC x LINE) a power of two, e.g. 1M,8,64";

std::optional<CacheGeometry> from_sysfs(int level, bool instruction) {
  const std::optional<CacheInfo> info = cache_info(level, instruction);
  if (!info || info->size == 0 || info->ways == 0 || info->line == 0) return std::nullopt;
  return CacheGeometry{info->size, info->ways, info->line};
}

// A cache from an option when given, else from sysfs; `what` names it in errors.
CacheGeometry choose(const std::string& option_value, const std::string& option,
                     std::optional<CacheGeometry> sysfs, const std::string& what, std::string& from) {
  if (!option_value.empty()) {
    from = option;
    return parse_geometry(option_value, option);
  }
  if (!sysfs) {
    throw ParamError("this machine's sysfs does not describe its " + what +
                     " (size, ways and line size); give " + option + " " + kFormat);
  }
  if (const std::string problem = geometry_problem(*sysfs); !problem.empty()) {
    throw ParamError("this machine's " + what + " (" + sysfs->text() + ") cannot be simulated: " + problem +
                     "; give " + option + " " + kFormat);
  }
  from = "sysfs (cpu0)";
  return *sysfs;
}

}  // namespace

std::string CacheGeometry::text() const {
  return std::to_string(size) + "," + std::to_string(assoc) + "," + std::to_string(line);
}

nlohmann::json CacheGeometry::json() const { return {{"size", size}, {"assoc", assoc}, {"line", line}}; }

std::string geometry_problem(const CacheGeometry& g) {
  if (g.line < kMinLine || !std::has_single_bit(g.line)) {
    return "the line size must be a power of two of at least " + std::to_string(kMinLine) + " bytes";
  }
  if (g.assoc == 0 || g.size <= g.line) return "the cache must hold more than one line in at least one way";
  if (g.size % (g.assoc * g.line) != 0 || !std::has_single_bit(g.sets())) {
    return "the number of sets, SIZE / (ASSOC x LINE), must be a whole power of two";
  }
  return {};
}

CacheGeometry parse_geometry(const std::string& text, const std::string& option) {
  std::vector<std::string> fields;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  auto refuse = [&](const std::string& why) -> CacheGeometry {
    throw ParamError(option + " " + text + ": " + why + "; use " + kFormat);
  };
  if (fields.size() != 3) return refuse("expected three fields");
  CacheGeometry g;
  try {
    const ParamSpec size{option.substr(2), ParamKind::size, "", "", 1, std::int64_t{1} << 40, {}};
    const ParamSpec count{option.substr(2), ParamKind::integer, "", "", 1, 1 << 20, {}};
    g.size = std::stoull(size.canonical(fields[0]));
    g.assoc = std::stoull(count.canonical(fields[1]));
    g.line = std::stoull(count.canonical(fields[2]));
  } catch (const ParamError&) {
    return refuse("not three positive whole numbers");
  }
  if (const std::string problem = geometry_problem(g); !problem.empty()) return refuse(problem);
  return g;
}

nlohmann::json SimGeometry::json() const {
  return {{"I1", i1.json()}, {"D1", d1.json()}, {"LL", ll.json()},
          {"from", {{"I1", i1_from}, {"D1", d1_from}, {"LL", ll_from}}}};
}

SimGeometry resolve_sim_geometry(const std::string& l1, const std::string& ll) {
  SimGeometry g;
  g.d1 = choose(l1, "--sim-l1", from_sysfs(1, false), "L1 data cache", g.d1_from);
  g.ll = choose(ll, "--sim-ll", from_sysfs(2, false), "per-core L2 cache", g.ll_from);
  // Valgrind needs an I1 too; nothing reads its counts. The machine's own, else D1's shape.
  const std::optional<CacheGeometry> i1 = from_sysfs(1, true);
  if (i1 && geometry_problem(*i1).empty()) {
    g.i1 = *i1;
    g.i1_from = "sysfs (cpu0)";
  } else {
    g.i1 = g.d1;
    g.i1_from = "as D1 (sysfs describes no usable L1 instruction cache)";
  }
  return g;
}

}  // namespace schedlab

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

// What the simulator and the model use when the machine describes no plausible cache at a level
// (no sysfs description and an implausible CPUID, as on a Firecracker guest): a common geometry
// of the x86 cores of the last decade, said so in the sidecar (`simulator.from`) and on stderr.
// The claims these caches serve compare orders (LIFO against FIFO), which the simulator shows
// on any cache of a core's size; --sim-l1 and --sim-ll give the machine's own.
const CacheGeometry kAssumedD1{32 * 1024, 8, 64};
const CacheGeometry kAssumedL2{1024 * 1024, 16, 64};

// A cache from an option when given, else the machine's (cache_info: sysfs, else CPUID), else
// the assumption; `what` names it, `from` says where it came from.
CacheGeometry choose(const std::string& option_value, const std::string& option, int level, const std::string& what,
                     const CacheGeometry& assumed, std::string& from) {
  if (!option_value.empty()) {
    from = option;
    return parse_geometry(option_value, option);
  }
  std::string why;
  if (const std::optional<CacheInfo> info = cache_info(level, false, &why)) {
    const CacheGeometry g{info->size, info->ways, info->line};
    if (const std::string problem = geometry_problem(g); !problem.empty()) {
      why = info->from + " gives " + g.text() + ", which Valgrind cannot simulate: " + problem;
    } else {
      from = info->from;
      return g;
    }
  }
  from = "assumed " + assumed.text() + ": this machine describes no usable " + what + " (" + why + "); give " +
         option + " " + kFormat + " for its own";
  return assumed;
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
  g.d1 = choose(l1, "--sim-l1", 1, "L1 data cache", kAssumedD1, g.d1_from);
  g.ll = choose(ll, "--sim-ll", 2, "per-core L2 cache", kAssumedL2, g.ll_from);
  // Valgrind needs an I1 too; nothing reads its counts. The machine's own, else D1's shape.
  const std::optional<CacheInfo> i1 = cache_info(1, true);
  if (i1 && geometry_problem(CacheGeometry{i1->size, i1->ways, i1->line}).empty()) {
    g.i1 = CacheGeometry{i1->size, i1->ways, i1->line};
    g.i1_from = i1->from;
  } else {
    g.i1 = g.d1;
    g.i1_from = "as D1 (the machine describes no usable L1 instruction cache)";
  }
  return g;
}

bool SimGeometry::assumed() const { return d1_from.rfind("assumed", 0) == 0 || ll_from.rfind("assumed", 0) == 0; }

}  // namespace schedlab

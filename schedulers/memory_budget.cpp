// memory_budget.cpp: the process-wide budget and its charge (memory_budget.hpp).
#include "memory_budget.hpp"

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>

namespace schedlab {
namespace {

std::atomic<std::uint64_t> g_charged{0};

// MemAvailable in bytes, 0 when /proc/meminfo does not give it.
std::uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    return fields >> kib ? kib * 1024 : 0;
  }
  return 0;
}

struct Budget {
  std::mutex mutex;
  std::atomic<bool> set{false};  // by set_memory_budget, or the default once computed
  MemoryBudget value;
  std::atomic<std::uint64_t> bytes{0};  // value.bytes, for the lock-free charge
};

Budget& budget() {
  static Budget b;
  return b;
}

MemoryBudget& resolved(Budget& b) {  // b.mutex held
  if (!b.set.load(std::memory_order_relaxed)) {
    const std::uint64_t available = mem_available();
    b.value.bytes = static_cast<std::uint64_t>(static_cast<double>(available) * kDefaultMemoryShare);
    b.value.source = available == 0 ? "none: /proc/meminfo gives no MemAvailable"
                                     : std::to_string(static_cast<int>(kDefaultMemoryShare * 100)) +
                                           "% of MemAvailable (" + std::to_string(available >> 20) + " MiB)";
    b.bytes.store(b.value.bytes, std::memory_order_release);
    b.set.store(true, std::memory_order_release);
  }
  return b.value;
}

}  // namespace

void set_memory_budget(std::uint64_t bytes) {
  Budget& b = budget();
  std::lock_guard lock(b.mutex);
  b.value = MemoryBudget{bytes, "--memory-budget"};
  b.bytes.store(bytes, std::memory_order_release);
  b.set.store(true, std::memory_order_release);
}

MemoryBudget memory_budget() {
  Budget& b = budget();
  std::lock_guard lock(b.mutex);
  return resolved(b);
}

bool memory_try_charge(std::uint64_t bytes, std::uint64_t transient) noexcept {
  Budget& b = budget();
  if (!b.set.load(std::memory_order_acquire)) {
    try {
      (void)memory_budget();
    } catch (...) {
      // No default could be computed (out of memory already): charge without a budget.
    }
  }
  const std::uint64_t limit = b.bytes.load(std::memory_order_acquire);
  std::uint64_t now = g_charged.load(std::memory_order_relaxed);
  do {
    if (limit != 0 && now + bytes + transient > limit) return false;
  } while (!g_charged.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  return true;
}

void memory_release(std::uint64_t bytes) noexcept { g_charged.fetch_sub(bytes, std::memory_order_relaxed); }

std::uint64_t memory_charged() noexcept { return g_charged.load(std::memory_order_relaxed); }

}  // namespace schedlab

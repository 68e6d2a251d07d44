// footprint.cpp: the active log, and each thread's buffer in it (see footprint.hpp).
#include "footprint.hpp"

#include <algorithm>

namespace schedlab {
namespace {

std::atomic<FootprintLog*> g_active{nullptr};
// Bumped by every start(): a thread's cached buffer from an earlier run (or log) is stale.
std::atomic<std::uint64_t> g_generation{0};

struct ThreadBuffer {
  std::uint64_t generation = 0;  // 0: none yet
  std::vector<Footprint>* records = nullptr;
  std::uint32_t worker = 0;
};
thread_local ThreadBuffer t_buffer;

}  // namespace

FootprintLog::~FootprintLog() {
  FootprintLog* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

void FootprintLog::start() {
  std::lock_guard lock(mutex_);
  for (auto& b : buffers_) b->clear();  // keeps their capacity for this run
  used_ = 0;
  next_order_.store(0, std::memory_order_relaxed);
  generation_ = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
  g_active.store(this, std::memory_order_release);
}

void FootprintLog::stop() {
  FootprintLog* self = this;
  g_active.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

std::vector<Footprint> FootprintLog::records() const {
  std::vector<Footprint> all;
  for (std::size_t i = 0; i < used_; ++i) all.insert(all.end(), buffers_[i]->begin(), buffers_[i]->end());
  std::sort(all.begin(), all.end(), [](const Footprint& a, const Footprint& b) { return a.order < b.order; });
  return all;
}

std::vector<Footprint>* FootprintLog::buffer_for_this_thread() {
  if (t_buffer.generation != generation_) {
    std::lock_guard lock(mutex_);
    if (used_ == buffers_.size()) buffers_.push_back(std::make_unique<std::vector<Footprint>>());
    t_buffer = {generation_, buffers_[used_].get(), static_cast<std::uint32_t>(used_)};
    ++used_;
  }
  return t_buffer.records;
}

// Appends `f` to the calling thread's buffer of the active log, giving it its order and worker;
// a no-op when no log is active.
void record(const Footprint& f) {
  FootprintLog* log = g_active.load(std::memory_order_acquire);
  if (log == nullptr) return;
  std::vector<Footprint>* records = log->buffer_for_this_thread();
  Footprint& r = records->emplace_back(f);
  r.order = log->next_order_.fetch_add(1, std::memory_order_relaxed);
  r.worker = t_buffer.worker;
}

void touch_rows(const void* base, std::size_t row_bytes, std::size_t stride, std::size_t rows,
                unsigned passes, bool writes) {
  Footprint f;
  f.passes = passes;
  f.writes = writes;
  f.base = reinterpret_cast<std::uintptr_t>(base);
  f.row_bytes = row_bytes;
  f.stride = stride;
  f.rows = rows;
  record(f);
}

void touch(const void* base, std::size_t bytes, unsigned passes, bool writes) {
  touch_rows(base, bytes, bytes, 1, passes, writes);
}

void touch_walk(const void* base, std::size_t bytes, std::uint64_t seed, unsigned passes, bool writes) {
  Footprint f;
  f.passes = passes;
  f.writes = writes;
  f.walked = true;
  f.base = reinterpret_cast<std::uintptr_t>(base);
  f.row_bytes = bytes;
  f.stride = bytes;
  f.rows = 1;
  f.walk_seed = seed;
  record(f);
}

}  // namespace schedlab

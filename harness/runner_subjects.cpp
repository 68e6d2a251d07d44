// runner_subjects.cpp: see runner_subjects.hpp; building a case's subject of the right kind
// (in-process, simulated, the go-runtime program, an A/B build's server).
#include "runner_subjects.hpp"

#include <algorithm>
#include <memory>
#include <new>
#include <optional>

#include "go_reference.hpp"
#include "served_subject.hpp"
#include "sidecar.hpp"
#include "sim_subject.hpp"
#include "speed_probe.hpp"

namespace schedlab::runner {

namespace {

// Builds the case's subject. A scheduler that cannot get its threads or its memory is named in
// the error.
std::unique_ptr<Subject> make_subject(const Case& c, RunState& run) {
  if (!c.build.empty()) return std::make_unique<ServedSubject>(*run.servers.at(c.build), c);
  if (c.scheduler->external()) return std::make_unique<GoProgramSubject>(c, run.request.warmup, run.request.schedtrace_ms);
  if (c.simulated) return std::make_unique<SimSubject>(c, SimSettings{*run.out.geometry(), run.request.warmup});
  Watchers watchers{&run.events, &run.schedtrace, run.out.trace(), std::nullopt};
  if (c.modelled) watchers.model = run.out.geometry()->ll;
  try {
    return in_process_subject(*c.scheduler, c.threads, c.scheduler_params, c.label(), watchers);
  } catch (const ResourceError& e) {
    throw ResourceError(c.label() + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw ResourceError(c.label() + ": out of memory building the scheduler; use fewer --threads");
  }
}

}  // namespace

unsigned live_threads(const Case& c) { return c.scheduler->external() ? 0 : c.threads; }

unsigned live_threads(const Case* first, const Case* last) {
  unsigned n = 0;
  for (const Case* c = first; c != last; ++c) n += live_threads(*c);
  return n;
}

Subject& SubjectCache::live_subject(LiveCase& l) {
  run_.out.sidecar().arm_last_words(l.c->label());
  if (!l.subject) {
    unsigned live = 0;
    for (Block& b : blocks_)
      for (const LiveCase& other : b.cases) live += other.subject ? live_threads(*other.c) : 0;
    const unsigned budget = std::max(kLiveThreadBudget, live_threads(*l.c));
    while (live + live_threads(*l.c) > budget) {
      LiveCase* oldest = nullptr;
      for (Block& b : blocks_)
        for (LiveCase& other : b.cases)
          if (other.subject && (oldest == nullptr || other.last_used < oldest->last_used)) oldest = &other;
      live -= live_threads(*oldest->c);
      oldest->subject.reset();
    }
    run_.probe.invalidate();
    l.subject = make_subject(*l.c, run_);
    l.subject->warm_up(*l.workload, run_.request.warmup);
  }
  l.last_used = ++run_.clock;
  return *l.subject;
}

void SubjectCache::build_if_all_fit() {
  unsigned need = 0;
  for (const Block& b : blocks_)
    for (const LiveCase& l : b.cases) need += live_threads(*l.c);
  if (need > kLiveThreadBudget) return;
  for (Block& b : blocks_)
    for (LiveCase& l : b.cases)
      if (!l.subject) (void)live_subject(l);
}

}  // namespace schedlab::runner

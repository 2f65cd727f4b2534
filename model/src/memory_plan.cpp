#include "qforge/model/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

namespace qforge::model {

namespace {

std::size_t aligned(std::size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool overlap_in_time(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

std::vector<std::size_t> assign_offsets(std::span<const BufferLifetime> buffers, bool reuse,
                                        std::size_t& arena_bytes) {
  std::vector<std::size_t> offsets(buffers.size(), 0);
  arena_bytes = 0;
  if (!reuse) {
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      offsets[i] = arena_bytes;
      arena_bytes += aligned(buffers[i].bytes);
    }
    return offsets;
  }
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<std::size_t> placed;                        // indices, in the order placed
  std::vector<std::pair<std::size_t, std::size_t>> busy;  // [offset, end) of overlapping ones
  for (const std::size_t i : order) {
    const std::size_t size = aligned(buffers[i].bytes);
    busy.clear();
    for (const std::size_t j : placed)
      if (overlap_in_time(buffers[i], buffers[j]))
        busy.emplace_back(offsets[j], offsets[j] + aligned(buffers[j].bytes));
    std::sort(busy.begin(), busy.end());
    // The smallest gap that fits, else after everything that overlaps in time.
    std::size_t best = 0, best_gap = 0, end = 0;
    bool found = false;
    for (const auto& [begin, stop] : busy) {
      if (begin > end) {
        const std::size_t gap = begin - end;
        if (gap >= size && (!found || gap < best_gap)) {
          best = end;
          best_gap = gap;
          found = true;
        }
      }
      end = std::max(end, stop);
    }
    offsets[i] = found ? best : end;
    arena_bytes = std::max(arena_bytes, offsets[i] + size);
    placed.push_back(i);
  }
  return offsets;
}

std::size_t liveness_peak(std::span<const BufferLifetime> buffers) {
  // Bytes live per step, by a sweep over +size at first and -size after last.
  std::map<std::size_t, std::ptrdiff_t> delta;
  for (const BufferLifetime& b : buffers) {
    const auto size = static_cast<std::ptrdiff_t>(aligned(b.bytes));
    delta[b.first] += size;
    delta[b.last + 1] -= size;
  }
  std::ptrdiff_t live = 0, peak = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return static_cast<std::size_t>(peak);
}

std::string describe(const MemoryPlan& plan) {
  return "arena " + mib(plan.arena_bytes) + " for " + mib(plan.total_bytes) +
         " of intermediates in " + std::to_string(plan.buffers.size()) +
         " buffers (liveness peak " + mib(plan.liveness_peak_bytes) +
         (plan.reuse ? ")" : "; reuse off)");
}

}  // namespace qforge::model

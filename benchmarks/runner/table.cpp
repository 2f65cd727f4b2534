// The table a person reads at the end of a run: one line per workload (winner, time, rate,
// speed-ups, cache), then every candidate's time per workload, then what was excluded and why.
#include <algorithm>
#include <sstream>

#include "format.h"
#include "outputs.h"

namespace qforge::bench {
namespace {

// Columns padded to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string text(const std::string& indent = "") const {
    std::vector<std::size_t> w;
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (w.size() <= i) w.push_back(0);
        w[i] = std::max(w[i], r[i].size());
      }
    std::ostringstream s;
    for (std::size_t ri = 0; ri < rows_.size(); ++ri) {
      std::string line = indent;
      for (std::size_t i = 0; i < rows_[ri].size(); ++i) {
        std::string cell = rows_[ri][i];
        if (i + 1 < rows_[ri].size()) cell.resize(w[i] + 2, ' ');
        line += cell;
      }
      s << line << "\n";
      if (ri == 0) s << indent << std::string(line.size() - indent.size(), '-') << "\n";
    }
    return s.str();
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string source_word(const WorkloadResult& r) {
  if (!r.report) return "error";
  switch (r.report->source) {
    case DecisionSource::cache: return "hit";
    case DecisionSource::memory: return "memory";
    case DecisionSource::tuned: return r.report->complete ? "tuned" : "tuned (budget)";
    case DecisionSource::fallback: return "fallback";
  }
  return "?";
}

}  // namespace

std::string table_text(const BenchRun& run, bool with_candidates) {
  std::ostringstream s;
  s << "qforge-bench: " << run.suite << " suite, " << run.workloads.size() << " workloads, "
    << format_fixed(run.seconds, 1) << " s, " << run.date << "\n";
  s << "machine: " << run.cpu << " (fingerprint " << run.fingerprint << ")\n";
  s << "plugins:";
  for (const auto& p : run.plugins)
    s << " " << p.name << " " << p.version << (p.usable ? "" : " (unusable: " + p.reason + ")");
  s << "\npolicy: " << run.policy << "\n";
  s << "cache: " << (run.cache_path.empty() ? "none" : run.cache_path) << " ("
    << run.stats.cache_hits << " hits, " << run.stats.buckets_tuned << " tuned)\n\n";

  Table t({"workload", "winner", "time", "rate", "vs cpu_scalar", "vs anchor", "cache"});
  for (const auto& r : run.workloads) {
    if (!r.report) {
      t.add({r.name, "-", "-", "-", "-", "-", "error"});
      continue;
    }
    const std::string anchor =
        r.anchor ? format_ratio(r.speedup_vs_anchor()) + " " + r.anchor->name : "-";
    t.add({r.name, r.report->winner.label(), format_seconds(r.report->winner_seconds),
           format_rate(r.winner_rate(), r.work.unit), format_ratio(r.speedup_vs_scalar()), anchor,
           source_word(r)});
  }
  s << t.text();
  for (const auto& r : run.workloads)
    if (!r.report) s << r.name << ": " << r.error << "\n";
  if (!with_candidates) {
    if (!run.load_failures.empty())
      s << run.load_failures.size() << " plugin(s) did not load (see the table file)\n";
    for (const auto& w : run.cache_warnings) s << "warning: " << w << "\n";
    return s.str();
  }
  s << "\n";

  s << "candidates (median time per call; excluded ones with the reason):\n";
  for (const auto& r : run.workloads) {
    s << "  " << r.name << ": " << r.description << "\n";
    if (!r.report) {
      s << "    error: " << r.error << "\n";
      continue;
    }
    Table c({"candidate", "status", "time", "rate", "samples"});
    std::vector<std::string> reasons;
    for (const auto& cand : r.report->candidates) {
      const bool measured = cand.status == CandidateStatus::measured;
      c.add({cand.id.label() + (cand.id == r.report->winner ? " *" : ""),
             std::string(to_string(cand.status)), measured ? format_seconds(cand.seconds) : "-",
             measured ? format_rate(r.work.rate(cand.seconds), r.work.unit) : "-",
             measured ? std::to_string(cand.samples) : "-"});
      if (!measured && !cand.message.empty())
        reasons.push_back(cand.id.label() + ": " + cand.message);
    }
    if (r.anchor)
      c.add({"(anchor) " + r.anchor->name, "measured", format_seconds(r.anchor->seconds),
             format_rate(r.work.rate(r.anchor->seconds), r.work.unit), "-"});
    s << c.text("    ");
    for (const auto& why : reasons) s << "    " << why << "\n";
    for (const auto& n : r.report->notes) s << "    note: " << n << "\n";
  }
  if (!run.load_failures.empty()) {
    s << "\nplugins that did not load:\n";
    for (const auto& f : run.load_failures) s << "  " << f << "\n";
  }
  for (const auto& w : run.cache_warnings) s << "\nwarning: " << w << "\n";
  return s.str();
}

}  // namespace qforge::bench

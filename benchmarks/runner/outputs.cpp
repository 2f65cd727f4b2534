// JSON and CSV outputs, and writing files.
#include "outputs.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "qforge/error.h"
#include "qforge/output_file.h"

namespace qforge::bench {
namespace {

using nlohmann::json;

json optional_number(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

json candidate_json(const CandidateResult& c, const Work& w) {
  const bool measured = c.status == CandidateStatus::measured;
  return {{"plugin", c.id.plugin},
          {"device", c.id.device},
          {"kernel", c.id.kernel},
          {"status", std::string(to_string(c.status))},
          {"seconds", measured ? json(c.seconds) : json(nullptr)},
          {"samples", c.samples},
          {"rate", measured ? json(w.rate(c.seconds)) : json(nullptr)},
          {"message", c.message}};
}

json workload_json(const WorkloadResult& r) {
  json j = {{"name", r.name},
            {"op", r.op},
            {"description", r.description},
            {"residency", r.residency},
            {"unit", r.work.unit},
            {"work", r.work.amount},
            {"cache_hit", r.cache_hit()},
            {"error", r.error.empty() ? json(nullptr) : json(r.error)}};
  if (!r.report) {
    j["bucket"] = nullptr;
    j["source"] = nullptr;
    j["complete"] = false;
    j["winner"] = nullptr;
    j["candidates"] = json::array();
    j["tuning_seconds"] = 0.0;
  } else {
    const TuneReport& t = *r.report;
    j["bucket"] = t.bucket;
    j["source"] = std::string(to_string(t.source));
    j["complete"] = t.complete;
    j["winner"] = {{"plugin", t.winner.plugin},
                   {"device", t.winner.device},
                   {"kernel", t.winner.kernel},
                   {"seconds", t.winner_seconds > 0 ? json(t.winner_seconds) : json(nullptr)},
                   {"rate", t.winner_seconds > 0 ? json(r.winner_rate()) : json(nullptr)}};
    j["candidates"] = json::array();
    for (const auto& c : t.candidates) j["candidates"].push_back(candidate_json(c, r.work));
    j["tuning_seconds"] = t.tuning_seconds;
    j["notes"] = t.notes;
  }
  j["anchor"] = r.anchor ? json{{"name", r.anchor->name},
                                {"seconds", r.anchor->seconds},
                                {"rate", r.work.rate(r.anchor->seconds)}}
                         : json(nullptr);
  j["speedup_vs_cpu_scalar"] = optional_number(r.speedup_vs_scalar());
  j["speedup_vs_anchor"] = optional_number(r.speedup_vs_anchor());
  return j;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(std::optional<double> v) {
  if (!v) return "";
  std::ostringstream s;
  s.precision(6);
  s << *v;
  return s.str();
}

}  // namespace

std::string json_text(const BenchRun& run) {
  json plugins = json::array();
  for (const auto& p : run.plugins)
    plugins.push_back(
        {{"name", p.name}, {"version", p.version}, {"usable", p.usable}, {"reason", p.reason}});
  json workloads = json::array();
  for (const auto& w : run.workloads) workloads.push_back(workload_json(w));
  const json doc = {{"schema", kJsonSchema},
                    {"suite", run.suite},
                    {"date", run.date},
                    {"seconds", run.seconds},
                    {"machine", {{"cpu", run.cpu}, {"fingerprint", run.fingerprint}}},
                    {"policy", run.policy},
                    {"plugins", plugins},
                    {"load_failures", run.load_failures},
                    {"cache",
                     {{"path", run.cache_path.empty() ? json(nullptr) : json(run.cache_path)},
                      {"hits", run.stats.cache_hits},
                      {"tuned", run.stats.buckets_tuned},
                      {"fallbacks", run.stats.fallbacks},
                      {"warnings", run.cache_warnings}}},
                    {"workloads", workloads}};
  // A driver may report a device name that is not UTF-8: replace, do not fail the document.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string csv_text(const BenchRun& run) {
  std::ostringstream s;
  s << "workload,op,residency,candidate_plugin,candidate_device,candidate_kernel,status,seconds,"
       "rate,unit,winner,speedup_vs_cpu_scalar,anchor,speedup_vs_anchor,cache_hit,message\n";
  for (const auto& r : run.workloads) {
    if (!r.report) {
      s << csv_cell(r.name) << "," << r.op << "," << r.residency << ",,,,error,,," << r.work.unit
        << ",,,,,false," << csv_cell(r.error) << "\n";
      continue;
    }
    for (const auto& c : r.report->candidates) {
      const bool measured = c.status == CandidateStatus::measured;
      const bool winner = c.id == r.report->winner;
      s << csv_cell(r.name) << "," << r.op << "," << r.residency << "," << csv_cell(c.id.plugin)
        << "," << c.id.device << "," << csv_cell(c.id.kernel) << "," << to_string(c.status) << ","
        << (measured ? number(c.seconds) : "") << ","
        << (measured ? number(r.work.rate(c.seconds)) : "") << "," << r.work.unit << ","
        << (winner ? "true" : "false") << "," << (winner ? number(r.speedup_vs_scalar()) : "")
        << "," << (r.anchor ? csv_cell(r.anchor->name) : "") << ","
        << (winner ? number(r.speedup_vs_anchor()) : "") << ","
        << (r.cache_hit() ? "true" : "false") << "," << csv_cell(c.message) << "\n";
    }
  }
  return s.str();
}

void write_file(const std::filesystem::path& file, const std::string& text) {
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  if (ec)
    throw Error(ErrorCode::io, "qforge-bench: cannot create the directory of " + file.string() +
                                   ": " + ec.message());
  write_file_atomically(file, text, "qforge-bench output");
}

}  // namespace qforge::bench

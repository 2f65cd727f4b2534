// The tuning cache file: JSON through nlohmann-json, merged and replaced atomically under a
// lock (cache_file.h). Layout:
//
//   { "format": "qforge-tuning-cache", "version": 1,
//     "machines": { "<fingerprint id>": { "fingerprint": {...}, "updated": "<UTC>",
//                                         "entries": { "<key>": { entry } } } } }
//
// Only the last kMaxMachines fingerprints (by "updated") are kept, so a home directory shared
// by many machines, or years of plugin upgrades, do not grow the file without bound.
#include "qforge/tuning_cache.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "accelerator/cache_file.h"
#include "qforge/error.h"
#include "qforge/log.h"

namespace qforge {
namespace {

using nlohmann::json;
using accel::FileLock;

constexpr const char* kFormat = "qforge-tuning-cache";
// Bump when the layout or the meaning of keys (workload_key.cpp) changes: an older file is
// then set aside as "incompatible" instead of being misread.
constexpr int kVersion = 1;
constexpr std::size_t kMaxMachines = 16;

json empty_document() {
  return json{{"format", kFormat}, {"version", kVersion}, {"machines", json::object()}};
}

json to_json(const CandidateId& id) {
  return json{{"plugin", id.plugin}, {"device", id.device}, {"kernel", id.kernel}};
}

CandidateId candidate_from(const json& j) {
  return {j.at("plugin").get<std::string>(), j.at("device").get<int>(),
          j.at("kernel").get<std::string>()};
}

json to_json(const HardwareFingerprint& fp) {
  json plugins = json::array();
  for (const auto& p : fp.plugins)
    plugins.push_back({{"name", p.name}, {"version", p.version}, {"devices", p.devices}});
  return json{{"cpu_model", fp.cpu_model}, {"cpu_features", fp.cpu_features}, {"plugins", plugins}};
}

HardwareFingerprint fingerprint_from(const json& j) {
  HardwareFingerprint fp;
  fp.cpu_model = j.at("cpu_model").get<std::string>();
  fp.cpu_features = j.at("cpu_features").get<std::vector<std::string>>();
  for (const auto& p : j.at("plugins"))
    fp.plugins.push_back({p.at("name").get<std::string>(), p.at("version").get<std::string>(),
                          p.at("devices").get<std::vector<std::string>>()});
  return fp;
}

json to_json(const CacheEntry& e) {
  json candidates = json::array();
  for (const auto& c : e.candidates)
    candidates.push_back({{"id", to_json(c.id)},
                          {"status", c.status},
                          {"seconds", c.seconds},
                          {"samples", c.samples},
                          {"message", c.message}});
  return json{{"workload", e.workload}, {"example", e.example}, {"winner", to_json(e.winner)},
              {"seconds", e.seconds},   {"complete", e.complete}, {"tuned_at", e.tuned_at},
              {"candidates", candidates}};
}

CacheEntry entry_from(const std::string& key, const json& j) {
  CacheEntry e;
  e.key = key;
  e.workload = j.at("workload").get<std::string>();
  e.example = j.at("example").get<std::string>();
  e.winner = candidate_from(j.at("winner"));
  e.seconds = j.at("seconds").get<double>();
  e.complete = j.at("complete").get<bool>();
  e.tuned_at = j.at("tuned_at").get<std::string>();
  for (const auto& c : j.at("candidates"))
    e.candidates.push_back({candidate_from(c.at("id")), c.at("status").get<std::string>(),
                            c.at("seconds").get<double>(), c.at("samples").get<int>(),
                            c.at("message").get<std::string>()});
  return e;
}

// Why `doc` is not a tuning cache this version can use, or nullopt. The first element says
// whether it is damaged ("corrupt") or from another format version ("incompatible").
std::optional<std::pair<std::string, std::string>> schema_problem(const json& doc) {
  if (!doc.is_object() || doc.value("format", std::string()) != kFormat)
    return std::pair<std::string, std::string>{"corrupt", "it is not a qforge tuning cache (no \"format\": \"qforge-tuning-cache\")"};
  const auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer())
    return std::pair<std::string, std::string>{"corrupt", "it has no integer \"version\""};
  if (version->get<int>() != kVersion)
    return std::pair<std::string, std::string>{
        "incompatible", "it has format version " + std::to_string(version->get<int>()) +
                            " and this qforge reads version " + std::to_string(kVersion)};
  try {
    for (const auto& [id, m] : doc.at("machines").items()) {
      fingerprint_from(m.at("fingerprint"));
      m.at("updated").get<std::string>();
      for (const auto& [key, e] : m.at("entries").items()) entry_from(key, e);
    }
  } catch (const json::exception& e) {
    return std::pair<std::string, std::string>{"corrupt", std::string("an entry is malformed: ") + e.what()};
  }
  return std::nullopt;
}

// Each damaged file (path and contents) is reported once per process, even when it cannot be
// renamed away and is met again.
bool first_report(const std::filesystem::path& p, const std::string& contents) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::size_t>> seen;
  std::lock_guard lock(mutex);
  return seen.insert({p.string(), std::hash<std::string>{}(contents)}).second;
}

}  // namespace

struct TuningCache::Impl {
  std::filesystem::path path;
  CacheMode mode = CacheMode::read_write;
  json doc = empty_document();
  std::vector<std::string> warnings;

  // Parses `text`; a file that is not a usable cache is set aside, reported once, and replaced
  // by an empty document. Called with the lock held.
  json parse(const std::optional<std::string>& text) {
    if (!text) return empty_document();
    std::pair<std::string, std::string> problem;
    try {
      json d = json::parse(*text);
      const auto p = schema_problem(d);
      if (!p) return d;
      problem = *p;
    } catch (const json::parse_error& e) {
      problem = {"corrupt", text->empty() ? std::string("it is empty")
                                          : std::string("it does not parse: ") + e.what()};
    }
    const bool writable = mode == CacheMode::read_write;
    const std::filesystem::path moved = writable ? accel::set_aside(path, problem.first) : std::filesystem::path();
    if (first_report(path, *text)) {
      std::string msg = "tuning cache " + path.string() + " is unusable: " + problem.second + "; ";
      if (!writable)
        msg += "left in place (opened read-only); the next program that tunes sets it aside";
      else
        msg += (moved.empty() ? std::string("it could not be renamed and will be overwritten")
                              : "set aside as " + moved.string()) +
               "; it is rebuilt as workloads are tuned";
      logger().warn("{}", msg);
      warnings.push_back(msg);
    }
    return empty_document();
  }
};

std::filesystem::path TuningCache::default_path() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (const std::string p = env("QFORGE_TUNING_CACHE"); !p.empty() && p != "off") return p;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty() && x.front() == '/')
    return std::filesystem::path(x) / "qforge" / "tuning.json";
  if (const std::string h = env("HOME"); !h.empty())
    return std::filesystem::path(h) / ".cache" / "qforge" / "tuning.json";
  throw Error(ErrorCode::io,
              "tuning cache: none of QFORGE_TUNING_CACHE, XDG_CACHE_HOME or HOME is set; "
              "expected one of them to say where the cache lives");
}

TuningCache::TuningCache(std::filesystem::path path, CacheMode mode)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(path);
  impl_->mode = mode;
  reload();
}

TuningCache::~TuningCache() = default;

const std::filesystem::path& TuningCache::path() const noexcept { return impl_->path; }

void TuningCache::reload() {
  std::error_code ec;
  if (!std::filesystem::exists(impl_->path, ec)) {
    impl_->doc = empty_document();
    return;
  }
  std::optional<FileLock> lock;
  try {
    lock.emplace(accel::lock_path(impl_->path), /*exclusive=*/false);
  } catch (const Error&) {
    // A read-only cache directory: read without the lock (writers there are impossible anyway).
  }
  impl_->doc = impl_->parse(accel::read_text(impl_->path));
}

std::optional<CacheEntry> TuningCache::find(const HardwareFingerprint& fp,
                                            std::string_view key) const {
  const json& machines = impl_->doc.at("machines");
  const auto m = machines.find(fp.id());
  if (m == machines.end()) return std::nullopt;
  // Two fingerprints with one 64-bit id would be a hash collision: compare in full.
  if (!(fingerprint_from(m->at("fingerprint")) == fp)) return std::nullopt;
  const json& entries = m->at("entries");
  const auto e = entries.find(std::string(key));
  if (e == entries.end()) return std::nullopt;
  return entry_from(std::string(key), *e);
}

std::vector<CacheEntry> TuningCache::entries(const HardwareFingerprint& fp) const {
  std::vector<CacheEntry> out;
  const json& machines = impl_->doc.at("machines");
  const auto m = machines.find(fp.id());
  if (m == machines.end() || !(fingerprint_from(m->at("fingerprint")) == fp)) return out;
  for (const auto& [key, e] : m->at("entries").items()) out.push_back(entry_from(key, e));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

std::size_t TuningCache::machine_count() const { return impl_->doc.at("machines").size(); }

namespace {
void require_writable(CacheMode mode, const std::filesystem::path& p, const char* what) {
  if (mode == CacheMode::read_only)
    throw Error(ErrorCode::invalid_argument, std::string("tuning cache ") + p.string() +
                                                 " was opened read-only; " + what +
                                                 " needs CacheMode::read_write");
}
}  // namespace

void TuningCache::store(const HardwareFingerprint& fp, const CacheEntry& entry) {
  const std::filesystem::path& p = impl_->path;
  require_writable(impl_->mode, p, "store()");
  std::error_code ec;
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec)
      throw Error(ErrorCode::io, "tuning cache: cannot create the directory " +
                                     p.parent_path().string() + ": " + ec.message());
  }
  FileLock lock(accel::lock_path(p), /*exclusive=*/true);
  json doc = impl_->parse(accel::read_text(p));  // what other processes wrote meanwhile
  json& machine = doc["machines"][fp.id()];
  machine["fingerprint"] = to_json(fp);
  machine["updated"] = accel::utc_now_iso();
  if (!machine.contains("entries")) machine["entries"] = json::object();
  machine["entries"][entry.key] = to_json(entry);

  json& machines = doc["machines"];
  const std::string self = fp.id();
  while (machines.size() > kMaxMachines) {
    auto oldest = machines.end();
    for (auto it = machines.begin(); it != machines.end(); ++it) {
      if (it.key() == self) continue;
      if (oldest == machines.end() ||
          it.value().at("updated").get<std::string>() < oldest.value().at("updated").get<std::string>())
        oldest = it;
    }
    machines.erase(oldest);
  }
  accel::write_atomically(p, doc.dump(1) + "\n");
  impl_->doc = std::move(doc);
}

void TuningCache::clear() {
  const std::filesystem::path& p = impl_->path;
  require_writable(impl_->mode, p, "clear()");
  std::error_code ec;
  if (std::filesystem::exists(p, ec)) {
    FileLock lock(accel::lock_path(p), /*exclusive=*/true);
    std::filesystem::remove(p, ec);
    if (ec) throw Error(ErrorCode::io, "tuning cache: cannot remove " + p.string() + ": " + ec.message());
  }
  impl_->doc = empty_document();
}

std::vector<std::string> TuningCache::warnings() const { return impl_->warnings; }

}  // namespace qforge

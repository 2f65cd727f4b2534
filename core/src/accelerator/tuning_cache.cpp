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

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <system_error>

#include "accelerator/cache_file.h"
#include "log_format.h"
#include "qforge/error.h"
#include "qforge/input_file.h"
#include "qforge/output_file.h"

namespace qforge {
namespace {

using accel::FileLock;
using nlohmann::json;

constexpr const char* kFormat = "qforge-tuning-cache";
// Bump when the layout or the meaning of keys (workload_key.cpp) changes: an older file is
// then set aside as "incompatible" instead of being misread.
constexpr int kVersion = 1;
constexpr std::size_t kMaxMachines = 16;

json empty_document() {
  return json{{"format", kFormat}, {"version", kVersion}, {"machines", json::object()}};
}

// ---- reading: every value is checked before it is converted -----------------------------
//
// A cache file is input from the disk, not from this program: a value of the wrong type, an
// integer out of range or a float where an integer belongs is Malformed (naming the field), never
// an nlohmann exception and never a get<int>() of a value int cannot hold (undefined behaviour
// for floats, silent truncation for large integers).

struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void malformed(const std::string& where, const std::string& what) {
  throw Malformed((where.empty() ? std::string("the document") : where) + ": " + what);
}

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object())
    malformed(where, std::string("is a JSON ") + j.type_name() + "; expected an object");
  const auto it = j.find(key);
  if (it == j.end()) malformed(where, std::string("has no field \"") + key + "\"");
  return *it;
}

std::string field_path(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

std::string text_at(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_string())
    malformed(field_path(where, key),
              std::string("is a JSON ") + v.type_name() + "; expected a string");
  return v.get<std::string>();
}

bool flag_at(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_boolean())
    malformed(field_path(where, key),
              std::string("is a JSON ") + v.type_name() + "; expected true or false");
  return v.get<bool>();
}

// An integer in [lo, hi]: rejected unless the JSON value is an integer (not 3.0, not 3e9).
std::int64_t integer_value(const json& v, std::int64_t lo, std::int64_t hi,
                           const std::string& where) {
  const auto out_of_range = [&] {
    malformed(where, v.dump() + " is not an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]");
  };
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi)) out_of_range();
    return static_cast<std::int64_t>(u);
  }
  if (!v.is_number_integer()) out_of_range();
  const auto i = v.get<std::int64_t>();
  if (i < lo || i > hi) out_of_range();
  return i;
}

int int_at(const json& j, const char* key, const std::string& where) {
  return static_cast<int>(integer_value(member(j, key, where), 0, std::numeric_limits<int>::max(),
                                        field_path(where, key)));
}

// Seconds: a finite number >= 0.
double seconds_at(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_number())
    malformed(field_path(where, key),
              std::string("is a JSON ") + v.type_name() + "; expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0)
    malformed(field_path(where, key), v.dump() + "; expected a finite number >= 0");
  return d;
}

const json& object_at(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_object())
    malformed(field_path(where, key),
              std::string("is a JSON ") + v.type_name() + "; expected an object");
  return v;
}

const json& array_at(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_array())
    malformed(field_path(where, key),
              std::string("is a JSON ") + v.type_name() + "; expected an array");
  return v;
}

std::vector<std::string> texts_at(const json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const json& a = array_at(j, key, where);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string())
      malformed(field_path(where, key) + "[" + std::to_string(i) + "]",
                std::string("is a JSON ") + a[i].type_name() + "; expected a string");
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

json to_json(const CandidateId& id) {
  return json{{"plugin", id.plugin}, {"device", id.device}, {"kernel", id.kernel}};
}

CandidateId candidate_from(const json& j, const std::string& where) {
  return {text_at(j, "plugin", where), int_at(j, "device", where), text_at(j, "kernel", where)};
}

json to_json(const HardwareFingerprint& fp) {
  json plugins = json::array();
  for (const auto& p : fp.plugins)
    plugins.push_back({{"name", p.name}, {"version", p.version}, {"devices", p.devices}});
  return json{{"cpu_model", fp.cpu_model}, {"cpu_features", fp.cpu_features}, {"plugins", plugins}};
}

HardwareFingerprint fingerprint_from(const json& j, const std::string& where) {
  HardwareFingerprint fp;
  fp.cpu_model = text_at(j, "cpu_model", where);
  fp.cpu_features = texts_at(j, "cpu_features", where);
  const json& plugins = array_at(j, "plugins", where);
  for (std::size_t i = 0; i < plugins.size(); ++i) {
    const std::string at = field_path(where, "plugins") + "[" + std::to_string(i) + "]";
    fp.plugins.push_back({text_at(plugins[i], "name", at), text_at(plugins[i], "version", at),
                          texts_at(plugins[i], "devices", at)});
  }
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
  return json{{"workload", e.workload},  {"example", e.example},   {"winner", to_json(e.winner)},
              {"seconds", e.seconds},    {"complete", e.complete}, {"tuned_at", e.tuned_at},
              {"candidates", candidates}};
}

CacheEntry entry_from(const std::string& key, const json& j, const std::string& where) {
  CacheEntry e;
  e.key = key;
  e.workload = text_at(j, "workload", where);
  e.example = text_at(j, "example", where);
  e.winner = candidate_from(member(j, "winner", where), field_path(where, "winner"));
  e.seconds = seconds_at(j, "seconds", where);
  e.complete = flag_at(j, "complete", where);
  e.tuned_at = text_at(j, "tuned_at", where);
  const json& list = array_at(j, "candidates", where);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = field_path(where, "candidates") + "[" + std::to_string(i) + "]";
    const json& c = list[i];
    e.candidates.push_back({candidate_from(member(c, "id", at), field_path(at, "id")),
                            text_at(c, "status", at), seconds_at(c, "seconds", at),
                            int_at(c, "samples", at), text_at(c, "message", at)});
  }
  return e;
}

std::string machine_where(const std::string& id) { return "machines[\"" + id + "\"]"; }
std::string entry_where(const std::string& id, const std::string& key) {
  return machine_where(id) + ".entries[\"" + key + "\"]";
}

// Why `doc` is not a tuning cache this version can use, or nullopt. The first element says
// whether it is damaged ("corrupt") or from another format version ("incompatible").
using Problem = std::pair<std::string, std::string>;
std::optional<Problem> schema_problem(const json& doc) {
  if (!doc.is_object())
    return Problem{"corrupt", "it is not a qforge tuning cache (not a JSON object)"};
  const auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() || format->get<std::string>() != kFormat)
    return Problem{"corrupt",
                   "it is not a qforge tuning cache (no \"format\": \"qforge-tuning-cache\")"};
  const auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer())
    return Problem{"corrupt", "it has no integer \"version\""};
  // Compared as the JSON integer it is: 4294967297 is not version 1.
  const bool supported = version->is_number_unsigned() ? version->get<std::uint64_t>() == kVersion
                                                       : version->get<std::int64_t>() == kVersion;
  if (!supported)
    return Problem{"incompatible", "it has format version " + version->dump() +
                                       " and this qforge reads version " +
                                       std::to_string(kVersion)};
  try {
    for (const auto& [id, m] : object_at(doc, "machines", "").items()) {
      const std::string where = machine_where(id);
      fingerprint_from(member(m, "fingerprint", where), field_path(where, "fingerprint"));
      text_at(m, "updated", where);
      for (const auto& [key, e] : object_at(m, "entries", where).items())
        entry_from(key, e, entry_where(id, key));
    }
  } catch (const Malformed& e) {
    return Problem{"corrupt", std::string("an entry is malformed: ") + e.what()};
  }
  return std::nullopt;
}

// The problem with `text` as a whole: does not parse, or schema_problem(). nlohmann's own
// exceptions (parse_error, and out_of_range for a number like 1e400) all become problems.
std::optional<Problem> text_problem(std::string_view text, json& doc) {
  if (text.empty()) return Problem{"corrupt", "it is empty"};
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return Problem{"corrupt", std::string("it does not parse: ") + e.what()};
  }
  return schema_problem(doc);
}

// Each damaged file (path and contents) is reported once per process, even when it cannot be
// renamed away and is met again.
// `what` identifies the problem (a hash of the contents, "read-only", ...).
bool first_report(const std::filesystem::path& p, const std::string& what) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::string>> seen;
  std::lock_guard lock(mutex);
  return seen.insert({p.string(), what}).second;
}

// A file the user made read-only (no write permission bits, or not writable by this process):
// it is read but never replaced, set aside or removed.
bool read_only_file(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;  // missing: created on the first store()
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) return true;  // even for root
  return ::access(p.c_str(), W_OK) != 0;
}

}  // namespace

struct TuningCache::Impl {
  std::filesystem::path path;
  CacheMode mode = CacheMode::read_write;
  bool file_read_only = false;  // the file exists and must not be written (see read_only_file)
  json doc = empty_document();
  std::vector<std::string> warnings;

  void warn_once(const std::string& key, const std::string& msg) {
    if (!first_report(path, key)) return;
    log_message(LogLevel::warn, msg);
    warnings.push_back(msg);
  }

  // Notes whether the file is read-only now, and says so once.
  void check_read_only() {
    file_read_only = mode == CacheMode::read_write && read_only_file(path);
    if (file_read_only)
      warn_once("read-only", "tuning cache " + path.string() +
                                 " is read-only: it is used as it is and new tuning results "
                                 "are not written back (make it writable to update it)");
  }

  // A file that is not a usable cache is set aside (unless read-only), reported once, and
  // replaced by an empty document. Called with the lock held.
  json unusable(const Problem& problem, const std::string& report_key) {
    const bool may_move = mode == CacheMode::read_write && !file_read_only;
    const std::filesystem::path moved =
        may_move ? accel::set_aside(path, problem.first) : std::filesystem::path();
    std::string msg = "tuning cache " + path.string() + " is unusable: " + problem.second + "; ";
    if (mode == CacheMode::read_only)
      msg += "left in place (opened read-only); the next program that tunes sets it aside";
    else if (file_read_only)
      msg += "left in place (the file is read-only); tuning results are kept in memory only";
    else
      msg += (moved.empty() ? std::string("it could not be renamed and will be overwritten")
                            : "set aside as " + moved.string()) +
             "; it is rebuilt as workloads are tuned";
    warn_once(report_key, msg);
    return empty_document();
  }

  // Reads and interprets the file. Damage of any kind (does not parse, a field of the wrong type
  // or range, larger than kMaxInputFileBytes) is unusable(); a file that cannot be read at all
  // (a FIFO, a device, permissions) throws ErrorCode::io. Called with the lock held.
  json load() {
    std::optional<std::string> text;
    try {
      text = read_input_file_if_exists(path, "tuning cache");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::corrupt_data) throw;
      return unusable({"corrupt", e.what()}, "oversized");
    }
    if (!text) return empty_document();
    json d;
    std::optional<Problem> problem;
    try {
      problem = text_problem(*text, d);
    } catch (const std::exception& e) {
      // Out of memory for a deeply nested or huge document, say: damage like any other.
      problem = Problem{"corrupt", std::string("it cannot be interpreted: ") + e.what()};
    }
    if (!problem) return d;
    return unusable(*problem, std::to_string(std::hash<std::string>{}(*text)));
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
  if (mode == CacheMode::read_write && !impl_->file_read_only)
    remove_stale_temporary_files(impl_->path);
}

TuningCache::~TuningCache() = default;

const std::filesystem::path& TuningCache::path() const noexcept { return impl_->path; }

void TuningCache::reload() {
  impl_->check_read_only();
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
  impl_->doc = impl_->load();
}

std::optional<CacheEntry> TuningCache::find(const HardwareFingerprint& fp,
                                            std::string_view key) const {
  const json& machines = impl_->doc.at("machines");
  const auto m = machines.find(fp.id());
  if (m == machines.end()) return std::nullopt;
  // Two fingerprints with one 64-bit id would be a hash collision: compare in full.
  const std::string where = machine_where(m.key());
  if (!(fingerprint_from(m->at("fingerprint"), field_path(where, "fingerprint")) == fp))
    return std::nullopt;
  const json& entries = m->at("entries");
  const auto e = entries.find(std::string(key));
  if (e == entries.end()) return std::nullopt;
  return entry_from(std::string(key), *e, entry_where(m.key(), std::string(key)));
}

std::vector<CacheEntry> TuningCache::entries(const HardwareFingerprint& fp) const {
  std::vector<CacheEntry> out;
  const json& machines = impl_->doc.at("machines");
  const auto m = machines.find(fp.id());
  if (m == machines.end() ||
      !(fingerprint_from(m->at("fingerprint"), field_path(machine_where(m.key()), "fingerprint")) ==
        fp))
    return out;
  for (const auto& [key, e] : m->at("entries").items())
    out.push_back(entry_from(key, e, entry_where(m.key(), key)));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

std::size_t TuningCache::machine_count() const { return impl_->doc.at("machines").size(); }

namespace {
void require_writable(CacheMode mode, bool file_read_only, const std::filesystem::path& p,
                      const char* what) {
  if (mode == CacheMode::read_only)
    throw Error(ErrorCode::invalid_argument, std::string("tuning cache ") + p.string() +
                                                 " was opened read-only; " + what +
                                                 " needs CacheMode::read_write");
  if (file_read_only)
    throw Error(ErrorCode::io, std::string("tuning cache ") + p.string() +
                                   " is a read-only file; " + what +
                                   " leaves it alone (make it writable to update it)");
}
}  // namespace

void TuningCache::store(const HardwareFingerprint& fp, const CacheEntry& entry) {
  const std::filesystem::path& p = impl_->path;
  impl_->check_read_only();
  require_writable(impl_->mode, impl_->file_read_only, p, "store()");
  std::error_code ec;
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec)
      throw Error(ErrorCode::io, "tuning cache: cannot create the directory " +
                                     p.parent_path().string() + ": " + ec.message());
  }
  FileLock lock(accel::lock_path(p), /*exclusive=*/true);
  json doc = impl_->load();  // what other processes wrote meanwhile
  // Temporary files of writers killed mid-write: only a writer holding the lock removes them.
  remove_stale_temporary_files(p);
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
      if (oldest == machines.end() || it.value().at("updated").get<std::string>() <
                                          oldest.value().at("updated").get<std::string>())
        oldest = it;
    }
    machines.erase(oldest);
  }
  write_file_atomically(p, doc.dump(1) + "\n", "tuning cache");
  impl_->doc = std::move(doc);
}

void TuningCache::clear() {
  const std::filesystem::path& p = impl_->path;
  impl_->check_read_only();
  require_writable(impl_->mode, impl_->file_read_only, p, "clear()");
  std::error_code ec;
  if (std::filesystem::exists(p, ec)) {
    FileLock lock(accel::lock_path(p), /*exclusive=*/true);
    std::filesystem::remove(p, ec);
    if (ec)
      throw Error(ErrorCode::io, "tuning cache: cannot remove " + p.string() + ": " + ec.message());
  }
  impl_->doc = empty_document();
}

std::vector<std::string> TuningCache::warnings() const { return impl_->warnings; }

bool TuningCache::writable() const noexcept {
  return impl_->mode == CacheMode::read_write && !impl_->file_read_only;
}

std::optional<std::string> tuning_cache_problem(std::string_view text) {
  json doc;
  try {
    if (auto p = text_problem(text, doc)) return p->first + ": " + p->second;
  } catch (const std::exception& e) {
    return std::string("corrupt: it cannot be interpreted: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace qforge

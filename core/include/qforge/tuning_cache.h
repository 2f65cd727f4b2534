// The persistent tuning cache: which (plugin, device, kernel) won each workload bucket on this
// machine, so that a program tunes a bucket once and every later run reuses the choice.
//
// One JSON file (nlohmann-json), by default $QFORGE_TUNING_CACHE, else
// $XDG_CACHE_HOME/qforge/tuning.json, else ~/.cache/qforge/tuning.json. Entries are grouped by
// a hardware fingerprint (CPU model and features, every loaded plugin's name and version, each
// plugin's devices with their driver): a different machine, a plugin upgrade or a new driver
// gives a different fingerprint, whose section starts empty, so stale choices are never reused.
//
// Concurrency and damage (docs/ACCELERATOR.md):
//   - every write takes an exclusive flock() on "<file>.lock", re-reads the file, merges its own
//     entries into what other processes wrote meanwhile, writes a temporary file in the same
//     directory, fsyncs it and renames it over the cache (then fsyncs the directory): readers
//     see the old file or the new one, never a torn one;
//   - a file that does not parse, parses to something that is not a qforge tuning cache (any
//     field of the wrong type, an integer out of range or given as a float, a number JSON
//     cannot hold such as 1e400), or is larger than kMaxInputFileBytes (64 MiB) is reported
//     once (a warning through qforge's log (log.h) and warnings(), naming the file and the field),
//     renamed to "<file>.corrupt-<UTC timestamp>" (another format version:
//     "<file>.incompatible-<UTC timestamp>") for inspection, and rebuilt from scratch;
//   - a cache that is not a regular file (a FIFO, /dev/zero) is never read: the constructor
//     throws ErrorCode::io (the accelerator then works without a cache);
//   - a read-only cache file (no write permission bits, or not writable by this process) is
//     read and used but never replaced, set aside or removed: a warning says so once, store()
//     and clear() throw ErrorCode::io, writable() is false;
//   - temporary files of a writer killed mid-write ("<file>.tmp-<pid>-<random>") older than a
//     minute are removed by the next writer.
//
// A TuningCache object keeps the last snapshot it read; find() answers from that snapshot.
// It is not synchronised: use one object from one thread at a time (separate objects and
// separate processes may share one file).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/export.h"
#include "qforge/registry.h"

namespace qforge {

// One (plugin, device, kernel variant) the accelerator can dispatch to. An empty kernel means
// "the plugin's own choice" (a plugin whose supports() lists no kernels).
struct CandidateId {
  std::string plugin;
  int device = 0;
  std::string kernel;

  // "cpu_x86[0]/x86_gemm_avx2_4x16", or "cpu_scalar[0]" for an empty kernel.
  QFORGE_API std::string label() const;
  friend bool operator==(const CandidateId&, const CandidateId&) = default;
};

// What identifies "this machine with these plugins". id() is what the cache is keyed by.
struct HardwareFingerprint {
  struct Plugin {
    std::string name;
    std::string version;
    // Device names, each followed by the driver/runtime facts that change results or speed
    // (" driver=13.0" ...), in the plugin's device order.
    std::vector<std::string> devices;
    friend bool operator==(const Plugin&, const Plugin&) = default;
  };
  std::string cpu_model;
  std::vector<std::string> cpu_features;  // the features cpu_info() reports present, in its order
  std::vector<Plugin> plugins;            // sorted by name

  // 16 lowercase hex digits: a 64-bit FNV-1a hash of a canonical text of every field above.
  QFORGE_API std::string id() const;
  friend bool operator==(const HardwareFingerprint&, const HardwareFingerprint&) = default;
};

// The fingerprint of this CPU (qforge::cpu_info()) with these plugins.
QFORGE_API HardwareFingerprint hardware_fingerprint(const std::vector<LoadedPlugin>& plugins);

// One candidate's outcome as the tuner recorded it.
struct CachedCandidate {
  CandidateId id;
  std::string status;  // "measured", "wrong_result", "threw", "timed_out", "not_measured", ...
  double seconds = 0;  // median seconds per call, when measured
  int samples = 0;
  std::string message;  // why it was excluded, when it was
};

struct CacheEntry {
  std::string key;       // workload bucket key + "@" + policy tag (accelerator.h)
  std::string workload;  // the bucket in words
  std::string example;   // describe() of the descriptor that was actually tuned
  CandidateId winner;
  double seconds = 0;    // the winner's median seconds per call (0 when not measured)
  bool complete = true;  // false when a budget ran out before every candidate was measured
  std::string tuned_at;  // UTC, ISO 8601
  std::vector<CachedCandidate> candidates;
};

// read_only: for tools that report on a cache (qforge-hwinfo): a damaged file is reported but
// left in place, and store()/clear() throw.
enum class CacheMode { read_write, read_only };

class QFORGE_API TuningCache {
 public:
  // $QFORGE_TUNING_CACHE, else $XDG_CACHE_HOME/qforge/tuning.json, else
  // $HOME/.cache/qforge/tuning.json. Throws ErrorCode::io when none of them is set.
  static std::filesystem::path default_path();

  // Reads the file now (a missing file is an empty cache).
  explicit TuningCache(std::filesystem::path path, CacheMode mode = CacheMode::read_write);
  ~TuningCache();
  TuningCache(const TuningCache&) = delete;
  TuningCache& operator=(const TuningCache&) = delete;

  const std::filesystem::path& path() const noexcept;

  // Re-reads the file under a shared lock.
  void reload();
  // The entry for `key` under this fingerprint in the last snapshot, if any.
  std::optional<CacheEntry> find(const HardwareFingerprint& fingerprint,
                                 std::string_view key) const;
  // Every entry under this fingerprint in the last snapshot, sorted by key.
  std::vector<CacheEntry> entries(const HardwareFingerprint& fingerprint) const;
  // Number of fingerprints (machines / plugin sets) the last snapshot holds.
  std::size_t machine_count() const;

  // Adds or replaces one entry: lock, re-read, merge, atomic write. Throws ErrorCode::io naming
  // the file and the system's reason when the directory cannot be created or written.
  void store(const HardwareFingerprint& fingerprint, const CacheEntry& entry);
  // Removes the file (and forgets the snapshot).
  void clear();

  // Warnings this object has issued (a corrupt file set aside, ...), oldest first. Each damaged
  // file is reported once.
  std::vector<std::string> warnings() const;

  // False when store() would refuse: opened read_only, or the file itself is read-only.
  bool writable() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Why `text` is not a tuning cache this qforge can use ("corrupt: ..." or "incompatible: ...",
// naming the field), or nullopt when it is. The check the cache runs on a file's contents,
// callable on arbitrary bytes (fuzzing); it throws nothing but std::bad_alloc.
QFORGE_API std::optional<std::string> tuning_cache_problem(std::string_view text);

}  // namespace qforge

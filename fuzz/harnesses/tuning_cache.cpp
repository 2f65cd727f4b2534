// The tuning cache file: any bytes give a usable cache (a damaged file is reported and treated
// as empty) or a qforge::Error. The harness reads the file as qforge-hwinfo does (read-only),
// looks up the fingerprint the seed corpus files its entries under, and, when the file was
// accepted, stores an entry into it as a tuning program would (re-read, merge, write). Any
// other exception, crash or sanitizer report is a finding.
#include "qforge/tuning_cache.h"

#include "qforge/error.h"
#include "scratch_file.h"

namespace {

// id() = 8984e6d9348bf786: the seeds in corpus/tuning_cache use it as their machine key.
const qforge::HardwareFingerprint kFingerprint{
    "fuzz cpu", {"avx2"}, {{"cpu_scalar", "1", {"cpu"}}}};
const qforge::CacheEntry kEntry{
    "key@fast", "workload", "example", {"cpu_scalar", 0, "k"}, 1e-6, true, "2024-01-01T00:00:00Z",
    {}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = qforge::fuzz::write_scratch("tuning.json", data, size);
  try {
    const qforge::TuningCache cache(file, qforge::CacheMode::read_only);
    cache.machine_count();
    cache.entries(kFingerprint);
    cache.find(kFingerprint, kEntry.key);
    if (cache.warnings().empty()) qforge::TuningCache(file).store(kFingerprint, kEntry);
  } catch (const qforge::Error&) {
  }
  return 0;
}

// .npz archives (zip, stored or deflated entries) as the qforge tool reads them
// (tools/qforge/data/zip_archive.h, dataset.h): the input is written to a scratch file, its
// entries listed, and every .npy entry read as samples and as labels in batches; anything may
// fail, but only with a qforge::Error.
#include <cstdint>
#include <string>

#include "data/dataset.h"
#include "data/npy.h"
#include "data/zip_archive.h"
#include "qforge/error.h"
#include "scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qforge::cli;
  const auto path = qforge::fuzz::write_scratch("input.npz", data, size);
  DataLimits limits;
  limits.max_total_bytes = std::uint64_t{16} << 20;
  limits.max_sample_bytes = std::uint64_t{16} << 20;
  limits.max_files = 64;
  try {
    for (const ZipEntry& e : list_zip(path, limits)) {
      if (e.name.size() < 4 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0) continue;
      for (DataRole role : {DataRole::samples, DataRole::labels}) {
        try {
          auto reader = DataReader::open(path.string() + ":" + e.name.substr(0, e.name.size() - 4),
                                         role, limits);
          while (reader->next(3)) {
          }
        } catch (const qforge::Error&) {
        }
      }
    }
  } catch (const qforge::Error&) {
  }
  return 0;
}

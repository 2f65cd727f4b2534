// IDX files (MNIST, Fashion-MNIST) as the qforge tool reads them once gunzipped
// (tools/qforge/data/idx.h): any bytes give a uint8 array whose shape accounts for every byte
// after the header, or a qforge::Error.
#include "data/idx.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "qforge/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qforge::cli;
  DataLimits limits;
  limits.max_total_bytes = std::uint64_t{16} << 20;
  try {
    auto in = memory_stream(std::as_bytes(std::span(data, size)), "fuzz input");
    const qforge::model::Tensor t = read_idx(*in, limits);
    const std::size_t header = 4 + 4 * t.shape().size();
    if (t.type() != qforge::model::ElementType::uint8 || header + t.byte_size() != size) {
      std::fprintf(stderr, "idx: accepted %zu bytes as a uint8 array of %zu bytes\n", size,
                   t.byte_size());
      std::abort();
    }
  } catch (const qforge::Error&) {
  }
  return 0;
}

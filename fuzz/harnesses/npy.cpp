// numpy .npy arrays as the qforge tool reads them (tools/qforge/data/npy.h): any bytes give an
// array or a qforge::Error. An accepted array must survive being written back: npy_bytes() of
// it parses to the same type, shape and bytes (abort otherwise).
#include "data/npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "qforge/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qforge::cli;
  // Small limits: a header may declare what the input then fails to hold, never more than this.
  DataLimits limits;
  limits.max_total_bytes = std::uint64_t{16} << 20;
  limits.max_sample_bytes = std::uint64_t{16} << 20;
  qforge::model::Tensor t;
  try {
    auto in = memory_stream(std::as_bytes(std::span(data, size)), "fuzz input");
    t = read_npy(*in, limits);
  } catch (const qforge::Error&) {
    return 0;
  }
  const std::string again = npy_bytes(t);
  try {
    auto in = memory_stream(std::as_bytes(std::span(again.data(), again.size())), "written back");
    const qforge::model::Tensor back = read_npy(*in, limits);
    if (back.tensor_type() != t.tensor_type() ||
        (t.byte_size() > 0 && std::memcmp(back.data(), t.data(), t.byte_size()) != 0)) {
      std::fprintf(stderr, "npy: the array written back reads differently\n");
      std::abort();
    }
  } catch (const qforge::Error& e) {
    std::fprintf(stderr, "npy: npy_bytes wrote an array read_npy rejects: %s\n", e.what());
    std::abort();
  }
  return 0;
}

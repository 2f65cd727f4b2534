#include "idx.h"

#include <array>

#include "qforge/error.h"

namespace qforge::cli {

StoredArray read_idx_header(ByteStream& in, const DataLimits& limits) {
  const std::string& source = in.name();
  std::array<std::byte, 4> magic{};
  read_exact(in, magic, "IDX magic");
  if (magic[0] != std::byte{0} || magic[1] != std::byte{0})
    throw Error(ErrorCode::corrupt_data,
                source + ": not an IDX file: the first two bytes are not zero");
  const int type = std::to_integer<int>(magic[2]);
  const int dims = std::to_integer<int>(magic[3]);
  if (type != 0x08) {
    const bool known = type == 0x09 || type == 0x0B || type == 0x0C || type == 0x0D || type == 0x0E;
    throw Error(
        known ? ErrorCode::unsupported : ErrorCode::corrupt_data,
        source + ": IDX type code 0x" +
            [&] {
              const char* hex = "0123456789abcdef";
              return std::string{hex[type >> 4], hex[type & 15]};
            }() +
            (known ? " is not supported" : " is not an IDX type") +
            "; expected 0x08 (unsigned byte, as MNIST and Fashion-MNIST use)");
  }
  if (dims < 1 || static_cast<std::size_t>(dims) > limits.max_rank)
    throw Error(ErrorCode::corrupt_data, source + ": the IDX header declares " +
                                             std::to_string(dims) + " dimensions; expected 1 to " +
                                             std::to_string(limits.max_rank));
  StoredArray a;
  a.type = model::ElementType::uint8;
  for (int i = 0; i < dims; ++i) {
    std::array<std::byte, 4> b{};
    read_exact(in, b, "IDX extents");
    std::int64_t v = 0;
    for (std::byte x : b) v = v << 8 | std::to_integer<std::int64_t>(x);
    a.shape.push_back(v);
  }
  check_stored_array(a, limits, source);
  if (const auto left = in.remaining(); left && *left != a.data_bytes)
    throw Error(ErrorCode::corrupt_data, source + ": the IDX header declares uint8" +
                                             to_string(a.shape) + " (" +
                                             std::to_string(a.data_bytes) + " bytes) but " +
                                             std::to_string(*left) + " bytes follow the header");
  return a;
}

model::Tensor read_idx(ByteStream& in, const DataLimits& limits) {
  const StoredArray a = read_idx_header(in, limits);
  model::Tensor t(a.type, a.shape);
  read_exact(in, std::span<std::byte>(t.data(), t.byte_size()), "the IDX elements");
  std::byte extra{};
  if (in.read(&extra, 1) != 0)
    throw Error(ErrorCode::corrupt_data, in.name() + ": data continues past the " +
                                             std::to_string(a.data_bytes) +
                                             " bytes the IDX header declares");
  return t;
}

}  // namespace qforge::cli

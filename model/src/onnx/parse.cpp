#include "onnx/parse.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>

#include "qforge/error.h"

namespace qforge::model::onnx_io {

std::vector<std::byte> read_file_limited(const std::filesystem::path& path,
                                         std::uint64_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw Error(ErrorCode::io, path.string() + ": cannot open (" +
                                   (ec ? ec.message() : std::string("no such file")) + ")");
  if (!std::filesystem::is_regular_file(status))
    throw Error(ErrorCode::io, path.string() + ": not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec)
    throw Error(ErrorCode::io, path.string() + ": cannot read its size (" + ec.message() + ")");
  if (size > max_bytes)
    throw Error(ErrorCode::invalid_argument, path.string() + ": " + std::to_string(size) +
                                                 " bytes is over the limit of " +
                                                 std::to_string(max_bytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, path.string() + ": cannot open for reading");
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size)
    throw Error(ErrorCode::io, path.string() + ": read " + std::to_string(in.gcount()) + " of " +
                                   std::to_string(size) + " bytes");
  return bytes;
}

void parse_limited(std::span<const std::byte> bytes, std::string_view source, std::string_view kind,
                   std::uint64_t max_bytes, google::protobuf::MessageLite& message) {
  // protobuf cannot address more than INT_MAX bytes in one message.
  const std::uint64_t limit = std::min<std::uint64_t>(max_bytes, std::numeric_limits<int>::max());
  if (bytes.size() > limit)
    throw Error(ErrorCode::invalid_argument,
                std::string(source) + ": " + std::to_string(bytes.size()) +
                    " bytes is over the limit of " + std::to_string(limit) + " bytes");
  if (bytes.empty())
    throw Error(ErrorCode::corrupt_data,
                std::string(source) + ": empty; expected an " + std::string(kind));
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(static_cast<int>(limit));
  if (!message.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage() ||
      stream.CurrentPosition() != static_cast<int>(bytes.size()))
    throw Error(ErrorCode::corrupt_data,
                std::string(source) + ": not a valid " + std::string(kind) +
                    " (protobuf parsing failed: the file is truncated, corrupt or of another "
                    "format)");
}

}  // namespace qforge::model::onnx_io

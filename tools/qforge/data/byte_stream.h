// Sequential byte sources for the data readers: a range of a regular file, a gzip (or plain)
// file through zlib, and memory (the fuzz harnesses); zip entries are in zip_archive.h. Data
// files are untrusted: every reader asks for exact counts through read_exact(), which names the
// source and what was being read when the bytes run out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace qforge::cli {

class ByteStream {
 public:
  explicit ByteStream(std::string name) : name_(std::move(name)) {}
  virtual ~ByteStream() = default;
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  // Reads up to n bytes into dst; fewer only at the end of the stream. Throws qforge::Error
  // (io or corrupt_data) naming the source when the underlying read or decompression fails.
  virtual std::size_t read(std::byte* dst, std::size_t n) = 0;
  // Bytes left, when the source knows it without reading (a file range); nullopt for compressed
  // streams, whose length shows only at their end.
  virtual std::optional<std::uint64_t> remaining() const { return std::nullopt; }
  // The source in messages: a path, "archive.npz:x.npy", "fuzz input".
  const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};

// Reads exactly dst.size() bytes or throws qforge::Error (corrupt_data) "<name>: truncated:
// <what> needs N bytes, only M left".
void read_exact(ByteStream& in, std::span<std::byte> dst, std::string_view what);

// Bytes [offset, offset + length) of a regular file (length nullopt: to its end). Throws
// qforge::Error (io) when the path is missing, unreadable or not a regular file.
std::unique_ptr<ByteStream> open_file_range(const std::filesystem::path& path,
                                            std::uint64_t offset = 0,
                                            std::optional<std::uint64_t> length = std::nullopt,
                                            std::string name = {});
// A gzip file, decompressed; a file without the gzip magic is read as it is (zlib's gzread).
std::unique_ptr<ByteStream> open_gzip_file(const std::filesystem::path& path);
// The bytes of `data`, which must outlive the stream.
std::unique_ptr<ByteStream> memory_stream(std::span<const std::byte> data, std::string name);

// True when the file starts with the gzip magic bytes 1f 8b.
bool is_gzip_file(const std::filesystem::path& path);

}  // namespace qforge::cli

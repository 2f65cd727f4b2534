#include "zip_archive.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <vector>

#include "qforge/error.h"

namespace qforge::cli {
namespace {

namespace fs = std::filesystem;

std::uint64_t le(std::span<const std::byte> b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | std::to_integer<std::uint64_t>(b[at + i]);
  return v;
}

std::vector<std::byte> read_range(const fs::path& path, std::uint64_t offset, std::uint64_t n,
                                  const std::string& what) {
  auto in = open_file_range(path, offset, n, path.string() + " (" + what + ")");
  std::vector<std::byte> out(static_cast<std::size_t>(n));
  read_exact(*in, out, what);
  return out;
}

[[noreturn]] void bad(const fs::path& path, const std::string& what) {
  throw Error(ErrorCode::corrupt_data, path.string() + ": not a valid zip archive: " + what);
}

bool signature(std::span<const std::byte> b, std::size_t at, std::uint32_t sig) {
  return at + 4 <= b.size() && le(b, at, 4) == sig;
}

}  // namespace

std::vector<ZipEntry> list_zip(const fs::path& path, const DataLimits& limits) {
  const std::uint64_t size = open_file_range(path)->remaining().value_or(0);
  constexpr std::uint64_t kEocd = 22;
  if (size < kEocd)
    bad(path, "it is " + std::to_string(size) + " bytes, shorter than a zip end record");
  const std::uint64_t tail_len = std::min<std::uint64_t>(size, kEocd + 0xffff);
  const auto tail = read_range(path, size - tail_len, tail_len, "end record");
  std::optional<std::size_t> eocd;
  for (std::size_t i = tail.size() - kEocd + 1; i-- > 0;)
    if (signature(tail, i, 0x06054b50)) {
      eocd = i;
      break;
    }
  if (!eocd) bad(path, "no end of central directory record (is it a .npz file?)");
  std::uint64_t entries = le(tail, *eocd + 10, 2);
  std::uint64_t cd_size = le(tail, *eocd + 12, 4);
  std::uint64_t cd_offset = le(tail, *eocd + 16, 4);
  if (entries == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
    // zip64: a locator just before the end record points at the zip64 end record.
    if (*eocd < 20 || !signature(tail, *eocd - 20, 0x07064b50))
      bad(path, "zip64 sizes without a zip64 locator");
    const std::uint64_t at = le(tail, *eocd - 20 + 8, 8);
    if (at > size || size - at < 56) bad(path, "the zip64 end record lies outside the file");
    const auto rec = read_range(path, at, 56, "zip64 end record");
    if (!signature(rec, 0, 0x06064b50)) bad(path, "bad zip64 end record signature");
    entries = le(rec, 32, 8);
    cd_size = le(rec, 40, 8);
    cd_offset = le(rec, 48, 8);
  }
  if (entries > limits.max_files)
    bad(path, std::to_string(entries) + " entries; at most " + std::to_string(limits.max_files) +
                  " are accepted");
  if (cd_offset > size || cd_size > size - cd_offset)
    bad(path, "the central directory lies outside the file");
  const auto cd = read_range(path, cd_offset, cd_size, "central directory");
  std::vector<ZipEntry> out;
  std::size_t p = 0;
  for (std::uint64_t i = 0; i < entries; ++i) {
    if (p + 46 > cd.size() || !signature(cd, p, 0x02014b50))
      bad(path,
          "central directory entry " + std::to_string(i) + " is truncated or has a bad signature");
    ZipEntry e;
    const auto flags = le(cd, p + 8, 2);
    e.method = static_cast<int>(le(cd, p + 10, 2));
    e.compressed_size = le(cd, p + 20, 4);
    e.uncompressed_size = le(cd, p + 24, 4);
    const std::size_t name_len = le(cd, p + 28, 2), extra_len = le(cd, p + 30, 2),
                      comment_len = le(cd, p + 32, 2);
    e.local_header_offset = le(cd, p + 42, 4);
    if (p + 46 + name_len + extra_len + comment_len > cd.size())
      bad(path, "central directory entry " + std::to_string(i) + " runs past the directory");
    e.name.assign(reinterpret_cast<const char*>(cd.data() + p + 46), name_len);
    if (flags & 1)
      throw Error(ErrorCode::unsupported, path.string() + ": entry '" + e.name +
                                              "' is encrypted; qforge reads plain entries");
    // The zip64 extra field holds, in this order, the sizes and offset that read 0xffffffff.
    std::size_t x = p + 46 + name_len;
    const std::size_t x_end = x + extra_len;
    while (x + 4 <= x_end) {
      const auto id = le(cd, x, 2), len = le(cd, x + 2, 2);
      if (x + 4 + len > x_end)
        bad(path, "entry '" + e.name + "': an extra field runs past its end");
      if (id == 1) {
        std::size_t f = x + 4;
        auto take = [&](std::uint64_t& v) {
          if (v != 0xffffffff) return;
          if (f + 8 > x + 4 + len) bad(path, "entry '" + e.name + "': short zip64 extra field");
          v = le(cd, f, 8);
          f += 8;
        };
        take(e.uncompressed_size);
        take(e.compressed_size);
        take(e.local_header_offset);
      }
      x += 4 + len;
    }
    out.push_back(std::move(e));
    p += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

std::unique_ptr<ByteStream> open_zip_entry(const fs::path& path, const ZipEntry& entry) {
  const std::string name = path.string() + ":" + entry.name;
  if (entry.method != 0 && entry.method != 8)
    throw Error(ErrorCode::unsupported,
                name + ": zip method " + std::to_string(entry.method) +
                    " is not supported; expected stored (numpy.savez) or deflate "
                    "(numpy.savez_compressed)");
  const auto local = read_range(path, entry.local_header_offset, 30, "local header");
  if (!signature(local, 0, 0x04034b50))
    bad(path, "entry '" + entry.name + "': bad local header signature");
  const std::uint64_t data = entry.local_header_offset + 30 + le(local, 26, 2) + le(local, 28, 2);
  if (entry.method == 0) {
    if (entry.compressed_size != entry.uncompressed_size)
      bad(path, "stored entry '" + entry.name + "' has different compressed and plain sizes");
    return open_file_range(path, data, entry.uncompressed_size, name);
  }
  return inflate_stream(open_file_range(path, data, entry.compressed_size, name),
                        entry.uncompressed_size, name);
}

}  // namespace qforge::cli

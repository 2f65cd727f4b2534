// Helpers of the qforge tool's tests: a temporary directory, files written from bytes, gzip
// (zlib) and zip archives as numpy's savez writes them (stored or deflated entries), and IDX
// bytes.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qforge::cli::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("qforge-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

inline void write_gzip(const std::filesystem::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + p.string());
  if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

inline std::string raw_deflate(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline void put(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A zip archive of (name, contents) entries, stored or deflated, as Python's zipfile writes it.
inline std::string zip_bytes(const std::vector<std::pair<std::string, std::string>>& entries,
                             bool deflate) {
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const std::string body = deflate ? raw_deflate(data) : data;
    const auto crc =
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    const std::uint64_t offset = out.size();
    const int method = deflate ? 8 : 0;
    put(out, 0x04034b50, 4);
    put(out, 20, 2), put(out, 0, 2), put(out, method, 2), put(out, 0, 4);
    put(out, crc, 4), put(out, body.size(), 4), put(out, data.size(), 4);
    put(out, name.size(), 2), put(out, 0, 2);
    out += name + body;
    put(central, 0x02014b50, 4);
    put(central, 20, 2), put(central, 20, 2), put(central, 0, 2), put(central, method, 2);
    put(central, 0, 4), put(central, crc, 4), put(central, body.size(), 4);
    put(central, data.size(), 4), put(central, name.size(), 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 4);
    put(central, offset, 4);
    central += name;
  }
  const std::uint64_t cd_offset = out.size();
  out += central;
  put(out, 0x06054b50, 4);
  put(out, 0, 2), put(out, 0, 2), put(out, entries.size(), 2), put(out, entries.size(), 2);
  put(out, central.size(), 4), put(out, cd_offset, 4), put(out, 0, 2);
  return out;
}

// IDX bytes: type 0x08, the extents big-endian, then `data`.
inline std::string idx_bytes(const std::vector<std::uint32_t>& dims, const std::string& data,
                             int type = 0x08) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int i = 3; i >= 0; --i) s += static_cast<char>((d >> (8 * i)) & 0xff);
  return s + data;
}

}  // namespace qforge::cli::test

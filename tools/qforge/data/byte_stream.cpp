#include "byte_stream.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "qforge/error.h"
#include "qforge/input_file.h"

namespace qforge::cli {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void io_error(const std::string& name, const std::string& what) {
  throw Error(ErrorCode::io, name + ": " + what);
}

// Only regular files: a FIFO or a device would block or never end.
void require_regular_file(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    io_error(path.string(), std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    io_error(path.string(),
             "is " + std::string(file_type_name(st.st_mode)) + "; expected a regular file");
}

class FileRange final : public ByteStream {
 public:
  FileRange(const fs::path& path, std::uint64_t offset, std::optional<std::uint64_t> length,
            std::string name)
      : ByteStream(name.empty() ? path.string() : std::move(name)) {
    require_regular_file(path);
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr)
      io_error(this->name(), std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fileno(file_), &st) != 0 || !S_ISREG(st.st_mode)) {
      std::fclose(file_);
      io_error(this->name(), "is not a regular file");
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (offset > size || (length && *length > size - offset)) {
      std::fclose(file_);
      throw Error(ErrorCode::corrupt_data,
                  this->name() + ": truncated: the data should span bytes " +
                      std::to_string(offset) + ".." + std::to_string(offset + length.value_or(0)) +
                      " but the file has " + std::to_string(size));
    }
    left_ = length.value_or(size - offset);
    if (::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0) {
      std::fclose(file_);
      io_error(this->name(), std::string("cannot seek: ") + std::strerror(errno));
    }
  }
  ~FileRange() override { std::fclose(file_); }

  std::size_t read(std::byte* dst, std::size_t n) override {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n, left_));
    const std::size_t got = want ? std::fread(dst, 1, want, file_) : 0;
    if (got < want && std::ferror(file_))
      io_error(name(), std::string("read failed: ") + std::strerror(errno));
    left_ -= got;
    return got;
  }
  std::optional<std::uint64_t> remaining() const override { return left_; }

 private:
  std::FILE* file_ = nullptr;
  std::uint64_t left_ = 0;
};

class GzipFile final : public ByteStream {
 public:
  explicit GzipFile(const fs::path& path) : ByteStream(path.string()) {
    require_regular_file(path);
    file_ = ::gzopen(path.c_str(), "rb");
    if (file_ == nullptr) io_error(name(), std::string("cannot open: ") + std::strerror(errno));
  }
  ~GzipFile() override { ::gzclose(file_); }

  std::size_t read(std::byte* dst, std::size_t n) override {
    std::size_t total = 0;
    while (total < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - total, 1u << 30));
      const int got = ::gzread(file_, dst + total, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = ::gzerror(file_, &code);
        throw Error(ErrorCode::corrupt_data,
                    name() + ": not valid gzip data (zlib: " + (msg ? msg : "unknown error") + ")");
      }
      if (got == 0) {
        // A gzip stream cut short reads as end of data; zlib flags it as Z_BUF_ERROR.
        int code = 0;
        ::gzerror(file_, &code);
        if (code == Z_BUF_ERROR)
          throw Error(ErrorCode::corrupt_data,
                      name() + ": truncated: the gzip stream ends before its end marker");
        break;
      }
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

 private:
  gzFile file_ = nullptr;
};

class Memory final : public ByteStream {
 public:
  Memory(std::span<const std::byte> data, std::string name)
      : ByteStream(std::move(name)), data_(data) {}
  std::size_t read(std::byte* dst, std::size_t n) override {
    const std::size_t k = std::min(n, data_.size() - pos_);
    if (k == 0) return 0;  // dst may be null (an empty tensor's data)
    std::memcpy(dst, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  std::optional<std::uint64_t> remaining() const override { return data_.size() - pos_; }

 private:
  std::span<const std::byte> data_;
  std::size_t pos_ = 0;
};

}  // namespace

void read_exact(ByteStream& in, std::span<std::byte> dst, std::string_view what) {
  if (dst.empty()) return;
  std::size_t total = 0;
  while (total < dst.size()) {
    const std::size_t got = in.read(dst.data() + total, dst.size() - total);
    if (got == 0) break;
    total += got;
  }
  if (total < dst.size())
    throw Error(ErrorCode::corrupt_data, in.name() + ": truncated: " + std::string(what) +
                                             " needs " + std::to_string(dst.size()) +
                                             " bytes, only " + std::to_string(total) + " left");
}

std::unique_ptr<ByteStream> open_file_range(const fs::path& path, std::uint64_t offset,
                                            std::optional<std::uint64_t> length, std::string name) {
  return std::make_unique<FileRange>(path, offset, length, std::move(name));
}

std::unique_ptr<ByteStream> open_gzip_file(const fs::path& path) {
  return std::make_unique<GzipFile>(path);
}

std::unique_ptr<ByteStream> memory_stream(std::span<const std::byte> data, std::string name) {
  return std::make_unique<Memory>(data, std::move(name));
}

bool is_gzip_file(const fs::path& path) {
  auto in = open_file_range(path);
  std::byte magic[2]{};
  return in->read(magic, 2) == 2 && magic[0] == std::byte{0x1f} && magic[1] == std::byte{0x8b};
}

}  // namespace qforge::cli

#include "zip_archive.h"

#include <zip.h>

#include "qforge/error.h"

namespace qforge::cli {
namespace {

namespace fs = std::filesystem;

struct ArchiveCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

struct FileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using EntryFile = std::unique_ptr<zip_file_t, FileCloser>;

std::string error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string text = zip_error_strerror(&e);
  zip_error_fini(&e);
  return text;
}

// ZIP_CHECKCONS: libzip compares the central directory with the local headers and the file's
// size, so an archive whose entries lie outside the file is refused here, not while reading.
Archive open_archive(const fs::path& path) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (z) return Archive(z);
  switch (code) {
    case ZIP_ER_NOENT:
    case ZIP_ER_OPEN:
    case ZIP_ER_READ:
    case ZIP_ER_MEMORY:
      throw Error(ErrorCode::io, path.string() + ": cannot open the archive: " + error_text(code));
    default:
      throw Error(ErrorCode::corrupt_data, path.string() + ": not a valid zip archive: " +
                                               error_text(code) + " (is it a .npz file?)");
  }
}

class ZipEntryStream final : public ByteStream {
 public:
  ZipEntryStream(Archive archive, EntryFile file, std::string name)
      : ByteStream(std::move(name)), archive_(std::move(archive)), file_(std::move(file)) {}
  ~ZipEntryStream() override { file_.reset(); }  // before the archive it reads from

  std::size_t read(std::byte* dst, std::size_t n) override {
    const zip_int64_t got = zip_fread(file_.get(), dst, n);
    if (got < 0)
      throw Error(ErrorCode::corrupt_data,
                  this->name() + ": " + zip_error_strerror(zip_file_get_error(file_.get())));
    return static_cast<std::size_t>(got);
  }

 private:
  Archive archive_;
  EntryFile file_;
};

}  // namespace

std::vector<ZipEntry> list_zip(const fs::path& path, const DataLimits& limits) {
  const Archive z = open_archive(path);
  const zip_int64_t count = zip_get_num_entries(z.get(), 0);
  if (count < 0) throw Error(ErrorCode::corrupt_data, path.string() + ": unreadable entry count");
  if (static_cast<std::uint64_t>(count) > limits.max_files)
    throw Error(ErrorCode::corrupt_data,
                path.string() + ": not a valid zip archive: " + std::to_string(count) +
                    " entries; at most " + std::to_string(limits.max_files) + " are accepted");
  std::vector<ZipEntry> out;
  for (zip_uint64_t i = 0; i < static_cast<zip_uint64_t>(count); ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), i, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
      throw Error(ErrorCode::corrupt_data,
                  path.string() + ": entry " + std::to_string(i) + ": " + zip_strerror(z.get()));
    ZipEntry e;
    e.name = st.name;
    e.index = i;
    e.method = (st.valid & ZIP_STAT_COMP_METHOD) ? st.comp_method : -1;
    e.uncompressed_size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
      throw Error(ErrorCode::unsupported, path.string() + ": entry '" + e.name +
                                              "' is encrypted; qforge reads plain entries");
    out.push_back(std::move(e));
  }
  return out;
}

std::unique_ptr<ByteStream> open_zip_entry(const fs::path& path, const ZipEntry& entry) {
  const std::string name = path.string() + ":" + entry.name;
  if (entry.method != ZIP_CM_STORE && entry.method != ZIP_CM_DEFLATE)
    throw Error(ErrorCode::unsupported,
                name + ": zip method " + std::to_string(entry.method) +
                    " is not supported; expected stored (numpy.savez) or deflate "
                    "(numpy.savez_compressed)");
  Archive z = open_archive(path);
  zip_file_t* f = zip_fopen_index(z.get(), entry.index, 0);
  if (!f) throw Error(ErrorCode::corrupt_data, name + ": " + zip_strerror(z.get()));
  return std::make_unique<ZipEntryStream>(std::move(z), EntryFile(f), name);
}

}  // namespace qforge::cli

#include "dataset.h"

#include <algorithm>
#include <cstring>

#include "idx.h"
#include "npy.h"
#include "qforge/error.h"
#include "zip_archive.h"

namespace qforge::cli {

namespace fs = std::filesystem;
using model::ElementType;
using model::Tensor;

struct DataReader::Part {
  enum class Kind { npy, idx, npz_entry } kind = Kind::npy;
  fs::path path;
  ZipEntry entry;  // npz_entry
  StoredArray array;

  std::unique_ptr<ByteStream> open(const DataLimits& limits, bool with_header_check = true) {
    std::unique_ptr<ByteStream> in;
    switch (kind) {
      case Kind::npy: in = open_file_range(path); break;
      case Kind::idx: in = open_gzip_file(path); break;
      case Kind::npz_entry: in = open_zip_entry(path, entry); break;
    }
    StoredArray a = kind == Kind::idx ? read_idx_header(*in, limits) : read_npy_header(*in, limits);
    if (with_header_check && (a.type != array.type || a.shape != array.shape))
      throw Error(ErrorCode::io, in->name() + ": changed while it was being read");
    array = a;
    return in;
  }
};

namespace {

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_idx_name(const std::string& name) {
  return name.find("idx") != std::string::npos || ends_with(name, ".gz");
}

std::string type_list(DataRole role) {
  return role == DataRole::samples ? "float32, float64 or uint8"
                                   : "int64, int32, int16, int8, uint8 or uint16";
}

bool convertible(ElementType t, DataRole role) {
  if (role == DataRole::samples)
    return t == ElementType::float32 || t == ElementType::float64 || t == ElementType::uint8;
  return t == ElementType::int64 || t == ElementType::int32 || t == ElementType::int16 ||
         t == ElementType::int8 || t == ElementType::uint8 || t == ElementType::uint16;
}

template <class From, class To>
void cast_into(const std::byte* src, To* dst, std::size_t n, float scale = 1.0f) {
  for (std::size_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    if constexpr (std::is_floating_point_v<To>) dst[i] = static_cast<To>(v) * scale;
    else dst[i] = static_cast<To>(v);
  }
}

void convert(ElementType from, const std::byte* src, Tensor& out, DataRole role) {
  const std::size_t n = static_cast<std::size_t>(out.size());
  if (n == 0) return;
  if (role == DataRole::samples) {
    float* d = out.values<float>().data();
    switch (from) {
      case ElementType::float32: std::memcpy(d, src, n * sizeof(float)); return;
      case ElementType::float64: return cast_into<double>(src, d, n);
      case ElementType::uint8: return cast_into<std::uint8_t>(src, d, n, 1.0f / 255.0f);
      default: break;
    }
  } else {
    std::int64_t* d = out.values<std::int64_t>().data();
    switch (from) {
      case ElementType::int64: std::memcpy(d, src, n * sizeof(std::int64_t)); return;
      case ElementType::int32: return cast_into<std::int32_t>(src, d, n);
      case ElementType::int16: return cast_into<std::int16_t>(src, d, n);
      case ElementType::int8: return cast_into<std::int8_t>(src, d, n);
      case ElementType::uint8: return cast_into<std::uint8_t>(src, d, n);
      case ElementType::uint16: return cast_into<std::uint16_t>(src, d, n);
      default: break;
    }
  }
  throw Error(ErrorCode::internal, "DataReader: unexpected element type");
}

// The converted shape of one sample of `a`, or an error naming `source`.
Shape sample_shape_of(const StoredArray& a, bool idx, DataRole role, const std::string& source) {
  if (a.shape.empty())
    throw Error(ErrorCode::invalid_argument,
                source + ": a 0-d array (a scalar); a data set needs samples along axis 0");
  if (!convertible(a.type, role))
    throw Error(ErrorCode::invalid_argument,
                source + ": " + std::string(to_string(a.type)) + " data cannot be " +
                    (role == DataRole::samples ? "model inputs" : "labels") + "; expected " +
                    type_list(role));
  if (role == DataRole::labels) {
    if (a.shape.size() == 1 || (a.shape.size() == 2 && a.shape[1] == 1)) return {};
    throw Error(ErrorCode::invalid_argument, source + ": labels of shape " + to_string(a.shape) +
                                                 "; expected [N] or [N, 1] class indices");
  }
  Shape s(a.shape.begin() + 1, a.shape.end());
  if (idx && s.size() == 2) s.insert(s.begin(), 1);  // [N, H, W] images -> NCHW
  return s;
}

}  // namespace

std::unique_ptr<DataReader> DataReader::open(const std::string& spec, DataRole role,
                                             const DataLimits& limits) {
  std::unique_ptr<DataReader> r(new DataReader);
  r->role_ = role;
  r->limits_ = limits;
  std::string path_text = spec, member;
  // ARCHIVE.npz:NAME selects one array; a plain path that exists wins over the split.
  if (const auto colon = spec.rfind(':');
      colon != std::string::npos && !fs::exists(spec) && ends_with(spec.substr(0, colon), ".npz")) {
    path_text = spec.substr(0, colon);
    member = spec.substr(colon + 1);
  }
  const fs::path path = path_text;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw Error(ErrorCode::io, path_text + ": no such file or directory");
  if (fs::is_directory(status)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".npy") {
        files.push_back(e.path());
        if (files.size() > limits.max_files)
          throw Error(
              ErrorCode::invalid_argument,
              path_text + ": more than " + std::to_string(limits.max_files) + " .npy files");
      }
    if (files.empty())
      throw Error(ErrorCode::invalid_argument, path_text + ": a directory without .npy files");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) r->parts_.push_back({Part::Kind::npy, f, {}, {}});
  } else if (ends_with(path_text, ".npz")) {
    const auto entries = list_zip(path, limits);
    std::vector<const ZipEntry*> arrays;
    for (const auto& e : entries)
      if (ends_with(e.name, ".npy")) arrays.push_back(&e);
    std::string names;
    for (const auto* e : arrays)
      names += (names.empty() ? "" : ", ") + e->name.substr(0, e->name.size() - 4);
    const ZipEntry* chosen = nullptr;
    if (!member.empty()) {
      for (const auto* e : arrays)
        if (e->name == member + ".npy") chosen = e;
      if (!chosen)
        throw Error(ErrorCode::invalid_argument,
                    path_text + ": no array '" + member +
                        "'; it holds: " + (names.empty() ? "nothing" : names));
    } else if (arrays.size() == 1) {
      chosen = arrays[0];
    } else {
      throw Error(ErrorCode::invalid_argument,
                  path_text + ": holds " + std::to_string(arrays.size()) + " arrays (" +
                      (names.empty() ? "none" : names) + "); name one as " + path_text + ":NAME");
    }
    r->parts_.push_back({Part::Kind::npz_entry, path, *chosen, {}});
  } else {
    r->parts_.push_back({ends_with(path_text, ".npy") || !is_idx_name(path.filename().string())
                             ? Part::Kind::npy
                             : Part::Kind::idx,
                         path,
                         {},
                         {}});
  }

  // Every part's header, checked against the first.
  std::string stored;
  for (std::size_t i = 0; i < r->parts_.size(); ++i) {
    Part& p = r->parts_[i];
    const std::string name =
        p.kind == Part::Kind::npz_entry ? path_text + ":" + p.entry.name : p.path.string();
    p.open(limits, /*with_header_check=*/false);
    const Shape s = sample_shape_of(p.array, p.kind == Part::Kind::idx, role, name);
    if (i == 0) {
      r->sample_shape_ = s;
      stored = (p.kind == Part::Kind::idx ? "IDX " : "") + std::string(to_string(p.array.type));
    } else if (s != r->sample_shape_ || p.array.type != r->parts_[0].array.type) {
      throw Error(ErrorCode::invalid_argument,
                  name + ": " + std::string(to_string(p.array.type)) + to_string(p.array.shape) +
                      " does not match " + r->parts_[0].path.filename().string() + "'s " +
                      std::string(to_string(r->parts_[0].array.type)) +
                      to_string(r->parts_[0].array.shape) +
                      "; the files of a directory are concatenated along axis 0");
    }
    if (p.array.shape[0] > std::numeric_limits<std::int64_t>::max() - r->count_)
      throw Error(ErrorCode::invalid_argument, path_text + ": too many samples");
    r->count_ += p.array.shape[0];
  }
  Shape full{r->count_};
  full.insert(full.end(), r->sample_shape_.begin(), r->sample_shape_.end());
  // "x.npy: float32[64, 784]", or with the conversion when there is one:
  // "t10k-images-idx3-ubyte.gz: IDX uint8 -> float32[10000, 1, 28, 28] / 255".
  const std::string converted = std::string(to_string(r->type())) + to_string(full);
  const bool same =
      stored == to_string(r->type()) && r->parts_[0].array.shape.size() == full.size();
  r->description_ =
      path.filename().string() + (member.empty() ? "" : ":" + member) + ": " +
      (same ? converted : stored + " -> " + converted) +
      (r->parts_[0].array.type == ElementType::uint8 && role == DataRole::samples ? " / 255" : "") +
      (r->parts_.size() > 1 ? " from " + std::to_string(r->parts_.size()) + " files" : "");
  return r;
}

DataReader::~DataReader() = default;

ElementType DataReader::type() const noexcept {
  return role_ == DataRole::samples ? ElementType::float32 : ElementType::int64;
}

void DataReader::open_current() {
  stream_ = parts_[current_].open(limits_);
  part_rows_left_ = parts_[current_].array.shape[0];
}

std::optional<Tensor> DataReader::next(std::int64_t rows) {
  if (rows < 1) throw Error(ErrorCode::invalid_argument, "DataReader: batch of fewer than 1 row");
  const std::int64_t k = std::min(rows, left());
  if (k == 0) return std::nullopt;
  Shape shape{k};
  shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
  Tensor out(type(), shape);
  const std::int64_t row_out = k == 0 ? 0 : out.size() / k;
  std::vector<std::byte> buffer;
  std::int64_t done = 0;
  while (done < k) {
    if (!stream_ || part_rows_left_ == 0) {
      if (stream_) {
        // The part must end where its header says (a gzip'd IDX file does not know its length).
        std::byte extra{};
        if (stream_->read(&extra, 1) != 0)
          throw Error(ErrorCode::corrupt_data, stream_->name() +
                                                   ": data continues past what the header "
                                                   "declares");
        ++current_;
      }
      open_current();
      continue;
    }
    const StoredArray& a = parts_[current_].array;
    const std::int64_t take = std::min(k - done, part_rows_left_);
    const std::size_t elements = static_cast<std::size_t>(take * row_elements(a));
    buffer.resize(elements * model::element_size(a.type));
    read_exact(*stream_, buffer, "the samples");
    Tensor chunk(type(), Shape{static_cast<std::int64_t>(elements)});
    convert(a.type, buffer.data(), chunk, role_);
    if (chunk.byte_size() > 0)
      std::memcpy(out.data() + done * row_out * model::element_size(type()), chunk.data(),
                  chunk.byte_size());
    done += take;
    part_rows_left_ -= take;
  }
  read_ += k;
  if (left() == 0 && stream_) {
    std::byte extra{};
    if (stream_->read(&extra, 1) != 0)
      throw Error(ErrorCode::corrupt_data,
                  stream_->name() + ": data continues past what the header declares");
    stream_.reset();
  }
  return out;
}

Tensor read_all(const std::string& spec, DataRole role, const DataLimits& limits) {
  auto r = DataReader::open(spec, role, limits);
  Shape shape{r->count()};
  shape.insert(shape.end(), r->sample_shape().begin(), r->sample_shape().end());
  if (r->count() == 0) return Tensor(r->type(), shape);
  model::checked_tensor_bytes(r->type(), shape, spec, limits.max_sample_bytes);
  return *r->next(r->count());
}

}  // namespace qforge::cli

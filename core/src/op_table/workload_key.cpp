// The generic parts of workload keys; each descriptor type encodes its own fields in its
// make_key overload (op_table/kinds/*.cpp, through key_builder.h).
#include "accelerator/workload_key.h"

#include <bit>
#include <cstdio>
#include <variant>

namespace qforge::accel {
namespace {

struct FromOpDesc {
  OpKind op;
  Residency r;
  template <class Desc>
  WorkloadKey operator()(const Desc& d) const noexcept {
    return make_key(op, d, r);
  }
};

}  // namespace

std::string WorkloadKey::hex() const {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return text;
}

int bucket_code(std::int64_t extent) noexcept {
  if (extent <= 0) return 0;
  return 1 + static_cast<int>(std::bit_width(static_cast<std::uint64_t>(extent - 1)));
}

std::int64_t bucket_extent(std::int64_t extent) noexcept {
  const int code = bucket_code(extent);
  return code == 0 ? 0 : std::int64_t{1} << (code - 1);
}

WorkloadKey make_key(const Workload& w) noexcept {
  return std::visit(FromOpDesc{w.op.op, w.residency}, w.op.desc);
}

}  // namespace qforge::accel

#include "scratchpad.h"

#include <unordered_map>

namespace qforge::onednn {

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void* Scratchpad::reserve(std::size_t bytes) {
  if (bytes > bytes_) {
    buffer_.reset(static_cast<std::byte*>(::operator new[](bytes, kAlignment)));
    bytes_ = bytes;
  }
  return buffer_.get();
}

void reorder_once(const dnnl::memory& src, const dnnl::memory& dst, dnnl::stream& stream) {
  const dnnl::reorder::primitive_desc pd(src, dst, user_scratchpad_attr());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  Scratchpad scratchpad;
  scratchpad.add_to(args, pd.scratchpad_desc(), src.get_engine());
  dnnl::reorder(pd).execute(stream, args);
  stream.wait();
}

}  // namespace qforge::onednn

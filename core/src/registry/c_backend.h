// One backend instance of a C plugin (qforge/plugin/c_api.h) and the QuantizationOps the host
// sees for it (c_backend_ops.cpp): every op runs through a plan of the plugin; the per-call ops
// use plans the adapter makes for the selected device and kernel and keeps per descriptor.
#pragma once

#include <boost/dll/shared_library.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "qforge/ops.h"
#include "qforge/plugin/c_api.h"

namespace qforge::detail {

// One backend instance of a C plugin. Plans and the adapter share it, so the instance is
// destroyed (and the library may be unloaded) only after the last plan.
struct CBackend {
  std::shared_ptr<boost::dll::shared_library> library;
  const qforge_c_plugin* table = nullptr;
  qforge_c_backend* backend = nullptr;
  std::string name;
  // The plugin may assume one thread at a time in its backend functions and in the runs of its
  // serialized plans (c_api.h).
  mutable std::mutex mutex;

  CBackend() = default;
  CBackend(const CBackend&) = delete;
  CBackend& operator=(const CBackend&) = delete;
  ~CBackend();

  // Turns a status into a qforge::Error carrying the plugin's code and message; releases it.
  void check(qforge_c_status* status, std::string_view call) const;
};

// The host's view of `backend`, which must hold a created instance.
std::shared_ptr<QuantizationOps> make_c_backend_ops(std::shared_ptr<CBackend> backend);

}  // namespace qforge::detail

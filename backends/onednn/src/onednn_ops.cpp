// Identity, devices, options, capability and kernel choice. The ops are in ops_*.cpp.
#include "onednn_ops.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <oneapi/dnnl/dnnl.hpp>

#include "qforge/error.h"
#include "qforge/hardware.h"
#include "threads.h"

namespace qforge::onednn {
namespace {

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size)
             : 0;
}

}  // namespace

OnednnOps::OnednnOps() : facts_(detect_facts()), reorder_(engine_.engine(), engine_.stream()) {}

Availability OnednnOps::availability() const {
  // oneDNN runs on any x86-64 CPU (its reference kernels need nothing), so the plugin is usable
  // everywhere it loads; above cpu_scalar (1) because its matmuls are far faster. Where its
  // int8 matmul would not be exact, supports() refuses the matmuls with the reason.
  return {true, 2, {}};
}

std::vector<DeviceInfo> OnednnOps::devices() const {
  const CpuInfo& cpu = cpu_info();
  DeviceInfo host;
  host.name = cpu.model.empty() ? "host CPU" : cpu.model;
  host.kind = "cpu";
  host.memory_bytes = physical_memory_bytes();
  host.properties["vendor"] = cpu.vendor;
  if (cpu.cores > 0) host.properties["cores"] = std::to_string(cpu.cores);
  const dnnl_version_t* v = dnnl::version();
  host.properties["onednn_version"] =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  host.properties["onednn_cpu_runtime"] = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other";
  host.properties["isa_used"] = effective_isa_name();
  const int threads = threads_ > 0 ? threads_ : default_threads();
  host.properties["threads_used"] = std::to_string(threads);
  // The threads a plan's run occupies (docs/PLUGINS.md, "Device properties"): OpenMP's team
  // is shared with every other OpenMP user of the process; the model layer keeps neighbouring
  // layers on one pool (docs/MODEL.md, "Thread pools").
  host.properties["thread_pool"] = threads <= 1                         ? "caller"
                                   : v->cpu_runtime == DNNL_RUNTIME_OMP ? "openmp"
                                                                        : "onednn";
  host.properties["int8_matmul"] =
      facts_.int8_exact ? "exact (VNNI/AMX)" : "refused: " + facts_.int8_refusal;
  host.properties["int8_conv"] =
      facts_.int8_exact ? "exact (VNNI/AMX)" : "refused: " + facts_.conv_refusal;
  host.properties["matmul_primitives"] = "entries=" + std::to_string(engine_.cached()) +
                                         " hits=" + std::to_string(engine_.hits()) +
                                         " misses=" + std::to_string(engine_.misses());
  host.properties["reorder_primitives"] = std::to_string(reorder_.cached());
  host.properties["conv_primitives"] = "entries=" + std::to_string(conv_engine_.cached()) +
                                       " hits=" + std::to_string(conv_engine_.hits()) +
                                       " misses=" + std::to_string(conv_engine_.misses());
  std::string kernels;
  for (const auto& k : all_kernels()) kernels += (kernels.empty() ? "" : ",") + k;
  host.properties["kernels"] = kernels;
  return {host};
}

bool OnednnOps::set_option(std::string_view key, std::string_view value) {
  if (key != "threads") return false;
  int n = -1;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 0)
    throw Error(ErrorCode::invalid_argument,
                "onednn: option threads = '" + std::string(value) +
                    "'; expected a whole number >= 0 (0 = OpenMP's default)");
  threads_ = n;
  return true;
}

Support OnednnOps::supports(const OpDesc& op, int device) const {
  if (device != 0)
    return Support::no("onednn: device " + std::to_string(device) + "; expected 0 (the host)");
  if (const auto* m = std::get_if<MatmulDesc>(&op.desc); m && m->a_params_at_run)
    return Support::no(
        "onednn: A's params given at run (a_params_at_run); expected them in the descriptor "
        "(onednn's primitives fix A's scale and zero point when made)");
  return check_support(op, facts_);
}

template <class Desc>
std::string OnednnOps::begin(OpKind op, const Desc& desc) {
  const Support s = check_support(op, desc, facts_);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  return s.kernels.front();
}
template std::string OnednnOps::begin(OpKind, const QuantizeDesc&);
template std::string OnednnOps::begin(OpKind, const RequantizeDesc&);
template std::string OnednnOps::begin(OpKind, const MatmulDesc&);
template std::string OnednnOps::begin(OpKind, const DynamicQuantizeDesc&);
template std::string OnednnOps::begin(OpKind, const LinearDesc&);
template std::string OnednnOps::begin(OpKind, const ConvDesc&);

}  // namespace qforge::onednn

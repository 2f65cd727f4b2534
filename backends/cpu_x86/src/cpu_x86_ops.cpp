// Identity, options, capability and kernel selection of the cpu_x86 backend.
#include "cpu_x86_ops.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "conv.h"
#include "descriptor_rules.h"
#include "qforge/error.h"
#include "qforge/hardware.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86 {
namespace {

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size)
             : 0;
}

// "0" or "default": one thread per core.
int parse_thread_count(std::string_view value, std::string_view source) {
  if (value == "default") return default_thread_count();
  int n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n < 0 || n > 1024)
    throw Error(ErrorCode::invalid_argument,
                "cpu_x86: " + std::string(source) + " = \"" + std::string(value) +
                    "\"; expected an integer in [1, 1024], or 0 / \"default\" for the number "
                    "of cores");
  return n == 0 ? default_thread_count() : n;
}

// QFORGE_CPU_X86_THREADS caps the pool where another runtime (PyTorch's OpenMP threads, say)
// shares the cores: two pools of one thread per core preempt each other's workers.
int threads_from_environment() {
  const char* env = std::getenv("QFORGE_CPU_X86_THREADS");
  return env ? parse_thread_count(env, "QFORGE_CPU_X86_THREADS") : default_thread_count();
}

// QFORGE_CPU_X86_SPIN_US and QFORGE_CPU_X86_YIELD_US: how long an idle worker polls, then
// polls yielding its core, before it sleeps (thread_pool.h, PollTimes).
std::chrono::microseconds microseconds_from_environment(const char* name,
                                                        std::chrono::microseconds fallback) {
  const char* env = std::getenv(name);
  if (!env) return fallback;
  const std::string_view value(env);
  long us = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), us);
  if (ec != std::errc{} || end != value.data() + value.size() || us < 0 || us > 1000000)
    throw Error(ErrorCode::invalid_argument,
                "cpu_x86: " + std::string(name) + " = \"" + std::string(value) +
                    "\"; expected microseconds, an integer in [0, 1000000]");
  return std::chrono::microseconds(us);
}

PollTimes poll_from_environment() {
  const PollTimes defaults;
  return {microseconds_from_environment("QFORGE_CPU_X86_SPIN_US", defaults.spin),
          microseconds_from_environment("QFORGE_CPU_X86_YIELD_US", defaults.yield)};
}

IsaSet allowed_from_environment() {
  const char* env = std::getenv("QFORGE_CPU_X86_ISA");
  return env ? parse_isa_list(env, "QFORGE_CPU_X86_ISA") : IsaSet::all();
}

// Whether B's dtype and scheme rule out -128 in the s8 domain, the one value that breaks the
// maddubs idiom: symmetric int8 (narrow range [-127, 127]) and uint8 ([1, 255], 1 - 128 =
// -127), and any 4-bit type. The packed weights are checked again, byte by byte.
bool scheme_avoids_min(const QuantizationParams& b) {
  if (b.dtype() == DType::int4 || b.dtype() == DType::uint4) return true;
  return b.scheme().mapping == Mapping::symmetric;
}

bool is_gemm_role(KernelRole r) {
  return r == KernelRole::gemm || r == KernelRole::gemv || r == KernelRole::gemm_block;
}

}  // namespace

CpuX86Ops::CpuX86Ops()
    : compiled_(compiled_isas()),
      detected_(detected_isas()),
      allowed_(allowed_from_environment()),
      poll_(poll_from_environment()),
      pool_(std::make_shared<ThreadPool>(threads_from_environment(), poll_)) {}

CpuX86Ops::~CpuX86Ops() = default;

Availability CpuX86Ops::availability() const {
  if (!detected_.has(Isa::avx2)) {
    const CpuInfo& cpu = cpu_info();
    return {false, 0,
            cpu.architecture.empty() || cpu.architecture == "x86_64"
                ? "CPU lacks AVX2 (cpu_x86 needs AVX2 and FMA)"
                : "CPU is " + cpu.architecture + ", not x86-64"};
  }
  // Above cpu_scalar (1); more for the int8 dot-product tiers this process may use.
  const IsaSet u = usable_isas();
  const int score = 10 + (u.has(Isa::avx_vnni) ? 5 : 0) + (u.has(Isa::avx512_vnni) ? 10 : 0) +
                    (u.has(Isa::amx_int8) ? 20 : 0);
  return {true, score, {}};
}

std::vector<DeviceInfo> CpuX86Ops::devices() const {
  const CpuInfo& cpu = cpu_info();
  DeviceInfo host;
  host.name = cpu.model.empty() ? "host CPU" : cpu.model;
  host.kind = "cpu";
  host.memory_bytes = physical_memory_bytes();
  host.properties["vendor"] = cpu.vendor;
  if (cpu.cores > 0) host.properties["cores"] = std::to_string(cpu.cores);
  host.properties["threads_used"] = std::to_string(threads());
  // The threads a plan's run occupies (docs/PLUGINS.md, "Device properties"): the model layer
  // keeps neighbouring layers on one pool (docs/MODEL.md, "Thread pools").
  host.properties["thread_pool"] = threads() > 1 ? "cpu_x86" : "caller";
  host.properties["isa_compiled"] = compiled_.to_string();
  host.properties["isa_detected"] = detected_.to_string();
  host.properties["isa_allowed"] = allowed_.to_string();
  host.properties["isa_used"] = usable_isas().to_string();
  // The kernels plans may ask for here (those the ISA tiers in use can run).
  std::string kernels;
  for (const KernelInfo& k : all_kernels())
    if (runnable(k)) kernels += (kernels.empty() ? "" : ",") + std::string(k.name);
  host.properties["kernels"] = kernels;
  return {host};
}

bool CpuX86Ops::set_option(std::string_view key, std::string_view value) {
  if (key == "threads") {
    const int want = parse_thread_count(value, "option threads");
    // A new pool rather than a resized one: plans made before keep running on theirs.
    if (want != threads()) pool_ = std::make_shared<ThreadPool>(want, poll_);
    return true;
  }
  if (key == "isa") {
    allowed_ = parse_isa_list(value, "option isa");
    return true;
  }
  if (key == "gemv_prefetch") {
    std::int64_t bytes = kDefaultGemvPrefetch;
    if (value != "default") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
      if (ec != std::errc{} || end != value.data() + value.size() || bytes < 0 || bytes > 65536)
        throw Error(ErrorCode::invalid_argument,
                    "cpu_x86: option gemv_prefetch = \"" + std::string(value) +
                        "\"; expected bytes in [0, 65536], or \"default\"");
    }
    gemv_prefetch_ = bytes;
    return true;
  }
  return false;
}

Support CpuX86Ops::supports(const OpDesc& op, int device) const {
  if (device != 0)
    return Support::no("cpu_x86: device " + std::to_string(device) + "; expected 0 (the host)");
  if (!detected_.has(Isa::avx2)) return Support::no("cpu_x86: " + availability().reason);
  try {
    const auto* m = std::get_if<MatmulDesc>(&op.desc);
    if (m && m->a_params_at_run) {
      // The flag's own rules, then cpu_x86's for the widest zero point a run may bring.
      reference::check_descriptor(op);
      check_descriptor(OpDesc{op.op, reference::a_params_at_run_bound(*m)});
    } else {
      check_descriptor(op);
    }
  } catch (const Error& e) {
    return Support::no(e.what());
  }
  std::vector<std::string> kernels;
  bool avoids_min = true;
  std::int64_t rows = 0;
  if (const auto* m = std::get_if<MatmulDesc>(&op.desc)) {
    avoids_min = scheme_avoids_min(m->b);
    rows = m->m;
  }
  if (const auto* l = std::get_if<LinearDesc>(&op.desc)) rows = l->m;
  auto add_role = [&](KernelRole role) {
    for (const KernelInfo& k : all_kernels())
      if (k.role == role && runnable(k) && (!k.needs_no_min || avoids_min) && rows >= k.min_rows)
        kernels.emplace_back(k.name);
  };
  switch (op.op) {
    case OpKind::quantize:
    case OpKind::dequantize:
      if (vector_quantize(std::get<QuantizeDesc>(op.desc)))
        add_role(op.op == OpKind::quantize ? KernelRole::quantize : KernelRole::dequantize);
      break;
    case OpKind::requantize:
      if (std::get<RequantizeDesc>(op.desc).mode == RequantMode::float_multiplier)
        add_role(KernelRole::requantize);
      break;
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      if (d.b.scheme().granularity == Granularity::block) add_role(KernelRole::gemm_block);
      else add_role(d.m <= 16 ? KernelRole::gemv : KernelRole::gemm);
      break;
    }
    case OpKind::dynamic_quantize_linear: add_role(KernelRole::dynamic_quantize); break;
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      if (vector_linear(d)) add_role(d.m <= 16 ? KernelRole::gemv : KernelRole::gemm);
      break;
    }
    case OpKind::linear_backward: break;
    case OpKind::matmul_weight_only: add_role(KernelRole::weight_only); break;
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d = std::get<ConvDesc>(op.desc);
      const bool implicit = implicit_first(d);
      if (implicit) kernels.emplace_back(kAmxImplicitConv);
      if (conv_small_k_preferred(d)) add_role(KernelRole::conv_small_k);
      if (conv_depthwise_direct(d)) add_role(KernelRole::conv_depthwise);
      avoids_min = scheme_avoids_min(d.w_params);
      rows = d.out_h() * d.out_w();
      add_role(rows <= 16 ? KernelRole::gemv : KernelRole::gemm);
      if (conv_small_k_direct(d) && !conv_small_k_preferred(d)) add_role(KernelRole::conv_small_k);
      // The AMX kernel where it was not preferred (fewer than 16 channels), then its emulation.
      if (conv_implicit_direct(d))
        for (const KernelInfo& k : all_kernels())
          if (k.role == KernelRole::conv_implicit && runnable(k) &&
              !(implicit && k.name == kAmxImplicitConv))
            kernels.emplace_back(k.name);
      break;
    }
  }
  const bool matmul = op.op == OpKind::matmul_integer || op.op == OpKind::matmul_dequant ||
                      op.op == OpKind::qlinear_matmul;
  // The matmuls always have a vector kernel (maddwd needs only AVX2); everything else can also
  // run the reference.
  if (!matmul) kernels.emplace_back(kReferenceKernel);
  return Support::yes(std::move(kernels));
}

const KernelInfo& CpuX86Ops::elementwise_kernel(KernelRole role, bool vector_ok) const {
  if (vector_ok)
    for (const KernelInfo& k : all_kernels())
      if (k.role == role && runnable(k)) return k;
  return *find_kernel(kReferenceKernel);
}

const KernelInfo& CpuX86Ops::gemm_kernel(const MatmulDesc& desc, const X86PackedWeights& b,
                                         OpKind op, std::string_view forced) const {
  const KernelRole role = b.blocks.blocked ? KernelRole::gemm_block
                          : desc.m <= 16   ? KernelRole::gemv
                                           : KernelRole::gemm;
  if (!forced.empty()) {
    const KernelInfo& k = *find_kernel(forced);
    // A forced GEMM kernel of the other M range still computes the same thing: allow gemm and
    // gemv kernels for either, but block-wise weights need a block kernel and vice versa.
    const bool role_ok = is_gemm_role(k.role) &&
                         (k.role == KernelRole::gemm_block) == (role == KernelRole::gemm_block);
    if (!role_ok)
      throw Error(ErrorCode::unsupported,
                  "cpu_x86: the forced kernel '" + std::string(forced) + "' cannot run " +
                      std::string(to_string(op)) + " with " +
                      (b.blocks.blocked ? "block-wise" : "per-tensor/per-channel") +
                      " weights; expected a " +
                      (b.blocks.blocked ? "q8_qbw_" : "q8_gemm_/q8_gemv_") + " kernel");
    // maddubs would saturate on these weights: the exact kernel of the same role runs instead
    // and the plan names it (supports() lists maddubs only for schemes without -128).
    return exact_for_weights(k, b.holds_min);
  }
  for (const KernelInfo& k : all_kernels())
    if (k.role == role && runnable(k) && !(k.needs_no_min && b.holds_min) && desc.m >= k.min_rows)
      return k;
  throw Error(ErrorCode::internal,
              "cpu_x86: no GEMM kernel for role; the maddwd kernel needs only AVX2");
}

}  // namespace qforge::cpu_x86

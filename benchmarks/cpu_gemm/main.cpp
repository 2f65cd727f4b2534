// qforge_bench_cpu_gemm: the issue-4 CPU benchmarks. Loads cpu_x86 (and onednn when present)
// through the plugin registry, as users do, and prints GEMM GOPS and quantize/dequantize GB/s
// with their ratios to the anchors measured in the same run, what a GEMM call costs through
// cpu_x86's per-call ops and its plans, then a short summary table.
//
//   qforge_bench_cpu_gemm [--quick] [--threads N] [--min-time S] [--isa LIST] [--only
//   gemm|plan|quant|weight_only|conv]   (conv runs only when asked: cpu_scalar's reference takes
//   seconds)
//                         [--shape MxNxK]...   (only these GEMM shapes, no int4 rows)
//                         [--x86-option KEY=VALUE]...   (cpu_x86 set_option, e.g. gemv_prefetch=0)
//                         [--conv-filter TEXT]   (only the conv rows whose name contains it, or one
//                                                of its '|'-separated texts)
//                         [--cpu-clock]   (process CPU time instead of wall time: with
//                         --threads 1 and OPENBLAS_NUM_THREADS=1, on a shared machine)
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bench.h"
#include "qforge/hardware.h"
#include "qforge/registry.h"
#include "timing.h"

int main(int argc, char** argv) {
  using namespace qforge;
  bench::Options opt;
  std::string only;
  std::vector<std::pair<std::string, std::string>> x86_options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--quick") opt.quick = true;
    else if (arg == "--threads") opt.threads = std::stoi(next());
    else if (arg == "--min-time") opt.min_time_s = std::stod(next());
    else if (arg == "--isa") opt.isa = next();
    else if (arg == "--only") only = next();
    else if (arg == "--cpu-clock") bench::use_cpu_clock(true);
    else if (arg == "--conv-filter") opt.conv_filter = next();
    else if (arg == "--x86-option") {
      const std::string v = next();
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::fprintf(stderr, "--x86-option %s: expected KEY=VALUE\n", v.c_str());
        return 2;
      }
      x86_options.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (arg == "--shape") {
      const std::string v = next();
      long long m = 0, n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(v.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 ||
          k < 1) {
        std::fprintf(stderr,
                     "--shape %s: expected MxNxK with positive sizes, e.g. 1024x1024x1024\n",
                     v.c_str());
        return 2;
      }
      opt.shapes.push_back({m, n, k});
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--threads N] [--min-time S] [--isa LIST] [--only "
                   "gemm|plan|quant|weight_only|conv] [--conv-filter TEXT] [--cpu-clock] "
                   "[--shape MxNxK]... [--x86-option KEY=VALUE]...\n",
                   argv[0]);
      return 2;
    }
  }
  PluginRegistry registry;
  registry.load_default();
  QuantizationOps* x86 = registry.find("cpu_x86");
  if (!x86 || !x86->availability().usable) {
    std::fprintf(stderr, "cpu_x86 is not available: %s\n",
                 x86 ? x86->availability().reason.c_str() : "plugin not found on the search path");
    return 1;
  }
  QuantizationOps* onednn = registry.find("onednn");
  if (onednn && !onednn->availability().usable) onednn = nullptr;
  for (QuantizationOps* ops : {x86, onednn})
    if (ops && opt.threads > 0) ops->set_option("threads", std::to_string(opt.threads));
  if (!opt.isa.empty()) x86->set_option("isa", opt.isa);
  for (const auto& [key, value] : x86_options)
    if (!x86->set_option(key, value)) {
      std::fprintf(stderr, "cpu_x86 has no option '%s'\n", key.c_str());
      return 2;
    }

  const CpuInfo& cpu = cpu_info();
  const auto props = x86->devices()[0].properties;
  std::printf(
      "machine: %s, %d cores; cpu_x86 threads %s, ISA %s; onednn plugin %s; OpenBLAS core %s\n",
      cpu.model.c_str(), cpu.cores, props.at("threads_used").c_str(), props.at("isa_used").c_str(),
      onednn ? "loaded" : "not found", openblas_get_corename());
  std::vector<std::string> table;
  if (only.empty() || only == "gemm")
    for (auto& line : bench::run_gemm_benchmarks(*x86, onednn, opt)) table.push_back(line);
  if (only.empty() || only == "plan") {
    if (!table.empty()) table.emplace_back();
    for (auto& line : bench::run_plan_benchmarks(*x86, opt)) table.push_back(line);
  }
  if (only.empty() || only == "weight_only") {
    table.emplace_back();
    for (auto& line : bench::run_weight_only_benchmarks(*x86, opt)) table.push_back(line);
  }
  if (only == "conv") {
    QuantizationOps* scalar = registry.find("cpu_scalar");
    for (auto& line : bench::run_conv_benchmarks(*x86, onednn, scalar, opt)) table.push_back(line);
  }
  if (only.empty() || only == "quant") {
    table.emplace_back();
    for (auto& line : bench::run_quant_benchmarks(*x86, onednn, opt)) table.push_back(line);
  }
  std::printf("\n");
  for (const auto& line : table) std::printf("%s\n", line.c_str());
  return 0;
}

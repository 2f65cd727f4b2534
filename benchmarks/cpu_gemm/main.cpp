// qforge_bench_cpu_gemm: the issue-4 CPU benchmarks. Loads cpu_x86 (and onednn when present)
// through the plugin registry, as users do, and prints GEMM GOPS and quantize/dequantize GB/s
// with their ratios to the anchors measured in the same run, then a short summary table.
//
//   qforge_bench_cpu_gemm [--quick] [--threads N] [--min-time S] [--isa LIST] [--only gemm|quant]
//                         [--shape MxNxK]...   (only these GEMM shapes, no int4 rows)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench.h"
#include "qforge/hardware.h"
#include "qforge/registry.h"

int main(int argc, char** argv) {
  using namespace qforge;
  bench::Options opt;
  std::string only;
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
    else if (arg == "--shape") {
      const std::string v = next();
      long long m = 0, n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(v.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1) {
        std::fprintf(stderr, "--shape %s: expected MxNxK with positive sizes, e.g. 1024x1024x1024\n", v.c_str());
        return 2;
      }
      opt.shapes.push_back({m, n, k});
    }
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--threads N] [--min-time S] [--isa LIST] [--only gemm|quant] "
                   "[--shape MxNxK]...\n",
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

  const CpuInfo& cpu = cpu_info();
  const auto props = x86->devices()[0].properties;
  std::printf("machine: %s, %d cores; cpu_x86 threads %s, ISA %s; onednn plugin %s\n", cpu.model.c_str(),
              cpu.cores, props.at("threads_used").c_str(), props.at("isa_used").c_str(),
              onednn ? "loaded" : "not found");
  std::vector<std::string> table;
  if (only.empty() || only == "gemm")
    for (auto& line : bench::run_gemm_benchmarks(*x86, onednn, opt)) table.push_back(line);
  if (only.empty() || only == "quant") {
    table.emplace_back();
    for (auto& line : bench::run_quant_benchmarks(*x86, onednn, opt)) table.push_back(line);
  }
  std::printf("\n");
  for (const auto& line : table) std::printf("%s\n", line.c_str());
  return 0;
}

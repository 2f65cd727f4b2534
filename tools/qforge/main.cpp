// qforge: the command-line tool. `quantize`, `run`, `eval` and `export-c` work on ONNX models and
// data files (docs/CLI.md); `hwinfo` and `bench` are the qforge-hwinfo and qforge-bench tools as
// subcommands, sharing their code (both executables still exist).
//
// Exit status: 0 on success, 2 for bad usage (CLI11's own codes are not passed on), 1 when the
// command fails (a qforge::Error: its message is printed, prefixed with the subcommand).
// `qforge bench` keeps qforge-bench's statuses: 1 when a workload could not be decided, 2 for
// errors. `qforge hwinfo` exits 0 even when plugins fail to load, as qforge-hwinfo does.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "eval_command.h"
#include "export_c_command.h"
#include "hwinfo_command.h"
#include "quantize_command.h"
#include "run_command.h"
#ifdef QFORGE_CLI_HAVE_BENCH
#include "bench_command.h"
#endif

int main(int argc, char** argv) {
  // OpenBLAS's idle threads spin (sched_yield) for 2^28 cycles, about a tenth of a second, after
  // every threaded call before they sleep: between a model's layers and batches that spinning
  // takes the cores the executor's and the plugins' threads need (a fifth of a short `qforge
  // quantize` on two cores). 2^20 cycles (well under a millisecond) bridges the gap between
  // calls of one layer. OpenBLAS reads it when it loads, which is at the first sgemm
  // (blas/openblas_loader.cpp); a value the user set is kept.
  setenv("OPENBLAS_THREAD_TIMEOUT", "20", /*overwrite=*/0);
  // The onednn plugin's OpenMP threads (libgomp) spin 300 000 rounds, a fraction of a
  // millisecond, at the end of every parallel region. When the tuner gives one small op of a
  // model to onednn (the int8 MLP's last Gemm, say), that spinning runs into the next layers on
  // cpu_x86's and the executor's threads: on two cores it tripled the CPU time of the int8 MLP.
  // 10 000 rounds (tens of microseconds) still bridge the regions of one onednn call. libgomp
  // reads it when the plugin loads it; a wait policy or spin count the user set is kept.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
  CLI::App app{
      "qforge: quantize ONNX models, run and evaluate them, and report what this "
      "machine's plugins can do"};
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  qforge quantize mlp.onnx --recipe int8.json --calibration train.npy --report r.json\n"
      "  qforge run mlp.onnx --input x=images.npy --output-dir out\n"
      "  qforge eval mlp.onnx --data test.npy --labels labels.npy --recipe int8.json "
      "--calibration train.npy\n"
      "  qforge export-c cnn.onnx --calibration train.npy -o cnn_c\n"
      "  qforge hwinfo --verbose\n"
      "  qforge bench --suite quick\n"
      "\n'qforge SUBCOMMAND --help' gives each subcommand's options and examples.");

  qforge::cli::QuantizeCommand quantize;
  qforge::cli::RunCommand run;
  qforge::cli::EvalCommand eval;
  qforge::cli::ExportCCommand export_c;
  qforge::hwinfo::HwinfoCommand hwinfo;
  CLI::App* quantize_app = quantize.add_to(app);
  CLI::App* run_app = run.add_to(app);
  CLI::App* eval_app = eval.add_to(app);
  CLI::App* export_c_app = export_c.add_to(app);
  CLI::App* hwinfo_app = app.add_subcommand(
      "hwinfo",
      "The CPU, every qforge plugin found (or why it failed to load), its devices and per-op "
      "capabilities (as qforge-hwinfo)");
  hwinfo.add_options(*hwinfo_app);
  hwinfo_app->footer(
      "Examples:\n  qforge hwinfo\n  qforge hwinfo --op matmul_dequant\n"
      "  qforge hwinfo --json > hw.json");
  CLI::App* bench_app = nullptr;
#ifdef QFORGE_CLI_HAVE_BENCH
  qforge::bench::BenchCommand bench;
  bench_app = app.add_subcommand(
      "bench",
      "Tune a suite of workloads across every loaded plugin and report each candidate's time, "
      "the winner and its speed-ups (as qforge-bench)");
  bench.add_options(*bench_app);
  bench_app->footer(
      "Examples:\n  qforge bench --suite quick\n  qforge bench --list\n"
      "  qforge bench --workloads my.json --plugins cpu_x86,onednn --out-dir out");
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int shown = app.exit(e);
    return shown == 0 ? 0 : 2;
  }

  CLI::App* chosen = app.get_subcommands().front();
  try {
    if (chosen == quantize_app) return quantize.run();
    if (chosen == run_app) return run.run();
    if (chosen == eval_app) return eval.run();
    if (chosen == export_c_app) return export_c.run();
    if (chosen == hwinfo_app) return hwinfo.run();
#ifdef QFORGE_CLI_HAVE_BENCH
    if (chosen == bench_app) return bench.run();
#endif
  } catch (const std::exception& e) {
    std::cerr << "qforge " << chosen->get_name() << ": " << e.what() << "\n";
    return chosen == bench_app ? 2 : 1;
  }
  return 2;
}

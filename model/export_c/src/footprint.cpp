// measure_footprint: flash and RAM of an export from the compiler's own output (`size` of the
// objects, and gcc's -fstack-usage for the frames), not from estimates.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "qforge/model/export_c.h"

namespace qforge::model {
namespace {

int run(const std::string& command) { return std::system(command.c_str()); }

// Frames by function name from every .su file in `dir` ("model.c:12:6:model_run\t16\tstatic").
std::map<std::string, std::int64_t> stack_frames(const std::filesystem::path& dir) {
  std::map<std::string, std::int64_t> frames;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".su") continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string where;
      std::int64_t bytes = 0;
      if (!(fields >> where >> bytes)) continue;
      frames[where.substr(where.rfind(':') + 1)] = bytes;
    }
  }
  return frames;
}

}  // namespace

std::optional<CFootprint> measure_footprint(const std::filesystem::path& dir,
                                            const std::string& compiler) {
  std::random_device rd;
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() /
      ("qforge-footprint-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(tmp);
  const std::string d = dir.string(), t = tmp.string();
  CFootprint f;
  std::string compile = "cd '" + t + "' && " + compiler + " -std=c99 -Os -c '" + d + "/model.c' '" +
                        d + "/weights.c' '" + d + "/qforge_nn_int8.c'";
  bool stack = run(compile + " -fstack-usage > /dev/null 2>&1") == 0;
  if (!stack && run(compile + " > /dev/null 2>&1") != 0) {
    std::filesystem::remove_all(tmp);
    return std::nullopt;
  }
  f.command = compiler + " -std=c99 -Os -c" + (stack ? " -fstack-usage" : "") +
              " model.c weights.c qforge_nn_int8.c; size -t model.o weights.o qforge_nn_int8.o";
  const std::string size_out = t + "/size.txt";
  if (run("cd '" + t + "' && size -t model.o weights.o qforge_nn_int8.o > size.txt 2>/dev/null") !=
      0) {
    std::filesystem::remove_all(tmp);
    return std::nullopt;
  }
  std::ifstream in(size_out);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;  // "   text    data     bss     dec     hex (TOTALS)"
  std::istringstream totals(last);
  totals >> f.text_bytes >> f.data_bytes >> f.bss_bytes;
  if (stack) {
    // The deepest chain: model_run -> model_run_arena -> a kernel -> qf_requantize ->
    // its two helpers (and the clamp), each counted with its own frame.
    const auto frames = stack_frames(tmp);
    const auto frame = [&](const std::string& name) {
      const auto it = frames.find(name);
      return it == frames.end() ? std::int64_t{0} : it->second;
    };
    std::int64_t kernel = 0;
    for (const char* k : {"qf_conv2d_s8", "qf_dense_s8", "qf_maxpool_s8", "qf_avgpool_s8",
                          "qf_quantize_f32", "qf_dequantize_f32"})
      kernel = std::max(kernel, frame(k));
    f.stack_bytes = frame("model_run") + frame("model_run_arena") + kernel +
                    frame("qf_requantize") + frame("qf_high_mul") + frame("qf_divide_by_pot") +
                    frame("qf_clamp32");
  }
  std::filesystem::remove_all(tmp);
  return f;
}

}  // namespace qforge::model

// measure_footprint: flash and RAM of an export from the compiler's own output (`size` of the
// objects, and gcc's -fstack-usage for the frames), not from estimates.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <vector>

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
  // The int16 kernels come with the int8 file, whose pool parameters and requantization they use.
  std::vector<std::string> units = {"model", "weights", "qforge_nn_int8"};
  if (std::filesystem::exists(dir / "qforge_nn_int16.c")) units.push_back("qforge_nn_int16");
  std::string sources, objects, names;
  for (const std::string& u : units) {
    sources += " '" + d + "/" + u + ".c'";
    objects += " " + u + ".o";
    names += " " + u + ".c";
  }
  std::string compile = "cd '" + t + "' && " + compiler + " -std=c99 -Os -c" + sources;
  bool stack = run(compile + " -fstack-usage > /dev/null 2>&1") == 0;
  if (!stack && run(compile + " > /dev/null 2>&1") != 0) {
    std::filesystem::remove_all(tmp);
    return std::nullopt;
  }
  f.command = compiler + " -std=c99 -Os -c" + (stack ? " -fstack-usage" : "") + names +
              "; size -t" + objects;
  const std::string size_out = t + "/size.txt";
  if (run("cd '" + t + "' && size -t" + objects + " > size.txt 2>/dev/null") != 0) {
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
                          "qf_quantize_f32", "qf_dequantize_f32", "qf_conv2d_s16", "qf_dense_s16",
                          "qf_maxpool_s16", "qf_avgpool_s16", "qf_add_s16", "qf_quantize_f32_s16"})
      kernel = std::max(kernel, frame(k));
    // The deeper of the two requantizations below a kernel (32-bit with its helpers, or int64).
    const std::int64_t requant =
        std::max(frame("qf_requantize") + frame("qf_high_mul") + frame("qf_divide_by_pot") +
                     frame("qf_clamp32"),
                 frame("qf_requantize_s64") + frame("qf_floor_pot64") + frame("qf_sat16"));
    f.stack_bytes = frame("model_run") + frame("model_run_arena") + kernel + requant;
  }
  std::filesystem::remove_all(tmp);
  return f;
}

}  // namespace qforge::model

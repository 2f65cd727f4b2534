#include "tool_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <stdexcept>

namespace qforge::test {

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

ToolRun run_hwinfo(const std::string& args, bool merge_stderr) {
  const std::string command =
      shell_quote(QFORGE_HWINFO_EXE) + " " + args + (merge_stderr ? " 2>&1" : "");
  ToolRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed for: " + command);
  std::array<char, 4096> chunk{};
  std::size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0)
    run.output.append(chunk.data(), n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

nlohmann::ordered_json run_hwinfo_json(const std::string& args) {
  const ToolRun run = run_hwinfo("--json " + args);
  EXPECT_EQ(run.exit_code, 0) << "qforge-hwinfo --json " << args;
  try {
    return nlohmann::ordered_json::parse(run.output);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    ADD_FAILURE() << "qforge-hwinfo --json " << args << " printed something that is not one JSON "
                  << "document (" << e.what() << "):\n"
                  << run.output;
    return nlohmann::ordered_json::object();
  }
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("qforge-hwinfo-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace qforge::test

// Runs qforge-hwinfo as a child process and captures what it prints, so the tests see exactly
// what a user sees (and check that --json writes nothing but the document to stdout).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace qforge::test {

struct ToolRun {
  int exit_code = -1;  // -1 when the tool did not exit normally
  std::string output;
};

// `args` is appended to the command line as is (quote paths with shell_quote).
// With merge_stderr, stderr is captured too; otherwise it passes through to the test's log.
ToolRun run_hwinfo(const std::string& args, bool merge_stderr = false);

// Runs with --json (plus `args`) and parses stdout, keeping key order; a parse failure fails
// the calling test with the text that did not parse.
nlohmann::ordered_json run_hwinfo_json(const std::string& args = "");

std::string shell_quote(const std::string& text);

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace qforge::test

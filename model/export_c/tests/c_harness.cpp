#include "c_harness.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace qforge::model::testing {

std::optional<std::string> c_compiler() {
  const char* env = std::getenv("CC");
  const std::string cc = env && *env ? env : "cc";
  if (std::system((cc + " --version > /dev/null 2>&1").c_str()) != 0) return std::nullopt;
  return cc;
}

// Whether `compiler -m32` builds and runs a program here (gcc-multilib on x86-64).
bool builds_32_bit(const std::string& compiler) {
  const auto exe =
      std::filesystem::temp_directory_path() / ("qforge-m32-probe-" + std::to_string(::getpid()));
  const std::string cmd = "printf 'int main(void) { return sizeof(void *) == 4 ? 0 : 1; }\\n' | " +
                          compiler + " -m32 -x c - -o " + exe.string() + " > /dev/null 2>&1 && " +
                          exe.string();
  const bool ok = std::system(cmd.c_str()) == 0;
  std::error_code ec;
  std::filesystem::remove(exe, ec);
  return ok;
}

std::vector<std::string> c_compilers() {
  std::vector<std::string> all;
  const auto cc = c_compiler();
  if (cc) all.push_back(*cc);
  if (std::system("clang --version > /dev/null 2>&1") == 0 &&
      (all.empty() || all.front() != "clang"))
    all.push_back("clang");
  // A 32-bit target, where int and pointers are 32 bits wide: the export promises fixed-width
  // types only.
  if (cc && builds_32_bit(*cc)) all.push_back(*cc + " -m32");
  return all;
}

CompiledModel::CompiledModel(const CExport& c, const std::string& compiler) {
  std::random_device rd;
  dir_ = std::filesystem::temp_directory_path() /
         ("qforge-export-c-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  write_c_export(c, dir_);
  output_size_ = c.report.output_size;
  const std::string d = dir_.string();
  const std::string cmd = compiler +
                          " -std=c99 -O1 -ffp-contract=off -Wall -Wextra -Wpedantic -Werror " + d +
                          "/*.c -o " + d + "/model > " + d + "/cc.log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(d + "/cc.log");
    ADD_FAILURE() << "the exported C did not compile (" << cmd << "):\n"
                  << std::string(std::istreambuf_iterator<char>(log), {});
    return;
  }
  ok_ = true;
}

CompiledModel::~CompiledModel() {
  std::error_code ec;
  if (ok_ && !::testing::Test::HasFailure()) std::filesystem::remove_all(dir_, ec);
}

std::vector<std::int8_t> CompiledModel::run(std::span<const float> samples) const {
  const std::string d = dir_.string();
  {
    std::ofstream in(d + "/in.bin", std::ios::binary);
    in.write(reinterpret_cast<const char*>(samples.data()),
             static_cast<std::streamsize>(samples.size_bytes()));
  }
  const std::string cmd = d + "/model < " + d + "/in.bin > " + d + "/out.bin";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream out(d + "/out.bin", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(out)), {});
  return std::vector<std::int8_t>(bytes.begin(), bytes.end());
}

}  // namespace qforge::model::testing

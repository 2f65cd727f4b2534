// For harnesses whose entry point reads a file: a directory private to this fuzzing process
// and a helper that puts the input bytes into a file there. Also silences qforge's logger, so
// that the warnings a damaged input rightly produces do not drown libFuzzer's output.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace qforge::fuzz {

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    setenv("QFORGE_LOG_LEVEL", "off", 1);  // read when qforge's log is first used
    // $QFORGE_FUZZ_SCRATCH when the runner gives one (it removes it afterwards: a crashing
    // process never reaches atexit), else memory-backed when possible: on a disk every input
    // costs a write (and the tuning cache's fsyncs), ten times fewer executions per second.
    std::error_code ec;
    const char* given = std::getenv("QFORGE_FUZZ_SCRATCH");
    const std::filesystem::path base =
        given && *given ? std::filesystem::path(given)
        : std::filesystem::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0
            ? std::filesystem::path("/dev/shm")
            : std::filesystem::temp_directory_path();
    std::string name = (base / "qforge-fuzz-XXXXXX").string();
    if (!mkdtemp(name.data())) {
      std::perror("qforge fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return std::filesystem::path(name);
  }();
  return dir;
}

// Replaces scratch_dir()/name with the bytes and returns its path.
inline std::filesystem::path write_scratch(const char* name, const std::uint8_t* data,
                                           std::size_t size) {
  const std::filesystem::path file = scratch_dir() / name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::perror("qforge fuzz: writing the input file");
    std::abort();
  }
  return file;
}

}  // namespace qforge::fuzz

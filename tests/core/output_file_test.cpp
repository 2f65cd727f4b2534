// qforge::write_file_atomically: the target holds the old contents or the new, never a mix;
// failures name the file and leave no temporary file; temporaries of killed writers are removed
// once they are a minute old.
#include "qforge/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "qforge/error.h"

namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::random_device rd;
    path = fs::temp_directory_path() /
           ("qforge-output-file-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    n += e.path().filename().string().find(".tmp-") != std::string::npos;
  return n;
}

TEST(OutputFile, ReplacesTheTargetAndLeavesNoTemporary) {
  ScratchDir dir;
  const fs::path file = dir.path / "out.json";
  qforge::write_file_atomically(file, "first");
  qforge::write_file_atomically(file, "second, longer");
  EXPECT_EQ(slurp(file), "second, longer");
  EXPECT_EQ(temporaries(dir.path), 0);
}

TEST(OutputFile, AFailedWriteNamesTheFileAndKeepsTheTarget) {
  ScratchDir dir;
  // The target is a directory: the rename over it fails after the temporary file was written.
  const fs::path target = dir.path / "taken";
  fs::create_directories(target / "inside");
  try {
    qforge::write_file_atomically(target, "data", "test output");
    FAIL() << "writing over a non-empty directory succeeded";
  } catch (const qforge::Error& e) {
    EXPECT_EQ(e.code(), qforge::ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("test output"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(target / "inside"));
  EXPECT_EQ(temporaries(dir.path), 0);
}

TEST(OutputFile, MissingDirectoryIsAnErrorNamingIt) {
  ScratchDir dir;
  const fs::path file = dir.path / "absent" / "out.txt";
  EXPECT_THROW(qforge::write_file_atomically(file, "x"), qforge::Error);
  EXPECT_FALSE(fs::exists(file));
}

TEST(OutputFile, StaleTemporariesOfTheTargetAreRemovedFreshOnesKept) {
  ScratchDir dir;
  const fs::path file = dir.path / "model.onnx";
  const fs::path stale = dir.path / (qforge::temporary_file_prefix(file) + "4242-1");
  const fs::path fresh = dir.path / (qforge::temporary_file_prefix(file) + "4243-2");
  const fs::path other = dir.path / "other.onnx.tmp-4244-3";
  for (const auto& p : {stale, fresh, other}) std::ofstream(p) << "partial";
  const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  fs::last_write_time(stale, old);
  fs::last_write_time(other, old);
  qforge::write_file_atomically(file, "complete");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh)) << "a live writer's temporary file must stay";
  EXPECT_TRUE(fs::exists(other)) << "another target's temporary file is not ours to remove";
  EXPECT_EQ(slurp(file), "complete");
}

TEST(OutputFile, ASymbolicLinkStaysAndItsFileIsReplaced) {
  ScratchDir dir;
  const fs::path file = dir.path / "real.json", link = dir.path / "link.json";
  std::ofstream(file) << "old";
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink(file, link);
  qforge::write_file_atomically(link, "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(slurp(file), "new");
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read)
      << "the replacement keeps the permissions of the file it replaces";
  EXPECT_EQ(temporaries(dir.path), 0);
}

// A FIFO stands for /dev/null, /dev/stdout and pipes: renaming over it would replace the node
// (as root, `--output /dev/null` would leave /dev/null a regular file).
TEST(OutputFile, AFifoIsWrittenInPlaceNotReplaced) {
  ScratchDir dir;
  const fs::path fifo = dir.path / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = slurp(fifo); });
  qforge::write_file_atomically(fifo, "streamed contents");
  reader.join();
  EXPECT_EQ(received, "streamed contents");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_EQ(temporaries(dir.path), 0);
}

TEST(OutputFile, AnEmptyDirectoryIsAnErrorNamingIt) {
  ScratchDir dir;
  const fs::path target = dir.path / "empty";
  fs::create_directories(target);
  try {
    qforge::write_file_atomically(target, "data", "report");
    FAIL() << "writing over a directory succeeded";
  } catch (const qforge::Error& e) {
    EXPECT_EQ(e.code(), qforge::ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(target));
}

}  // namespace

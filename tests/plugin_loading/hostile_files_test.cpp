// Files on the plugin search path that must neither crash nor hang the process: plugins cut
// short (dlopen() of one dies with SIGBUS in the loader), FIFOs (open() blocks for a writer),
// symbolic link loops, unreadable directories. Fixtures are made here from the built fixture
// plugin, in temporary directories.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "qforge/registry.h"
#include "test_support.h"

namespace qforge::test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::vector<std::byte> file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

void write_bytes(const fs::path& file, const std::vector<std::byte>& bytes, std::size_t n) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
  ASSERT_TRUE(out.good()) << file;
}

// Runs `f` on another thread and fails the test when it has not returned within `seconds`;
// `unblock` is then called so that the thread can finish.
template <class F, class U>
void finishes_within(double seconds, F&& f, U&& unblock) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << "did not return within " << seconds << " s (blocked on a FIFO?)";
    unblock();
  }
  done.get();
}

// Opening the FIFO for reading and writing (Linux) releases a reader blocked in open().
void release_fifo(const fs::path& fifo) {
  const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  if (fd >= 0) ::close(fd);
}

TEST(HostilePluginFiles, EveryProperPrefixOfAPluginIsRefusedInMemory) {
  const auto bytes = file_bytes(fixture_file());
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(check_plugin_image(bytes), std::nullopt) << check_plugin_image(bytes)->message;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const auto f = check_plugin_image(std::span(bytes.data(), n), "cut");
    ASSERT_TRUE(f.has_value()) << "a plugin cut to " << n << " of " << bytes.size()
                               << " bytes passed the check";
    ASSERT_EQ(f->kind, PluginFailureKind::not_shared_library) << n;
  }
}

TEST(HostilePluginFiles, TruncatedPluginsAreReportedNotLoaded) {
  const auto bytes = file_bytes(fixture_file());
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  // The sizes the audit crashed with (1,000 to 33,768 bytes of a 34 KB plugin), the edges of
  // the ELF header, and random cuts.
  std::vector<std::size_t> cuts = {
      1, 19, 20, 63, 64, 100, 1000, 4096, 12000, 33768, bytes.size() - 1};
  for (int i = 0; i < 8; ++i)
    cuts.push_back(std::uniform_int_distribution<std::size_t>(1, bytes.size() - 1)(rng));
  TempDir dir;
  PluginRegistry registry;
  for (std::size_t n : cuts) {
    if (n >= bytes.size()) continue;
    const fs::path file = dir.path() / ("libqforge_plugin_cut_" + std::to_string(n) + ".so");
    write_bytes(file, bytes, n);
    EXPECT_FALSE(registry.load_file(file)) << "seed " << seed << ", cut " << n;
    const PluginFailure* f = failure_for(registry, file.filename().string());
    ASSERT_NE(f, nullptr) << "seed " << seed << ", cut " << n;
    EXPECT_EQ(f->kind, PluginFailureKind::not_shared_library) << f->message;
    if (n >= 64) {
      EXPECT_THAT(f->message, HasSubstr("truncated or damaged")) << f->message;
    }
  }
  EXPECT_TRUE(registry.plugins().empty());
  // The whole file still loads.
  EXPECT_TRUE(registry.load_file(dir.copy_in(fixture_file())));
}

TEST(HostilePluginFiles, RandomlyDamagedHeadersNeverCrashTheCheck) {
  const auto bytes = file_bytes(fixture_file());
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  int refused = 0;
  for (int round = 0; round < 2000; ++round) {
    auto copy = bytes;
    // Damage a few bytes of the ELF header or the program header table.
    for (int i = 0; i < 3; ++i) {
      const auto at = std::uniform_int_distribution<std::size_t>(0, 64 + 56 * 12)(rng);
      copy[at] = static_cast<std::byte>(rng());
    }
    refused += check_plugin_image(copy, "damaged").has_value();
  }
  EXPECT_GT(refused, 0) << "seed " << seed;
}

TEST(HostilePluginFiles, SegmentsPastTheEndAreNamed) {
  // A plugin cut after its program headers but inside its first PT_LOAD segment.
  const auto bytes = file_bytes(fixture_file());
  const auto f = check_plugin_image(std::span(bytes.data(), 1000), "cut.so");
  ASSERT_TRUE(f.has_value());
  EXPECT_THAT(f->message, HasSubstr("PT_LOAD segment"));
  EXPECT_THAT(f->message, HasSubstr("the file has 1000 bytes"));
}

TEST(HostilePluginFiles, FifoInADirectoryIsReportedWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "libqforge_plugin_fifo.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  dir.copy_in(fixture_file());
  PluginRegistry registry;
  finishes_within(
      10, [&] { registry.load_from({dir.path()}); }, [&] { release_fifo(fifo); });
  const PluginFailure* f = failure_for(registry, "libqforge_plugin_fifo.so");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, PluginFailureKind::not_shared_library);
  EXPECT_THAT(f->message, HasSubstr("FIFO"));
  EXPECT_NE(registry.find("fixture"), nullptr) << "the other plugins keep working";
}

TEST(HostilePluginFiles, FifoOnQforgePluginPathIsReportedWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "anything";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  ScopedEnv env("QFORGE_PLUGIN_PATH", fifo.string());
  PluginRegistry registry;
  finishes_within(
      10, [&] { registry.load_from({PluginRegistry::default_search_path()[0]}); },
      [&] { release_fifo(fifo); });
  const PluginFailure* f = failure_for(registry, "anything");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message, HasSubstr("is not a shared library: it is a FIFO"));
}

TEST(HostilePluginFiles, DeviceIsReportedWithoutReading) {
  PluginRegistry registry;
  finishes_within(
      10, [&] { registry.load_from({"/dev/zero"}); }, [] {});
  const PluginFailure* f = failure_for(registry, "zero");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message, HasSubstr("character device"));
}

TEST(HostilePluginFiles, SymlinkLoopIsReportedAsALoop) {
  TempDir dir;
  const fs::path a = dir.path() / "libqforge_plugin_loop.so";
  const fs::path b = dir.path() / "libqforge_plugin_pool.so";
  fs::create_symlink(b, a);
  fs::create_symlink(a, b);
  PluginRegistry registry;
  registry.load_from({dir.path()});
  const PluginFailure* f = failure_for(registry, "libqforge_plugin_loop.so");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->message, HasSubstr("symbolic link loop"));
  EXPECT_THAT(f->message, ::testing::Not(HasSubstr("does not exist")));

  // Named directly on the search path.
  PluginRegistry direct;
  direct.load_from({a});
  ASSERT_EQ(direct.failures().size(), 1u);
  EXPECT_THAT(direct.failures()[0].message, HasSubstr("symbolic link loop"));
}

TEST(HostilePluginFiles, UnreadableDirectoryIsReported) {
  // Root reads any directory, so the check runs in a child that gives up root first.
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const fs::path locked = dir.path() / "locked";
  fs::create_directory(locked);
  dir.copy_in(fixture_file(), "locked/libqforge_plugin_fixture.so");
  fs::permissions(locked, fs::perms::none);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    PluginRegistry registry;
    registry.load_from({locked});
    if (registry.failures().size() != 1) ::_exit(1);
    const PluginFailure& f = registry.failures()[0];
    const bool named = f.message.find("cannot be read") != std::string::npos &&
                       f.message.find(locked.string()) != std::string::npos &&
                       f.message.find("Permission denied") != std::string::npos;
    ::_exit(named ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  fs::permissions(locked, fs::perms::owner_all);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: not exactly one failure, 2: the failure does not name the directory and the "
         "reason, 3: could not drop root";
}

#ifdef QFORGE_HWINFO
// The hardware report over a directory of every hostile file: it must exit 0 and name each.
TEST(HostilePluginFiles, HwinfoSurvivesAndNamesEachFile) {
  const auto bytes = file_bytes(fixture_file());
  TempDir dir;
  write_bytes(dir.path() / "libqforge_plugin_cut.so", bytes, 12000);
  ASSERT_EQ(::mkfifo((dir.path() / "libqforge_plugin_fifo.so").c_str(), 0644), 0);
  fs::create_symlink(dir.path() / "libqforge_plugin_loop.so",
                     dir.path() / "libqforge_plugin_loop.so");
  const std::string command = "timeout 60 env QFORGE_LOG_LEVEL=off QFORGE_PLUGIN_PATH='" +
                              dir.path().string() + "' '" QFORGE_HWINFO "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "124 means it hung:\n" << out;
  EXPECT_THAT(out, HasSubstr("libqforge_plugin_cut.so"));
  EXPECT_THAT(out, HasSubstr("truncated or damaged"));
  EXPECT_THAT(out, HasSubstr("libqforge_plugin_fifo.so"));
  EXPECT_THAT(out, HasSubstr("libqforge_plugin_loop.so"));
  EXPECT_THAT(out, HasSubstr("symbolic link loop"));
}
#endif

}  // namespace
}  // namespace qforge::test

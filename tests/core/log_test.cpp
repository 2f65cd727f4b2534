// qforge's log: levels, the threshold, and sinks that applications add.
#include "qforge/log.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace qforge {
namespace {

// Restores the threshold a test changed.
class LevelGuard {
 public:
  LevelGuard() : old_(log_level()) {}
  ~LevelGuard() { set_log_level(old_); }

 private:
  LogLevel old_;
};

TEST(Log, LevelNamesRoundTrip) {
  for (LogLevel l : {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn,
                     LogLevel::error, LogLevel::critical, LogLevel::off})
    EXPECT_EQ(parse_log_level(to_string(l)), l);
  EXPECT_EQ(parse_log_level("warning"), LogLevel::warn);
  EXPECT_EQ(parse_log_level("loud"), std::nullopt);
  EXPECT_EQ(parse_log_level(""), std::nullopt);
}

TEST(Log, SinksReceiveWhatPassesTheThreshold) {
  LevelGuard guard;
  std::vector<std::pair<LogLevel, std::string>> got;
  const auto id = add_log_sink(
      [&](LogLevel level, std::string_view text) { got.emplace_back(level, std::string(text)); });
  set_log_level(LogLevel::warn);
  EXPECT_FALSE(log_enabled(LogLevel::info));
  EXPECT_TRUE(log_enabled(LogLevel::error));
  log_message(LogLevel::info, "not this");
  log_message(LogLevel::warn, "this");
  log_message(LogLevel::error, "and this");
  set_log_level(LogLevel::off);
  EXPECT_FALSE(log_enabled(LogLevel::critical));
  log_message(LogLevel::critical, "nothing when off");
  // `off` is a threshold, never a message level.
  set_log_level(LogLevel::trace);
  log_message(LogLevel::off, "not a level to write at");
  remove_log_sink(id);
  log_message(LogLevel::error, "after the sink went");

  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(LogLevel::warn, std::string("this")));
  EXPECT_EQ(got[1], std::make_pair(LogLevel::error, std::string("and this")));
}

TEST(Log, AThrowingSinkLosesTheMessageOnly) {
  LevelGuard guard;
  set_log_level(LogLevel::warn);
  const auto id = add_log_sink([](LogLevel, std::string_view) { throw 42; });
  EXPECT_NO_THROW(log_message(LogLevel::error, "lost"));
  remove_log_sink(id);
  remove_log_sink(id);  // twice is harmless
}

}  // namespace
}  // namespace qforge

// Runs tuning tasks on a long-lived worker thread and waits for each at most a given time, so
// that a candidate which hangs costs the budget and no more.
//
// A task that overruns is abandoned: the thread cannot be stopped safely from outside, so it is
// detached and left to finish (or hang) on its own, and the next task gets a new thread.
// Everything an abandoned task touches must therefore be owned by the task itself (shared_ptr
// captures), and the caller must not use the same plugin again (it may still be running).
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace qforge::accel {

struct TaskOutcome {
  enum class Kind { ok, threw, timed_out } kind = Kind::ok;
  std::string message;  // the exception's message, or how long it was waited for
};

class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  TaskOutcome run(std::function<void()> task, double timeout_s);
  // Threads abandoned so far (for reports and tests).
  int abandoned() const noexcept { return abandoned_; }

  struct Channel;  // shared with the thread (worker.cpp)

 private:
  void start();
  std::shared_ptr<Channel> channel_;
  int abandoned_ = 0;
};

}  // namespace qforge::accel

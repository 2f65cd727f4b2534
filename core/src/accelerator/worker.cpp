#include "accelerator/worker.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "qforge/error.h"

namespace qforge::accel {

struct Worker::Channel {
  std::mutex mutex;
  std::condition_variable cv;
  std::function<void()> task;
  bool has_task = false;
  bool done = false;
  bool quit = false;
  TaskOutcome outcome;
  std::thread thread;
};

namespace {

TaskOutcome run_catching(const std::function<void()>& task) {
  try {
    task();
    return {};
  } catch (const Error& e) {
    return {TaskOutcome::Kind::threw, e.what()};
  } catch (const std::exception& e) {
    return {TaskOutcome::Kind::threw, e.what()};
  } catch (...) {
    return {TaskOutcome::Kind::threw, "an exception not derived from std::exception"};
  }
}

// The thread's loop. It holds its own reference to the channel, so an abandoned thread keeps
// the channel (and the task's captures) alive until it finishes.
void serve(std::shared_ptr<Worker::Channel> ch) {
  std::unique_lock lock(ch->mutex);
  for (;;) {
    ch->cv.wait(lock, [&] { return ch->has_task || ch->quit; });
    if (!ch->has_task) return;
    std::function<void()> task = std::move(ch->task);
    ch->has_task = false;
    lock.unlock();
    TaskOutcome outcome = run_catching(task);
    task = nullptr;  // release the captures before reporting
    lock.lock();
    ch->outcome = std::move(outcome);
    ch->done = true;
    ch->cv.notify_all();
    if (ch->quit) return;
  }
}
}  // namespace

Worker::Worker() = default;

Worker::~Worker() {
  if (!channel_) return;
  {
    std::lock_guard lock(channel_->mutex);
    channel_->quit = true;
  }
  channel_->cv.notify_all();
  if (channel_->thread.joinable()) channel_->thread.join();
}

void Worker::start() {
  channel_ = std::make_shared<Channel>();
  channel_->thread = std::thread(serve, channel_);
}

TaskOutcome Worker::run(std::function<void()> task, double timeout_s) {
  if (!channel_) start();
  std::unique_lock lock(channel_->mutex);
  channel_->task = std::move(task);
  channel_->has_task = true;
  channel_->done = false;
  channel_->cv.notify_all();
  const auto timeout = std::chrono::duration<double>(timeout_s < 0 ? 0 : timeout_s);
  if (channel_->cv.wait_for(lock, timeout, [&] { return channel_->done; }))
    return std::move(channel_->outcome);
  // Overran: tell the thread to exit once the task returns, and let it go.
  channel_->quit = true;
  lock.unlock();
  channel_->thread.detach();
  channel_.reset();
  ++abandoned_;
  char text[64];
  std::snprintf(text, sizeof text, "did not return within %.3g s", timeout_s);
  return {TaskOutcome::Kind::timed_out, text};
}

}  // namespace qforge::accel

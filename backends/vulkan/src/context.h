// One logical device of the plugin: the device, its compute queue, memory-type choice, the
// streams ops record into, and the validation check after each submission.
//
// Submission model: ops are synchronous. An op records its copies and dispatches into the
// command buffer (Commands) of a stream, submits it and waits on the stream's fence, so when the
// op returns its outputs are written. Timestamps around each submission give the GPU time of the
// last op. Per-call ops use the device's default stream; each plan run borrows one of its plan's,
// so runs on different streams proceed at once, sharing only the queue (submissions take
// queue_mutex()) and the pipeline cache.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "device_caps.h"
#include "instance.h"

namespace qforge::vulkan {

struct Pipeline;
class PipelineCache;
class DeviceBuffer;

// A storage-buffer binding: the window of `buffer` a shader sees as one array.
struct BufferBinding {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;
};

class Context;

// The command buffer of one submission. Obtained from Context::begin(); everything recorded
// runs, in order, when submit() is called.
class Commands {
 public:
  explicit Commands(Context& ctx);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  void begin();
  VkCommandBuffer handle() const noexcept { return cmd_; }
  // Makes every earlier transfer and compute write visible to later transfers and shaders.
  void barrier();
  void copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
            VkDeviceSize bytes);
  void fill(VkBuffer dst, VkDeviceSize offset, VkDeviceSize bytes, std::uint32_t value);
  // Binds `bindings` to bindings 0..n-1 of the pipeline's set 0, pushes `push` and dispatches.
  void dispatch(const Pipeline& pipeline, std::span<const BufferBinding> bindings, const void* push,
                std::uint32_t push_bytes, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz = 1);
  // Ends, submits, waits; throws on a failed call or a collected validation error. Returns the
  // GPU time between the first and last command in ns (0 when the queue has no timestamps).
  double submit();

  // Number of dispatches recorded since begin() (tests of the splitting read it).
  std::uint32_t dispatch_count() const noexcept { return dispatches_; }
  // The pipeline of the last dispatch recorded (null before the first one).
  const Pipeline* last_pipeline() const noexcept { return last_pipeline_; }

 private:
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);

  Context& ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools_;
  std::size_t current_pool_ = 0;
  bool recording_ = false;
  std::uint32_t dispatches_ = 0;
  const Pipeline* last_pipeline_ = nullptr;
};

// What one submission at a time records into and reuses: the command buffer, the scratch
// buffers its ops keep between calls, and the device copy of the params last staged. A device's
// per-call ops and copies use its default stream (Context::stream(), under Context::mutex());
// each run of a plan borrows one of the plan's own, so plans of one device run at once.
class Stream {
 public:
  explicit Stream(Context& ctx);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Context& context() const noexcept { return ctx_; }
  Commands& commands() { return *commands_; }
  const Commands& commands() const { return *commands_; }
  // Buffers kept between ops, by name (buffers.h: scratch()).
  std::map<std::string, std::unique_ptr<DeviceBuffer>, std::less<>>& scratch_buffers() {
    return scratch_;
  }
  // The host copy of the params last copied into the "params_device" scratch buffer
  // (op_elementwise.cpp): an op that repeats them skips the upload. `pending` holds params whose
  // copy is recorded but not yet submitted; they become the cache only once the submission
  // succeeded.
  std::vector<std::uint32_t>& params_cache() { return params_cache_; }
  std::vector<std::uint32_t>& params_pending() { return params_pending_; }
  // QuantizationParams::identity() of the params in params_cache() / params_pending() (0: unknown).
  std::uint64_t& params_cache_identity() { return params_cache_identity_; }
  std::uint64_t& params_pending_identity() { return params_pending_identity_; }

 private:
  Context& ctx_;
  std::map<std::string, std::unique_ptr<DeviceBuffer>, std::less<>> scratch_;
  std::unique_ptr<Commands> commands_;
  std::vector<std::uint32_t> params_cache_;
  std::vector<std::uint32_t> params_pending_;
  std::uint64_t params_cache_identity_ = 0, params_pending_identity_ = 0;
};

class Context {
 public:
  Context(std::shared_ptr<Instance> instance, const DeviceCaps& caps);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkDevice device() const noexcept { return device_; }
  VkQueue queue() const noexcept { return queue_; }
  const DeviceCaps& caps() const noexcept { return caps_; }
  Instance& instance() const noexcept { return *instance_; }

  // A memory type allowed by `type_bits` with every `required` flag, preferring one that also
  // has the `preferred` flags. Throws unsupported when none has the required flags.
  std::uint32_t memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                            VkMemoryPropertyFlags preferred) const;
  VkMemoryPropertyFlags memory_flags(std::uint32_t type) const;

  // The default stream: the per-call ops' and the copies' (callers hold mutex()).
  Stream& stream() { return *stream_; }
  const Stream& stream() const { return *stream_; }
  // Pipelines are created with their compiler statistics captured (Pipeline::stats):
  // QFORGE_VULKAN_PIPELINE_STATS=1 and a device with VK_KHR_pipeline_executable_properties.
  bool capture_stats() const noexcept { return capture_stats_; }
  // Thread-safe (plans of the device create and look up pipelines from several threads).
  PipelineCache& pipelines() { return *pipelines_; }

  // Lowers maxStorageBufferRange and maxComputeWorkGroupCount as the plugin sees them, so tests
  // can drive the splitting with small data; 0 restores the device's own value. Not while a
  // plan of the device runs on another thread (runs read the limits without a lock).
  void limit(std::uint64_t storage_range, std::uint32_t workgroups);

  // Throws Error(backend) listing validation errors collected since the last check.
  void check_validation(const char* where);

  // Held around every use of the default stream: the per-call ops and copies of VulkanOps, and
  // the uploads of a plan being made, which may come from several threads.
  std::mutex& mutex() noexcept { return mutex_; }
  // Held around vkQueueSubmit (the queue is externally synchronised; streams share it).
  std::mutex& queue_mutex() noexcept { return queue_mutex_; }

 private:
  std::shared_ptr<Instance> instance_;
  DeviceCaps caps_;
  DeviceCaps device_caps_;  // as the device reports them (limit() starts from these)
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::unique_ptr<PipelineCache> pipelines_;
  std::unique_ptr<Stream> stream_;
  bool capture_stats_ = false;
  std::mutex mutex_;
  std::mutex queue_mutex_;
};

}  // namespace qforge::vulkan

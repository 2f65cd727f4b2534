// The plugin outlives the registry that loaded it: oneDNN leaves libgomp worker threads and
// atfork handlers behind, so unmapping libdnnl/libgomp with the plugin crashed the process at
// its next fork() (seen with a PluginRegistry local to main). The plugin is linked with
// -z nodelete; this checks that it stays mapped and that fork() still works afterwards.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "matmul_check.h"

namespace qforge::onednn_test {
namespace {

TEST(Lifetime, PluginStaysLoadedAfterItsRegistryIsGone) {
  SCOPED_TRACE(seed_text());
  std::string path;
  {
    Loaded l = load_onednn();
    if (!l.ops) GTEST_SKIP() << "onednn did not load: " << l.why_missing;
    for (const auto& p : l.registry->plugins())
      if (p.name == "onednn") path = p.path.string();
    // Run something on OpenMP threads so that libgomp has a thread pool to leave behind.
    Rng rng = test_rng();
    const QuantizeDesc d{
        {1 << 20}, QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 3), FloatType::f32};
    std::vector<float> x(1 << 20, 1.0f);
    std::vector<std::uint8_t> q(x.size());
    l.ops->set_option("threads", "4");
    l.ops->quantize(d, x.data(), q.data());
    if (device_property(*l.ops, "int8_matmul").rfind("exact", 0) == 0)
      expect_exact(
          *l.ops,
          random_run(
              rng, OpKind::matmul_integer,
              matmul_desc(64, 64, 64, QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 3),
                          QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f))));
  }
  ASSERT_FALSE(path.empty());
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << path << " was unloaded with its registry";
  if (handle) ::dlclose(handle);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "fork after the registry was destroyed";
}

}  // namespace
}  // namespace qforge::onednn_test

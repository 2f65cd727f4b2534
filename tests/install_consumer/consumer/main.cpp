// Uses the installed qforge the way an application would: build params, quantize with the
// reference, and (given a plugin directory and name) load that plugin and check it agrees.
// Prints what it did; exits non-zero with a message on any mismatch.
//
//   qforge_consumer [PLUGIN_DIR PLUGIN_NAME]
#include <qforge/qforge.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

namespace {

// DynamicQuantizeLinear's example from DESIGN.md: s = 0.019607844, z = 153.
const std::vector<float> kX = {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f};
const std::vector<std::uint8_t> kExpected = {153, 255, 0, 26, 221, 179};

bool check(const char* who, const std::vector<std::uint8_t>& q) {
  if (q == kExpected) return true;
  std::fprintf(stderr, "%s: got", who);
  for (auto v : q) std::fprintf(stderr, " %u", static_cast<unsigned>(v));
  std::fprintf(stderr, "; expected 153 255 0 26 221 179\n");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const qforge::QuantizeDesc desc{
        {static_cast<std::int64_t>(kX.size())},
        qforge::QuantizationParams::per_tensor_affine(qforge::DType::uint8, 0.019607844f, 153)};
    std::vector<std::uint8_t> q(kX.size());
    qforge::reference::quantize(desc, kX.data(), q.data());
    if (!check("reference::quantize", q)) return 1;
    std::printf("reference::quantize: ok (%s)\n", desc.params.to_string().c_str());

    if (argc == 3) {
      qforge::PluginRegistry registry;
      registry.load_from({argv[1]});
      for (const auto& f : registry.failures())
        std::fprintf(stderr, "plugin failure: %s: %s\n", f.path.c_str(), f.message.c_str());
      qforge::QuantizationOps* ops = registry.find(argv[2]);
      if (ops == nullptr) {
        std::fprintf(stderr, "plugin %s not found in %s\n", argv[2], argv[1]);
        return 1;
      }
      std::vector<std::uint8_t> qp(kX.size());
      ops->quantize(desc, kX.data(), qp.data());
      if (!check(argv[2], qp)) return 1;
      std::printf("plugin %s %s quantize: ok\n", ops->name().c_str(), ops->version().c_str());

      // The same op prepared once as a plan and run twice.
      const auto plan = ops->plan({qforge::OpKind::quantize, desc}, {});
      for (int run = 0; run < 2; ++run) {
        std::vector<std::uint8_t> qr(kX.size());
        plan->run({kX.data()}, {qr.data()});
        if (!check("plan", qr)) return 1;
      }
      std::printf("plugin %s plan (%s): ok\n", ops->name().c_str(), plan->kernel().c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qforge_consumer: %s\n", e.what());
    return 1;
  }
}

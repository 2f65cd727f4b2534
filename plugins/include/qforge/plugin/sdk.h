// Helpers for writing a qforge plugin. A plugin implements qforge::QuantizationOps and adds, in
// exactly one source file:
//
//   QFORGE_DEFINE_PLUGIN(MyOps, "my_backend", "0.1.0")
//
// which exports qforge_plugin_entry() returning a descriptor whose create() constructs MyOps
// and turns any exception from its constructor into a NULL return plus a message.
#pragma once

#include <exception>
#include <string>

#include "qforge/ops.h"
#include "qforge/plugin/abi.h"

namespace qforge::plugin {

template <class Ops>
struct Factory {
  static inline std::string last_error_message;

  static void* create() noexcept {
    try {
      last_error_message.clear();
      return static_cast<QuantizationOps*>(new Ops());
    } catch (const std::exception& e) {
      last_error_message = e.what();
    } catch (...) {
      last_error_message = "unknown exception";
    }
    return nullptr;
  }
  static void destroy(void* p) noexcept { delete static_cast<QuantizationOps*>(p); }
  static const char* last_error() noexcept {
    return last_error_message.empty() ? nullptr : last_error_message.c_str();
  }
};

}  // namespace qforge::plugin

#define QFORGE_DEFINE_PLUGIN(OPS_CLASS, NAME, VERSION)                              \
  extern "C" __attribute__((visibility("default"))) const qforge_plugin_descriptor* \
  qforge_plugin_entry(void) {                                                       \
    static const qforge_plugin_descriptor descriptor = {                            \
        QFORGE_PLUGIN_ABI_VERSION,                                                  \
        static_cast<uint32_t>(sizeof(qforge_plugin_descriptor)),                    \
        NAME,                                                                       \
        VERSION,                                                                    \
        &::qforge::plugin::Factory<OPS_CLASS>::create,                              \
        &::qforge::plugin::Factory<OPS_CLASS>::destroy,                             \
        &::qforge::plugin::Factory<OPS_CLASS>::last_error};                         \
    return &descriptor;                                                             \
  }

// Makes the plugin deferred (abi.h, QFORGE_PLUGIN_DEFERRED_IDENTITY_SYMBOL): FUNCTION is a
// `std::string FUNCTION()` that computes the runtime's cheap identity without starting it. An
// exception from it means "not deferred": the registry then creates the plugin as it loads.
#define QFORGE_DEFINE_DEFERRED_IDENTITY(FUNCTION)                                                \
  extern "C" __attribute__((visibility("default"))) const char* qforge_plugin_deferred_identity( \
      void) {                                                                                    \
    static thread_local std::string text;                                                        \
    try {                                                                                        \
      text = FUNCTION();                                                                         \
      return text.c_str();                                                                       \
    } catch (...) {                                                                              \
      return nullptr;                                                                            \
    }                                                                                            \
  }

// FNV-1a, 64 bits: a short hash of text that is the same in every process, build and machine,
// for keys that must stay stable (the tuning cache's hardware fingerprint, the device plugins'
// deferred identities, the conformance harness's per-test seeds). Not for security: collisions
// can be made on purpose.
#pragma once

#include <cstdint>
#include <string_view>

namespace qforge {

constexpr std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace qforge

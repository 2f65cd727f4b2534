#include "qforge/scheme.h"

namespace qforge {

std::string_view to_string(Mapping m) noexcept {
  switch (m) {
    case Mapping::affine: return "affine";
    case Mapping::symmetric: return "symmetric";
    case Mapping::logarithmic: return "logarithmic";
  }
  return "unknown";
}

std::string_view to_string(Granularity g) noexcept {
  switch (g) {
    case Granularity::per_tensor: return "per_tensor";
    case Granularity::per_channel: return "per_channel";
    case Granularity::block: return "block";
  }
  return "unknown";
}

std::string to_string(const Scheme& s) {
  std::string out = std::string(to_string(s.granularity)) + "_" + std::string(to_string(s.mapping));
  if (s.granularity == Granularity::per_channel) out += "(axis=" + std::to_string(s.axis) + ")";
  if (s.granularity == Granularity::block) out += "(" + std::to_string(s.block_size) + ")";
  return out;
}

std::optional<Mapping> parse_mapping(std::string_view text) noexcept {
  for (auto m : {Mapping::affine, Mapping::symmetric, Mapping::logarithmic})
    if (to_string(m) == text) return m;
  return std::nullopt;
}

std::optional<Granularity> parse_granularity(std::string_view text) noexcept {
  for (auto g : {Granularity::per_tensor, Granularity::per_channel, Granularity::block})
    if (to_string(g) == text) return g;
  return std::nullopt;
}

}  // namespace qforge

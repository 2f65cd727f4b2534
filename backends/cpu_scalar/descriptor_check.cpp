#include "descriptor_check.h"

#include <string>

#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_scalar {

Support check_descriptor(const OpDesc& op) {
  try {
    reference::check_descriptor(op);
  } catch (const Error& e) {
    return Support::no("cpu_scalar: " + std::string(e.what()));
  }
  return Support::yes({"scalar_reference"});
}

}  // namespace qforge::cpu_scalar

// The cuda plugin's deferred identity (qforge/plugin/abi.h): the driver and GPUs a CUDA context
// would find, described without creating one (creating it initialises the driver and every
// visible GPU's context, a tenth of a second to seconds).
#pragma once

#include <string>

namespace qforge::cuda {

std::string runtime_identity();

}  // namespace qforge::cuda

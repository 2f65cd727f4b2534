// The portable C files the export copies (model/export_c/kernels/), embedded at build time.
#pragma once

#include <map>
#include <string>

namespace qforge::model::export_c {

const std::map<std::string, std::string>& kernel_sources();

}  // namespace qforge::model::export_c

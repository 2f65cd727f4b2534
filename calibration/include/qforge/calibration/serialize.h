// Saving and loading observers and params as JSON (nlohmann-json inside the library; the API
// speaks strings and paths only).
//
// Files are written atomically (qforge::write_file_atomically, qforge/output_file.h): the text
// goes to a temporary file in the target's directory ("<name>.tmp-<pid>-<random>"), is fsync'ed,
// then renamed over the target, so a reader or a crash sees either the previous file or the new
// one, never a partial one. When any step fails the temporary file is removed, the previous file
// is left as it was, and qforge::Error (io) names the path and the system's reason. A temporary
// file that a process killed mid-write left behind is removed by the next write once it is a
// minute old; it never replaces the target.
//
// Loading a truncated or corrupt file throws qforge::Error (corrupt_data) naming the file and
// what was wrong (the parser's message and byte offset, or the missing / invalid field).
//
// Formats (docs/CALIBRATION.md): {"format": "qforge.calibration.observer", "version": 1, ...}
// and {"format": "qforge.calibration.params", "version": 1, "tensors": {name: params, ...}}.
// Floats are written with enough digits to read back bit for bit; +/-inf (channels that saw no
// data) are written as null.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "qforge/calibration/export.h"
#include "qforge/calibration/observer.h"
#include "qforge/params.h"

namespace qforge::calibration {

QFORGE_CALIBRATION_API std::string observer_to_json(const Observer& observer);
QFORGE_CALIBRATION_API std::unique_ptr<Observer> observer_from_json(std::string_view text);
QFORGE_CALIBRATION_API void save_observer(const Observer& observer,
                                          const std::filesystem::path& path);
QFORGE_CALIBRATION_API std::unique_ptr<Observer> load_observer(const std::filesystem::path& path);

using ParamsMap = std::map<std::string, QuantizationParams>;
QFORGE_CALIBRATION_API std::string params_to_json(const ParamsMap& params);
QFORGE_CALIBRATION_API ParamsMap params_from_json(std::string_view text);
QFORGE_CALIBRATION_API void save_params(const ParamsMap& params, const std::filesystem::path& path);
QFORGE_CALIBRATION_API ParamsMap load_params(const std::filesystem::path& path);

// The atomic write the savers use: qforge::write_file_atomically with "calibration file" as
// the file's role in messages.
QFORGE_CALIBRATION_API void write_file_atomically(const std::filesystem::path& path,
                                                  std::string_view content);

}  // namespace qforge::calibration

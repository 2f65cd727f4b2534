// Symbol visibility for libqforge_calibration, built like libqforge_core with hidden
// visibility: only declarations marked QFORGE_CALIBRATION_API are exported.
#pragma once

#if defined(_WIN32)
#if defined(QFORGE_CALIBRATION_BUILDING)
#define QFORGE_CALIBRATION_API __declspec(dllexport)
#else
#define QFORGE_CALIBRATION_API __declspec(dllimport)
#endif
#else
#define QFORGE_CALIBRATION_API __attribute__((visibility("default")))
#endif

// Symbol visibility for libqforge_model_quantize, built like libqforge_core with hidden
// visibility: only declarations marked QFORGE_QUANTIZE_API are exported.
#pragma once

#if defined(_WIN32)
#if defined(QFORGE_QUANTIZE_BUILDING)
#define QFORGE_QUANTIZE_API __declspec(dllexport)
#else
#define QFORGE_QUANTIZE_API __declspec(dllimport)
#endif
#else
#define QFORGE_QUANTIZE_API __attribute__((visibility("default")))
#endif

// Symbol visibility for libqforge_model, built like libqforge_core with hidden visibility: only
// declarations marked QFORGE_MODEL_API are exported.
#pragma once

#if defined(_WIN32)
#if defined(QFORGE_MODEL_BUILDING)
#define QFORGE_MODEL_API __declspec(dllexport)
#else
#define QFORGE_MODEL_API __declspec(dllimport)
#endif
#else
#define QFORGE_MODEL_API __attribute__((visibility("default")))
#endif

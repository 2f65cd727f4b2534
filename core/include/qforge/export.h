// Symbol visibility for libqforge_base and libqforge_runtime. They are built with hidden
// visibility; only declarations marked QFORGE_API are exported (after highway's
// hwy/highway_export.h).
#pragma once

#if defined(_WIN32)
#if defined(QFORGE_CORE_BUILDING)
#define QFORGE_API __declspec(dllexport)
#else
#define QFORGE_API __declspec(dllimport)
#endif
#else
#define QFORGE_API __attribute__((visibility("default")))
#endif

// Symbol visibility for libqforge_model_recipe, built like libqforge_core with hidden
// visibility: only declarations marked QFORGE_RECIPE_API are exported.
#pragma once

#if defined(_WIN32)
#if defined(QFORGE_RECIPE_BUILDING)
#define QFORGE_RECIPE_API __declspec(dllexport)
#else
#define QFORGE_RECIPE_API __declspec(dllimport)
#endif
#else
#define QFORGE_RECIPE_API __attribute__((visibility("default")))
#endif

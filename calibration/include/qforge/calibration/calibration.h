// The main qforge calibration header: observers that choose scales and zero points from data.
//
//   #include "qforge/calibration/calibration.h"
//   qforge::calibration::HistogramObserver obs({.method = qforge::calibration::Method::entropy});
//   for (auto& batch : batches) obs.observe(batch.data, batch.shape);
//   auto int8 = obs.params({qforge::DType::int8, qforge::Mapping::symmetric});
//   auto int4 = obs.params({qforge::DType::int4, qforge::Mapping::affine});
//
// See docs/CALIBRATION.md for the methods, their references and the conventions.
#pragma once

#include "qforge/calibration/histogram.h"
#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/methods.h"
#include "qforge/calibration/minmax.h"
#include "qforge/calibration/observer.h"
#include "qforge/calibration/serialize.h"

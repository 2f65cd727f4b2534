// The main qforge public header: everything a user program needs.
#pragma once

#include "qforge/accelerator.h"
#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/half.h"
#include "qforge/hardware.h"
#include "qforge/input_file.h"
#include "qforge/op_desc.h"
#include "qforge/op_table.h"
#include "qforge/ops.h"
#include "qforge/params.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "qforge/registry.h"
#include "qforge/scheme.h"
#include "qforge/shape.h"
#include "qforge/tensor.h"

/* c_quantize: a qforge backend plugin written in C against the C plugin boundary
 * (qforge/plugin/c_api.h). It runs quantize and dequantize per tensor between float32 and
 * int8/uint8, affine or symmetric, with the reference's numerics (docs/NUMERICS.md):
 *   quantize:   q = clamp(rne(x / s) + z, qmin, qmax), NaN -> z, in float32 arithmetic;
 *   dequantize: x = float(q - z) * s.
 * It refuses every other op and descriptor through supports(). Plans hold only scalars, so they
 * run concurrently. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qforge/plugin/c_api.h"

#define PLUGIN_NAME "c_quantize"
#define KERNEL_NAME "c_scalar"

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

/* ---- status objects: a code and a message, freed by status_release ---- */
struct qforge_c_status {
  uint32_t code;
  char message[400];
};

/* Returned when malloc fails; status_release leaves it alone. */
static struct qforge_c_status out_of_memory = {QFORGE_C_ERROR_INTERNAL,
                                               PLUGIN_NAME ": out of memory"};

static qforge_c_status* make_status(uint32_t code, const char* format, const char* detail) {
  qforge_c_status* s = malloc(sizeof *s);
  if (s == NULL) return &out_of_memory;
  s->code = code;
  snprintf(s->message, sizeof s->message, format, detail);
  return s;
}

static uint32_t status_code(const qforge_c_status* s) { return s->code; }
static const char* status_message(const qforge_c_status* s) { return s->message; }
static void status_release(qforge_c_status* s) {
  if (s != &out_of_memory) free(s);
}

/* ---- the backend: the host CPU, no state ---- */
struct qforge_c_backend {
  int unused;
};

static qforge_c_status* create_backend(qforge_c_backend** out) {
  *out = malloc(sizeof **out);
  return *out == NULL ? &out_of_memory : NULL;
}
static void destroy_backend(qforge_c_backend* b) { free(b); }

static void availability(const qforge_c_backend* b, qforge_c_availability* out) {
  (void)b;
  if (QFORGE_C_HAS_FIELD(out, qforge_c_availability, usable)) out->usable = 1;
  /* Below the in-tree CPU backends: an example, not a fast path. */
  if (QFORGE_C_HAS_FIELD(out, qforge_c_availability, score)) out->score = 1;
}

static uint32_t device_count(const qforge_c_backend* b) {
  (void)b;
  return 1;
}

static qforge_c_status* device_info(const qforge_c_backend* b, uint32_t index,
                                    qforge_c_device_info* out, qforge_c_property_fn property,
                                    void* user) {
  (void)b;
  if (index != 0)
    return make_status(QFORGE_C_ERROR_INVALID_ARGUMENT, "%s", "device index; expected 0");
  if (QFORGE_C_HAS_FIELD(out, qforge_c_device_info, name)) out->name = "host CPU";
  if (QFORGE_C_HAS_FIELD(out, qforge_c_device_info, kind)) out->kind = "cpu";
  if (property != NULL) property(user, "language", "C11");
  return NULL;
}

/* ---- what it runs ---- */
typedef struct quantize_op {
  uint32_t kind;  /* QFORGE_C_OP_QUANTIZE or QFORGE_C_OP_DEQUANTIZE */
  uint32_t dtype; /* int8 or uint8 */
  uint64_t count; /* elements */
  float scale;
  int32_t zero_point, qmin, qmax;
} quantize_op;

/* Reads `op` into `q`: NULL when this plugin runs it, else an UNSUPPORTED status saying why. */
static qforge_c_status* parse_op(const qforge_c_op* op, quantize_op* q) {
  if (!QFORGE_C_HAS_FIELD(op, qforge_c_op, desc) || op->desc == NULL)
    return make_status(QFORGE_C_ERROR_INVALID_ARGUMENT, "%s",
                       PLUGIN_NAME ": op without descriptor");
  if (op->kind != QFORGE_C_OP_QUANTIZE && op->kind != QFORGE_C_OP_DEQUANTIZE)
    return make_status(QFORGE_C_ERROR_UNSUPPORTED, "%s",
                       PLUGIN_NAME " runs quantize and dequantize only");
  const qforge_c_quantize_desc* d = op->desc;
  if (!QFORGE_C_HAS_FIELD(d, qforge_c_quantize_desc, float_type) || d->params == NULL ||
      !QFORGE_C_HAS_FIELD(d->params, qforge_c_params, count))
    return make_status(QFORGE_C_ERROR_INVALID_ARGUMENT, "%s",
                       PLUGIN_NAME ": quantize descriptor or params shorter than version 1");
  const qforge_c_params* p = d->params;
  if (d->float_type != QFORGE_C_FLOAT_F32)
    return make_status(QFORGE_C_ERROR_UNSUPPORTED, "%s",
                       PLUGIN_NAME " converts float32 only; got float16 or bfloat16");
  if (p->dtype != QFORGE_C_DTYPE_INT8 && p->dtype != QFORGE_C_DTYPE_UINT8)
    return make_status(QFORGE_C_ERROR_UNSUPPORTED, "%s", PLUGIN_NAME " runs int8 and uint8 only");
  if (p->granularity != QFORGE_C_GRANULARITY_PER_TENSOR || p->count != 1)
    return make_status(QFORGE_C_ERROR_UNSUPPORTED, "%s",
                       PLUGIN_NAME " runs per-tensor params only");
  if (p->mapping != QFORGE_C_MAPPING_AFFINE && p->mapping != QFORGE_C_MAPPING_SYMMETRIC)
    return make_status(QFORGE_C_ERROR_UNSUPPORTED, "%s",
                       PLUGIN_NAME " runs the affine and symmetric mappings only");
  uint64_t count = 1;
  for (uint64_t i = 0; i < d->rank; ++i) {
    /* The host checked the shape against qforge's size limit; a negative extent is refused. */
    if (d->shape[i] < 0)
      return make_status(QFORGE_C_ERROR_SHAPE_MISMATCH, "%s", PLUGIN_NAME ": negative extent");
    count *= (uint64_t)d->shape[i];
  }
  const int is_signed = p->dtype == QFORGE_C_DTYPE_INT8;
  const int symmetric = p->mapping == QFORGE_C_MAPPING_SYMMETRIC;
  q->kind = op->kind;
  q->dtype = p->dtype;
  q->count = count;
  q->scale = p->scales[0];
  q->zero_point = p->zero_points[0];
  /* dtype.h: symmetric schemes use the narrow range. */
  q->qmin = is_signed ? (symmetric ? -127 : -128) : (symmetric ? 1 : 0);
  q->qmax = is_signed ? 127 : 255;
  return NULL;
}

static qforge_c_status* supports(const qforge_c_backend* b, const qforge_c_op* op,
                                 qforge_c_string_fn add_kernel, void* user) {
  (void)b;
  quantize_op q;
  qforge_c_status* s = parse_op(op, &q);
  if (s == NULL) add_kernel(user, KERNEL_NAME);
  return s;
}

/* ---- numerics, as qforge's reference (core/src/reference) ---- */

/* Round half to even, independent of the floating-point environment. */
static float round_half_even(float v) {
  const float a = fabsf(v);
  if (!(a < 8388608.0f)) return v; /* already an integer, or inf/NaN */
  const float f = floorf(a);
  const float d = a - f;
  float r = f;
  if (d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f)) r = f + 1.0f;
  return copysignf(r, v);
}

static int32_t quantize_value(float x, const quantize_op* q) {
  const float v = x / q->scale;
  if (isnan(v)) return q->zero_point;
  /* In double, where every in-range sum is exact and an out-of-range one stays out of range. */
  const double r = (double)round_half_even(v) + q->zero_point;
  if (r <= q->qmin) return q->qmin;
  if (r >= q->qmax) return q->qmax;
  return (int32_t)r;
}

struct qforge_c_plan {
  quantize_op op;
};

static qforge_c_status* make_plan(qforge_c_backend* b, const qforge_c_op* op,
                                  const qforge_c_plan_request* request, qforge_c_plan** out) {
  (void)b;
  *out = NULL;
  if (request->device != 0)
    return make_status(QFORGE_C_ERROR_INVALID_ARGUMENT, "%s",
                       PLUGIN_NAME ": plan for a device other than 0; expected 0");
  if (request->kernel != NULL && request->kernel[0] != '\0' &&
      strcmp(request->kernel, KERNEL_NAME) != 0)
    return make_status(QFORGE_C_ERROR_UNSUPPORTED,
                       PLUGIN_NAME
                       ": kernel '%s' is not one of this plugin's; expected " KERNEL_NAME,
                       request->kernel);
  quantize_op q;
  qforge_c_status* s = parse_op(op, &q);
  if (s != NULL) return s;
  qforge_c_plan* plan = malloc(sizeof *plan);
  if (plan == NULL) return &out_of_memory;
  plan->op = q;
  *out = plan;
  return NULL;
}

static void plan_info(const qforge_c_plan* plan, qforge_c_plan_info* out) {
  (void)plan;
  if (QFORGE_C_HAS_FIELD(out, qforge_c_plan_info, kernel)) out->kernel = KERNEL_NAME;
  if (QFORGE_C_HAS_FIELD(out, qforge_c_plan_info, concurrency))
    out->concurrency = QFORGE_C_PLAN_CONCURRENT;
}

static qforge_c_status* plan_run(const qforge_c_plan* plan, const void* const* inputs,
                                 uint32_t input_count, void* const* outputs,
                                 uint32_t output_count) {
  if (input_count != 1 || output_count != 1)
    return make_status(QFORGE_C_ERROR_INVALID_ARGUMENT, "%s",
                       PLUGIN_NAME ": expected one input and one output");
  const quantize_op* q = &plan->op;
  if (q->kind == QFORGE_C_OP_QUANTIZE) {
    const float* x = inputs[0];
    if (q->dtype == QFORGE_C_DTYPE_INT8) {
      int8_t* out = outputs[0];
      for (uint64_t i = 0; i < q->count; ++i) out[i] = (int8_t)quantize_value(x[i], q);
    } else {
      uint8_t* out = outputs[0];
      for (uint64_t i = 0; i < q->count; ++i) out[i] = (uint8_t)quantize_value(x[i], q);
    }
  } else {
    float* x = outputs[0];
    if (q->dtype == QFORGE_C_DTYPE_INT8) {
      const int8_t* in = inputs[0];
      for (uint64_t i = 0; i < q->count; ++i) x[i] = (float)(in[i] - q->zero_point) * q->scale;
    } else {
      const uint8_t* in = inputs[0];
      for (uint64_t i = 0; i < q->count; ++i) x[i] = (float)(in[i] - q->zero_point) * q->scale;
    }
  }
  return NULL;
}

static void plan_destroy(qforge_c_plan* plan) { free(plan); }

static const qforge_c_plugin table = {
    QFORGE_C_API_VERSION,
    sizeof(qforge_c_plugin),
    PLUGIN_NAME,
    "0.1.0",
    status_code,
    status_message,
    status_release,
    create_backend,
    destroy_backend,
    availability,
    device_count,
    device_info,
    NULL, /* set_option: no options */
    supports,
    make_plan,
    plan_info,
    plan_run,
    plan_destroy,
};

EXPORT const qforge_c_plugin* qforge_plugin_c_entry(uint32_t host_version) {
  /* Version 1 is the first; every later host still reads a version 1 table. */
  return host_version >= 1 ? &table : NULL;
}

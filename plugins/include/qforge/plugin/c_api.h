/* The qforge C plugin boundary: a plugin exports `qforge_plugin_c_entry` and returns a table of
 * plain C functions. Nothing of C++ crosses it: ops are data (an op kind plus a descriptor
 * struct), errors are status objects, and the work is done by plans (plan.h's model: made once
 * for one op, one device and one kernel, then run on arrays). A plugin written against this
 * header may be written in C, or in C++ with qforge/plugin/c_sdk.h, and need not share a C++
 * ABI with the host. docs/PLUGINS.md ("C boundary") is the user's view.
 *
 * Layout rules (after ONNX Runtime's versioned plugin structs):
 *   - Every struct begins with `version` (the QFORGE_C_API_VERSION its writer was built with)
 *     and `struct_size` (sizeof the struct its writer was built with).
 *   - Structs only grow at the end. A reader uses a field only when the writer's struct_size
 *     covers it (QFORGE_C_HAS_FIELD); a field appended later has a zero value meaning what older
 *     versions meant, so a reader that does not know it behaves as before.
 *   - Enumerations are uint32_t with the numbers written here, never reused. A plugin refuses
 *     (QFORGE_C_ERROR_UNSUPPORTED) a value it does not know.
 *
 * Ownership: a status returned by the plugin belongs to the host, which reads it and frees it
 * with the table's status_release. Backends and plans are made and destroyed by the plugin on
 * the host's request. Pointers the host passes in (descriptors, params, weights, names) are
 * valid for the duration of the call only; the plugin copies what it keeps. Strings the plugin
 * hands out in the table, in availability and device info stay valid while the backend lives;
 * plan_info's kernel while the plan lives.
 *
 * Threading: the host calls the backend functions (availability, devices, supports, make_plan,
 * set_option) of one backend from one thread at a time. plan_run of a plan whose concurrency
 * is QFORGE_C_PLAN_CONCURRENT may be called from several threads at once; the host serialises
 * the runs of QFORGE_C_PLAN_SERIALIZED plans of one backend with its backend functions.
 * plan_info and plan_destroy touch one plan and may come from any thread, alongside calls on
 * the backend and on its other plans; the host destroys every plan before its backend.
 *
 * Memory: versions 1 to 3 serve host memory only: every array pointer is a host pointer.
 *
 * Version 2 appended qlinear_matmul's int32 bias (has_bias, which version 1 left unused for
 * qlinear_matmul) and output clamp (activation, clamp_min, clamp_max) to qforge_c_matmul_desc.
 * The host never asks a version-1 table for either: it refuses them for that plugin itself.
 *
 * Version 3 appended a_params_at_run to qforge_c_matmul_desc: matmul_dequant with per-tensor A
 * whose scale and zero point are inputs of every run (float32 `a_scale` and int32
 * `a_zero_point`, host pointers, after the other inputs; docs/PLUGINS.md). The host sends such
 * an op only to tables of version 3 or later. */
#ifndef QFORGE_PLUGIN_C_API_H
#define QFORGE_PLUGIN_C_API_H

#include <stddef.h>
#include <stdint.h>

#define QFORGE_C_API_VERSION 3u
#define QFORGE_C_ENTRY_SYMBOL "qforge_plugin_c_entry"

/* Whether the struct at `ptr` (of type `type`, written with ptr->struct_size) holds `field`. */
#define QFORGE_C_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes (qforge::ErrorCode) ---- */
#define QFORGE_C_ERROR_INVALID_ARGUMENT 1u
#define QFORGE_C_ERROR_SHAPE_MISMATCH 2u
#define QFORGE_C_ERROR_OVERFLOW 3u
#define QFORGE_C_ERROR_UNSUPPORTED 4u
#define QFORGE_C_ERROR_UNAVAILABLE 5u
#define QFORGE_C_ERROR_PLUGIN_LOAD 6u
#define QFORGE_C_ERROR_IO 7u
#define QFORGE_C_ERROR_CORRUPT_DATA 8u
#define QFORGE_C_ERROR_BACKEND 9u
#define QFORGE_C_ERROR_INTERNAL 10u

/* ---- op kinds (qforge::OpKind) and the descriptor each one's `desc` points to ---- */
#define QFORGE_C_OP_QUANTIZE 0u                /* qforge_c_quantize_desc */
#define QFORGE_C_OP_DEQUANTIZE 1u              /* qforge_c_quantize_desc */
#define QFORGE_C_OP_REQUANTIZE 2u              /* qforge_c_requantize_desc */
#define QFORGE_C_OP_MATMUL_INTEGER 3u          /* qforge_c_matmul_desc */
#define QFORGE_C_OP_MATMUL_DEQUANT 4u          /* qforge_c_matmul_desc */
#define QFORGE_C_OP_QLINEAR_MATMUL 5u          /* qforge_c_matmul_desc */
#define QFORGE_C_OP_DYNAMIC_QUANTIZE_LINEAR 6u /* qforge_c_dynamic_quantize_desc */
#define QFORGE_C_OP_LINEAR_FORWARD 7u          /* qforge_c_linear_desc */
#define QFORGE_C_OP_LINEAR_BACKWARD 8u         /* qforge_c_linear_desc */
#define QFORGE_C_OP_CONV_INTEGER 9u            /* qforge_c_conv_desc */
#define QFORGE_C_OP_QLINEAR_CONV 10u           /* qforge_c_conv_desc */
#define QFORGE_C_OP_CONV_DEQUANT 11u           /* qforge_c_conv_desc */
#define QFORGE_C_OP_MATMUL_WEIGHT_ONLY 12u     /* qforge_c_matmul_desc */

/* ---- enumerations of the descriptors (qforge's enums, same order) ---- */
#define QFORGE_C_DTYPE_INT8 0u
#define QFORGE_C_DTYPE_UINT8 1u
#define QFORGE_C_DTYPE_INT16 2u
#define QFORGE_C_DTYPE_UINT16 3u
#define QFORGE_C_DTYPE_INT4 4u
#define QFORGE_C_DTYPE_UINT4 5u
#define QFORGE_C_DTYPE_BINARY 6u

#define QFORGE_C_MAPPING_AFFINE 0u
#define QFORGE_C_MAPPING_SYMMETRIC 1u
#define QFORGE_C_MAPPING_LOGARITHMIC 2u

#define QFORGE_C_GRANULARITY_PER_TENSOR 0u
#define QFORGE_C_GRANULARITY_PER_CHANNEL 1u
#define QFORGE_C_GRANULARITY_BLOCK 2u

#define QFORGE_C_FLOAT_F32 0u
#define QFORGE_C_FLOAT_F16 1u
#define QFORGE_C_FLOAT_BF16 2u

#define QFORGE_C_LAYOUT_KN 0u
#define QFORGE_C_LAYOUT_NK 1u

#define QFORGE_C_REQUANT_FLOAT_MULTIPLIER 0u
#define QFORGE_C_REQUANT_FIXED_POINT 1u

#define QFORGE_C_CONV_NCHW 0u
#define QFORGE_C_CONV_NHWC 1u

#define QFORGE_C_CONV_BIAS_NONE 0u
#define QFORGE_C_CONV_BIAS_F32 1u
#define QFORGE_C_CONV_BIAS_INT32 2u

#define QFORGE_C_ACTIVATION_NONE 0u
#define QFORGE_C_ACTIVATION_RELU 1u
#define QFORGE_C_ACTIVATION_RELU6 2u
#define QFORGE_C_ACTIVATION_CLAMP 3u

#define QFORGE_C_PLAN_CONCURRENT 0u
#define QFORGE_C_PLAN_SERIALIZED 1u

/* ---- descriptors (written by the host; see op_desc.h and docs/NUMERICS.md for meaning) ---- */

/* Quantization params: `count` scales and `count` zero points (one per tensor, channel or
 * block), already validated by the host. */
typedef struct qforge_c_params {
  uint32_t version;
  uint32_t struct_size;
  uint32_t dtype;       /* QFORGE_C_DTYPE_* */
  uint32_t mapping;     /* QFORGE_C_MAPPING_* */
  uint32_t granularity; /* QFORGE_C_GRANULARITY_* */
  int32_t axis;         /* per channel; negative counts from the end */
  int64_t block_size;   /* block */
  const float* scales;
  const int32_t* zero_points;
  uint64_t count;
} qforge_c_params;

/* quantize (float -> codes) and dequantize (codes -> float32). */
typedef struct qforge_c_quantize_desc {
  uint32_t version;
  uint32_t struct_size;
  const int64_t* shape;
  uint64_t rank;
  const qforge_c_params* params;
  uint32_t float_type; /* QFORGE_C_FLOAT_*: quantize's input; dequantize writes float32 */
} qforge_c_quantize_desc;

typedef struct qforge_c_requantize_desc {
  uint32_t version;
  uint32_t struct_size;
  const int64_t* shape;
  uint64_t rank;
  const float* multipliers;
  uint64_t multiplier_count;
  int32_t axis;
  uint32_t out_dtype;
  int32_t out_zero_point;
  uint32_t mode; /* QFORGE_C_REQUANT_* */
} qforge_c_requantize_desc;

/* matmul_integer, matmul_dequant, qlinear_matmul, matmul_weight_only. */
typedef struct qforge_c_matmul_desc {
  uint32_t version;
  uint32_t struct_size;
  int64_t m, n, k;
  const qforge_c_params* a;
  const qforge_c_params* b;
  uint32_t b_layout;        /* QFORGE_C_LAYOUT_* */
  uint32_t has_bias;        /* 0 or 1 */
  uint32_t out_type;        /* QFORGE_C_FLOAT_* */
  uint32_t requant_mode;    /* QFORGE_C_REQUANT_* */
  const qforge_c_params* y; /* qlinear_matmul's output params; NULL when none */
  /* Version 2: qlinear_matmul's clamp on the quantized output, as qforge_c_conv_desc's. */
  uint32_t activation; /* QFORGE_C_ACTIVATION_* */
  float clamp_min, clamp_max;
  /* Version 3: matmul_dequant's A params as run-time inputs (MatmulDesc::a_params_at_run); 0 or
   * 1. When 1, `a` gives only A's dtype and scheme (per tensor). */
  uint32_t a_params_at_run;
} qforge_c_matmul_desc;

typedef struct qforge_c_dynamic_quantize_desc {
  uint32_t version;
  uint32_t struct_size;
  const int64_t* shape;
  uint64_t rank;
} qforge_c_dynamic_quantize_desc;

/* linear_forward, linear_backward. */
typedef struct qforge_c_linear_desc {
  uint32_t version;
  uint32_t struct_size;
  int64_t m, n, k;
  const qforge_c_params* w;
  uint32_t has_bias;
} qforge_c_linear_desc;

/* conv_integer, qlinear_conv, conv_dequant. */
typedef struct qforge_c_conv_desc {
  uint32_t version;
  uint32_t struct_size;
  uint32_t layout; /* QFORGE_C_CONV_NCHW / NHWC */
  uint32_t bias;   /* QFORGE_C_CONV_BIAS_* */
  int64_t n, c, h, w;
  int64_t out_channels;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t dilation_h, dilation_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t groups;
  const qforge_c_params* x_params;
  const qforge_c_params* w_params;
  const qforge_c_params* y_params; /* qlinear_conv's output params; NULL when none */
  uint32_t requant_mode;           /* QFORGE_C_REQUANT_* */
  uint32_t activation;             /* QFORGE_C_ACTIVATION_* */
  float clamp_min, clamp_max;
} qforge_c_conv_desc;

/* One op: its kind and a pointer to the descriptor struct that kind takes (listed above). */
typedef struct qforge_c_op {
  uint32_t version;
  uint32_t struct_size;
  uint32_t kind; /* QFORGE_C_OP_* */
  const void* desc;
} qforge_c_op;

/* ---- what the plugin answers ---- */

/* Opaque objects, defined by each plugin. */
typedef struct qforge_c_status qforge_c_status;
typedef struct qforge_c_backend qforge_c_backend;
typedef struct qforge_c_plan qforge_c_plan;

/* Out structs are set up by the host (version, struct_size, every other field zero); the plugin
 * writes only the fields that struct_size covers. */
typedef struct qforge_c_availability {
  uint32_t version;
  uint32_t struct_size;
  uint32_t usable;    /* 0 or 1 */
  int32_t score;      /* orders usable backends; 0 = unusable */
  const char* reason; /* why not usable; NULL or "" when usable */
} qforge_c_availability;

typedef struct qforge_c_device_info {
  uint32_t version;
  uint32_t struct_size;
  const char* name;      /* "Intel(R) Xeon ..." */
  const char* kind;      /* "cpu", "gpu" */
  uint64_t memory_bytes; /* 0 when unknown */
} qforge_c_device_info;

typedef struct qforge_c_plan_request {
  uint32_t version;
  uint32_t struct_size;
  uint32_t device;    /* index below device_count */
  const char* kernel; /* one of the names supports() gave; NULL or "" = the plugin's choice */
  /* NULL, or one entry per input of the op (op_table.h order): a non-NULL entry fixes that
   * weight operand to these host bytes for the plan's life (copy them before returning). */
  const void* const* weights;
  uint32_t weight_count;
} qforge_c_plan_request;

typedef struct qforge_c_plan_info {
  uint32_t version;
  uint32_t struct_size;
  const char* kernel;   /* the kernel the plan runs; never NULL or "" */
  uint32_t concurrency; /* QFORGE_C_PLAN_* */
} qforge_c_plan_info;

typedef void (*qforge_c_string_fn)(void* user, const char* text);
typedef void (*qforge_c_property_fn)(void* user, const char* key, const char* value);

/* The table. Every function that can fail returns NULL on success or a status the host
 * releases. Functions marked optional may be NULL. */
typedef struct qforge_c_plugin {
  /* The API version this table is written for: at most the host_version the entry was given
   * (a table newer than the host is refused). */
  uint32_t version;
  uint32_t struct_size; /* sizeof(qforge_c_plugin) the plugin was built with */
  const char* name;     /* "my_backend": what users and the registry call it */
  const char* plugin_version;

  /* ---- status objects ---- */
  uint32_t (*status_code)(const qforge_c_status* status);       /* QFORGE_C_ERROR_* */
  const char* (*status_message)(const qforge_c_status* status); /* a complete sentence */
  void (*status_release)(qforge_c_status* status);

  /* ---- backend instances ---- */
  qforge_c_status* (*create_backend)(qforge_c_backend** out);
  void (*destroy_backend)(qforge_c_backend* backend);
  void (*availability)(const qforge_c_backend* backend, qforge_c_availability* out);
  uint32_t (*device_count)(const qforge_c_backend* backend);
  /* Fills `out` for device `index`; further facts worth printing go to `property` (optional
   * for the plugin to call). */
  qforge_c_status* (*device_info)(const qforge_c_backend* backend, uint32_t index,
                                  qforge_c_device_info* out, qforge_c_property_fn property,
                                  void* user);
  /* Optional. Sets *known to 1 when the key is the backend's; a bad value is an error. */
  qforge_c_status* (*set_option)(qforge_c_backend* backend, const char* key, const char* value,
                                 uint32_t* known);

  /* ---- ops as plans ---- */
  /* NULL when the backend runs `op`, after calling add_kernel once per kernel that can (best
   * first, at least one); a status with QFORGE_C_ERROR_UNSUPPORTED and the reason when not. */
  qforge_c_status* (*supports)(const qforge_c_backend* backend, const qforge_c_op* op,
                               qforge_c_string_fn add_kernel, void* user);
  qforge_c_status* (*make_plan)(qforge_c_backend* backend, const qforge_c_op* op,
                                const qforge_c_plan_request* request, qforge_c_plan** out);
  void (*plan_info)(const qforge_c_plan* plan, qforge_c_plan_info* out);
  /* Reads inputs and writes outputs (op_table.h order and sizes; the host checked counts and
   * pointers). A weight fixed at make_plan has a NULL slot. */
  qforge_c_status* (*plan_run)(const qforge_c_plan* plan, const void* const* inputs,
                               uint32_t input_count, void* const* outputs, uint32_t output_count);
  void (*plan_destroy)(qforge_c_plan* plan);
} qforge_c_plugin;

/* The entry point. `host_version` is the QFORGE_C_API_VERSION of the host; the plugin answers
 * with a table of that version or an older one, or NULL when it cannot serve that host. */
typedef const qforge_c_plugin* (*qforge_plugin_c_entry_fn)(uint32_t host_version);

#ifdef __cplusplus
}
#endif

#endif /* QFORGE_PLUGIN_C_API_H */

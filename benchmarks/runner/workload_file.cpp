#include "workload_file.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "qforge/error.h"
#include "qforge/input_file.h"

namespace qforge::bench {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, where + ": " + what);
}

// A JSON integer in [lo, hi], checked before conversion: 4294967297 is not axis 1, 3.0 and 1e9
// are not integers.
std::int64_t integer_in(const json& v, std::int64_t lo, std::int64_t hi, const std::string& where) {
  const auto bad = [&] {
    fail(where, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                    "], got " + v.dump());
  };
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) bad();
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (!v.is_number_integer()) bad();
  const auto i = v.get<std::int64_t>();
  if (i < lo || i > hi) bad();
  return i;
}

// Elements of a shape, each extent already <= kMaxWorkloadExtent; saturates instead of
// overflowing (the byte limit rejects anything that large anyway).
std::uint64_t elements(std::initializer_list<std::int64_t> extents) {
  unsigned __int128 n = 1;
  for (std::int64_t e : extents) {
    n *= static_cast<std::uint64_t>(e);
    if (n > std::numeric_limits<std::uint64_t>::max() / 16)
      return std::numeric_limits<std::uint64_t>::max() / 16;
  }
  return static_cast<std::uint64_t>(n);
}
std::uint64_t elements(const Shape& s) {
  unsigned __int128 n = 1;
  for (std::int64_t e : s) {
    n *= static_cast<std::uint64_t>(e);
    if (n > std::numeric_limits<std::uint64_t>::max() / 16)
      return std::numeric_limits<std::uint64_t>::max() / 16;
  }
  return static_cast<std::uint64_t>(n);
}

// Refuses a workload whose operands (`operand_elements` in all, 8 bytes each) exceed
// kMaxWorkloadBytes, before anything of that size is allocated.
void check_bytes(const std::string& where, std::uint64_t operand_elements) {
  const std::uint64_t bytes = operand_elements * 8;
  if (operand_elements > kMaxWorkloadBytes / 8)
    fail(where, "its operands would take about " + std::to_string(bytes >> 20) +
                    " MiB; expected at most " + std::to_string(kMaxWorkloadBytes >> 20) +
                    " MiB per workload (smaller extents)");
}

// Accessors that name the field when it is missing or has the wrong type.
class Obj {
 public:
  Obj(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j.is_object()) fail(where_, "expected an object");
  }
  const std::string& where() const { return where_; }
  std::string field(const char* key) const { return where_ + "." + key; }
  bool has(const char* key) const { return j_.contains(key); }
  const json& at(const char* key) const {
    if (!j_.contains(key)) fail(where_, std::string("missing field '") + key + "'");
    return j_.at(key);
  }
  std::string text(const char* key, const std::string& fallback = "") const {
    if (!has(key)) {
      if (fallback.empty()) at(key);
      return fallback;
    }
    if (!j_.at(key).is_string()) fail(field(key), "expected a string");
    return j_.at(key).get<std::string>();
  }
  std::int64_t extent(const char* key) const {
    return integer_in(at(key), 0, kMaxWorkloadExtent, field(key));
  }
  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(field(key), "expected true or false");
    return j_.at(key).get<bool>();
  }
  Shape shape(const char* key) const {
    const json& v = at(key);
    if (!v.is_array() || v.empty()) fail(field(key), "expected a non-empty array of integers >= 0");
    Shape s;
    if (v.size() > 8)
      fail(field(key), "expected at most 8 dimensions, got " + std::to_string(v.size()));
    for (const auto& d : v) {
      if (!d.is_number_integer() ||
          (d.is_number_integer() && !d.is_number_unsigned() && d.get<std::int64_t>() < 0))
        fail(field(key), "expected a non-empty array of integers >= 0, got " + v.dump());
      s.push_back(integer_in(d, 0, kMaxWorkloadExtent, field(key)));
    }
    return s;
  }
  // Every key must be one this op knows: a typo is an error, not a silently ignored field.
  void only(std::initializer_list<const char*> keys) const {
    std::set<std::string> known(keys.begin(), keys.end());
    for (const auto& [k, v] : j_.items()) {
      if (known.count(k)) continue;
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      fail(where_, "unknown field '" + k + "'; expected one of " + list);
    }
  }

 private:
  const json& j_;
  std::string where_;
};

DType dtype_of(const Obj& o, const char* key, const std::string& fallback = "") {
  const std::string t = o.text(key, fallback);
  if (auto d = parse_dtype(t)) return *d;
  fail(o.field(key),
       "unknown dtype '" + t + "'; expected int8, uint8, int16, uint16, int4, uint4 or binary");
}

FloatType float_type_of(const Obj& o, const char* key) {
  const std::string t = o.text(key, "float32");
  if (t == "float32" || t == "f32") return FloatType::f32;
  if (t == "float16" || t == "f16") return FloatType::f16;
  if (t == "bfloat16" || t == "bf16") return FloatType::bf16;
  fail(o.field(key), "unknown float type '" + t + "'; expected float32, float16 or bfloat16");
}

// "per_channel_symmetric" with optional "axis" / "block_size" fields next to it.
Scheme scheme_of(const Obj& o, const char* key, int default_axis) {
  const std::string s = o.text(key);
  Scheme r;
  if (s == "per_tensor_affine") r = Scheme::per_tensor_affine();
  else if (s == "per_tensor_symmetric") r = Scheme::per_tensor_symmetric();
  else if (s == "per_channel_affine") r = Scheme::per_channel_affine(default_axis);
  else if (s == "per_channel_symmetric") r = Scheme::per_channel_symmetric(default_axis);
  else if (s == "block_affine") r = Scheme::block_affine();
  else if (s == "block_symmetric") r = Scheme::block_symmetric();
  else if (s == "logarithmic") r = Scheme::logarithmic();
  else
    fail(o.field(key),
         "unknown scheme '" + s +
             "'; expected per_tensor_affine, per_tensor_symmetric, per_channel_affine, "
             "per_channel_symmetric, block_affine, block_symmetric or logarithmic");
  if (o.has("axis")) {
    const json& a = o.at("axis");
    if (!a.is_number_integer()) fail(o.field("axis"), "expected an integer");
    if (r.granularity != Granularity::per_channel)
      fail(o.field("axis"), "only per_channel schemes take an axis");
    r.axis = static_cast<int>(integer_in(a, -8, 7, o.field("axis")));
  }
  if (o.has("block_size")) {
    const json& b = o.at("block_size");
    if (!b.is_number_integer()) fail(o.field("block_size"), "expected an integer >= 1");
    if (r.granularity != Granularity::block)
      fail(o.field("block_size"), "only block schemes take a block_size");
    r.block_size = integer_in(b, 1, kMaxWorkloadExtent, o.field("block_size"));
  }
  return r;
}

Residency residency_of(const Obj& o) {
  const std::string r = o.text("residency", "host");
  if (r == "host") return Residency::host;
  if (r == "device") return Residency::device;
  fail(o.field("residency"), "unknown residency '" + r + "'; expected host or device");
}

// workload_params with the failure attributed to the operand's field.
QuantizationParams params(const Obj& o, DType t, const Scheme& s, const Shape& shape) {
  try {
    return workload_params(t, s, shape);
  } catch (const Error& e) {
    fail(o.where(), e.what());
  }
}

OpDesc matmul_of(const Obj& w, OpKind op) {
  std::initializer_list<const char*> keys = {"name",     "op", "residency", "m",        "n",
                                             "k",        "a",  "b",         "b_layout", "bias",
                                             "out_type", "y",  "mode"};
  w.only(keys);
  const std::int64_t m = w.extent("m"), n = w.extent("n"), k = w.extent("k");
  // A and B codes, the int32 / float output, and Y for qlinear_matmul.
  check_bytes(w.where(), elements({m, k}) + elements({k, n}) + 2 * elements({m, n}));
  const std::string layout = w.text("b_layout", "kn");
  if (layout != "kn" && layout != "nk")
    fail(w.field("b_layout"), "unknown layout '" + layout + "'; expected kn or nk");
  const MatrixLayout l = layout == "kn" ? MatrixLayout::kn : MatrixLayout::nk;
  const Obj a(w.at("a"), w.field("a")), b(w.at("b"), w.field("b"));
  a.only({"dtype", "scheme", "axis", "block_size"});
  b.only({"dtype", "scheme", "axis", "block_size"});
  const Scheme as = scheme_of(a, "scheme", 0);
  if (as.granularity == Granularity::block ||
      (as.granularity == Granularity::per_channel && as.axis != 0))
    fail(a.field("scheme"), "A takes per_tensor or per_channel with axis 0 (one pair per row)");
  const int n_axis = l == MatrixLayout::kn ? 1 : 0;
  const Scheme bs = scheme_of(b, "scheme", n_axis);
  if (bs.granularity == Granularity::per_channel && bs.axis != n_axis && bs.axis != n_axis - 2)
    fail(b.field("axis"), std::to_string(bs.axis) + " for layout " + layout + "; expected " +
                              std::to_string(n_axis) + " (the N axis)");
  if (bs.granularity == Granularity::block && l != MatrixLayout::nk)
    fail(b.field("scheme"), "block-wise B runs along K; expected \"b_layout\": \"nk\"");
  const Shape b_shape = l == MatrixLayout::kn ? Shape{k, n} : Shape{n, k};
  MatmulDesc d{m,
               n,
               k,
               params(a, dtype_of(a, "dtype"), as, {m, k}),
               params(b, dtype_of(b, "dtype"), bs, b_shape),
               l,
               false,
               FloatType::f32,
               std::nullopt,
               RequantMode::float_multiplier};
  if (op != OpKind::matmul_dequant && (w.has("bias") || w.has("out_type")))
    fail(w.where(), "'bias' and 'out_type' belong to matmul_dequant");
  if (op == OpKind::matmul_dequant) {
    d.has_bias = w.flag("bias", false);
    d.out_type = float_type_of(w, "out_type");
  }
  if (op != OpKind::qlinear_matmul && (w.has("y") || w.has("mode")))
    fail(w.where(), "'y' and 'mode' belong to qlinear_matmul");
  if (op == OpKind::qlinear_matmul) {
    const Obj y(w.at("y"), w.field("y"));
    y.only({"dtype", "scheme"});
    const Scheme ys = scheme_of(y, "scheme", 0);
    if (ys.granularity != Granularity::per_tensor)
      fail(y.field("scheme"), "expected a per_tensor scheme");
    d.y = params(y, dtype_of(y, "dtype"), ys, {m, n});
    const std::string mode = w.text("mode", "float_multiplier");
    if (mode == "fixed_point") d.requant_mode = RequantMode::fixed_point;
    else if (mode != "float_multiplier")
      fail(w.field("mode"),
           "unknown mode '" + mode + "'; expected float_multiplier or fixed_point");
  }
  return {op, d};
}

NamedWorkload workload_of(const json& j, std::size_t index) {
  const Obj w(j, "workloads[" + std::to_string(index) + "]");
  const std::string op_name = w.text("op");
  const auto op = parse_op_kind(op_name);
  if (!op)
    fail(w.field("op"), "unknown op '" + op_name +
                            "'; expected one of quantize, dequantize, requantize, matmul_integer, "
                            "matmul_dequant, qlinear_matmul, dynamic_quantize_linear, "
                            "linear_forward, linear_backward");
  const std::string name = w.text("name", op_name + "_" + std::to_string(index));
  const Residency residency = residency_of(w);
  switch (*op) {
    case OpKind::quantize:
    case OpKind::dequantize: {
      w.only({"name", "op", "residency", "shape", "dtype", "scheme", "axis", "block_size",
              "float_type"});
      const Shape shape = w.shape("shape");
      check_bytes(w.where(), 2 * elements(shape));  // floats in, codes out (or back)
      const QuantizeDesc d{
          shape, params(w, dtype_of(w, "dtype"), scheme_of(w, "scheme", 0), shape),
          *op == OpKind::quantize ? float_type_of(w, "float_type") : FloatType::f32};
      return {name, {{*op, d}, residency}};
    }
    case OpKind::requantize: {
      w.only({"name", "op", "residency", "shape", "out_dtype", "mode", "per_axis", "axis"});
      RequantizeDesc d;
      d.shape = w.shape("shape");
      check_bytes(w.where(), 2 * elements(d.shape));  // int32 in, codes out
      d.out_dtype = dtype_of(w, "out_dtype", "int8");
      if (d.out_dtype != DType::int8 && d.out_dtype != DType::uint8)
        fail(w.field("out_dtype"), "expected int8 or uint8");
      d.out_zero_point = d.out_dtype == DType::uint8 ? 128 : 0;
      const std::string mode = w.text("mode", "float_multiplier");
      if (mode == "fixed_point") d.mode = RequantMode::fixed_point;
      else if (mode != "float_multiplier")
        fail(w.field("mode"),
             "unknown mode '" + mode + "'; expected float_multiplier or fixed_point");
      d.axis = -1;
      if (w.has("axis")) {
        d.axis = static_cast<int>(integer_in(w.at("axis"), -8, 7, w.field("axis")));
      }
      const int rank = static_cast<int>(d.shape.size());
      const int axis = d.axis < 0 ? d.axis + rank : d.axis;
      if (axis < 0 || axis >= rank)
        fail(w.field("axis"), std::to_string(d.axis) + " is not an axis of the shape");
      d.multipliers.assign(w.flag("per_axis", false)
                               ? static_cast<std::size_t>(d.shape[static_cast<std::size_t>(axis)])
                               : 1,
                           1.0f / 1024);
      return {name, {{*op, d}, residency}};
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: return {name, {matmul_of(w, *op), residency}};
    case OpKind::dynamic_quantize_linear: {
      w.only({"name", "op", "residency", "shape"});
      const Shape shape = w.shape("shape");
      check_bytes(w.where(), 2 * elements(shape));
      return {name, {{*op, DynamicQuantizeDesc{shape}}, residency}};
    }
    case OpKind::linear_forward:
    case OpKind::linear_backward: {
      w.only({"name", "op", "residency", "m", "n", "k", "w_scheme", "bias"});
      const std::int64_t m = w.extent("m"), n = w.extent("n"), k = w.extent("k");
      // X, W, Y (forward); dY, dX, dW and the saved inputs (backward).
      check_bytes(w.where(), 2 * (elements({m, k}) + elements({n, k}) + elements({m, n})));
      const std::string ws = w.text("w_scheme", "per_channel_symmetric");
      Scheme s;
      if (ws == "per_channel_symmetric") s = Scheme::per_channel_symmetric(0);
      else if (ws == "per_tensor_symmetric") s = Scheme::per_tensor_symmetric();
      else
        fail(w.field("w_scheme"), "unknown weight scheme '" + ws +
                                      "'; expected per_channel_symmetric or per_tensor_symmetric");
      const LinearDesc d{m, n, k, params(w, DType::int8, s, {n, k}), w.flag("bias", true)};
      return {name, {{*op, d}, residency}};
    }
    default:
      // Every other kind (convolution, matmul_weight_only, and any kind added later) is
      // refused until it gets fields here, rather than failing to compile.
      fail(w.field("op"), "'" + std::string(to_string(*op)) +
                              "' has no workload-file fields yet; expected a matmul, linear or "
                              "elementwise op (the full suite carries the convolution layers)");
  }
}

}  // namespace

std::vector<NamedWorkload> parse_workloads(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number no double holds (1e400).
    throw Error(ErrorCode::invalid_argument,
                std::string("workload file: not valid JSON: ") + e.what());
  }
  const json* list = &doc;
  if (doc.is_object()) {
    if (!doc.contains("workloads"))
      throw Error(ErrorCode::invalid_argument,
                  "workload file: expected {\"workloads\": [...]} or an array");
    list = &doc.at("workloads");
  }
  if (!list->is_array() || list->empty())
    throw Error(ErrorCode::invalid_argument,
                "workloads: expected a non-empty array of workload objects");
  std::vector<NamedWorkload> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    const std::string where = "workloads[" + std::to_string(i) + "]";
    // The workload's name, when it has one, leads every message about it.
    const std::string named =
        item.is_object() && item.contains("name") && item.at("name").is_string()
            ? "workload '" + item.at("name").get<std::string>() + "': "
            : std::string();
    try {
      out.push_back(workload_of(item, i));
    } catch (const Error& e) {
      throw Error(e.code(), named + e.what());
    } catch (const json::exception& e) {
      // Every access above is checked; this is a safety net that still names the workload.
      throw Error(ErrorCode::invalid_argument, named + where + ": " + e.what());
    }
    if (!names.insert(out.back().name).second)
      throw Error(ErrorCode::invalid_argument,
                  where + ".name: '" + out.back().name + "' is used twice; expected unique names");
  }
  return out;
}

std::vector<NamedWorkload> load_workloads(const std::filesystem::path& file) {
  const std::string text = read_input_file(file, "workload file");  // names the file itself
  try {
    return parse_workloads(text);
  } catch (const Error& e) {
    throw Error(e.code(), file.string() + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::invalid_argument, file.string() + ": " + e.what());
  }
}

}  // namespace qforge::bench

"""qforge for PyTorch models: nn.Linear and nn.Conv2d layers swapped for qforge's quantized
matmul and convolution.

``quantize_(model, recipe, calibration_loader=None)`` resolves the recipe (docs/RECIPES.md)
against the model's ``nn.Linear`` and ``nn.Conv2d`` modules, by module name
(``model.named_modules()``) with op type ``"Linear"`` or ``"Conv2d"``, and replaces each module a
rule quantizes with a :class:`QuantizedLinear` or :class:`QuantizedConv2d`:

- weights quantized once from the float weight ([N, K] for nn.Linear, [O, C / groups, KH, KW] for
  nn.Conv2d) per output channel or per tensor, as the rule says; the float weight stays, so
  ``module.train()`` runs the float layer (training is unchanged) and ``quantize_weights()``
  requantizes after it changed;
- activations ``static`` (calibrated: ``calibration_loader`` is run through the model once, each
  quantized layer's input observed by the rule's calibration method), ``dynamic`` (the range of
  each batch; Linear only) or ``explicit`` (the recipe's scale and zero point);
- in eval mode the forward quantizes the input and runs qforge's fused ``matmul_dequant`` or
  ``conv_dequant`` (a plan per input shape for static and explicit activations, weights and bias
  packed once); dynamic activations run a matmul_dequant plan per batch size (weights and bias
  packed once) that takes each batch's scale and zero point at run.

CPU tensors are handed to qforge through numpy without a copy (contiguous float32). CUDA
tensors run on qforge's cuda plugin without a copy either (static and explicit activations): a
layer prepares, once per device and input shape, its quantize plan and its matmul (or conv)
plan chained in C++ with the quantized activations' buffer between them (uint8 activations as
the int8 codes less 128, the same results bit for bit); a call then allocates the output and
makes one call into qforge with the tensors' device addresses. The plans are prepared with
residency='device' (no staging copies, no synchronisation) and queue on the legacy default
stream, torch's default stream: on another current stream the legacy stream first waits for it
and it waits for the legacy stream afterwards (events, no host synchronisation).
Dynamic uint8 activations (ONNX's DynamicQuantizeLinear) chain a dynamic_quantize_linear plan
(the batch's range, codes, scale and zero point) and that matmul plan in C++ the same way, on
CPU and CUDA tensors; the scale and zero point are host values the matmul plan reads when it
runs, so on CUDA the first plan waits for the range once per call. Dynamic int8 activations run
on CPU tensors (the range in numpy), and raise ValueError on CUDA tensors.

Importing this module needs PyTorch; ``import qforge`` never imports it.
"""

try:
    import torch
    from torch import nn
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"qforge.torch needs PyTorch, which is not installed here ({e})") from e

import threading

import numpy as np

from . import _qforge
from ._accel import default_accelerator
from ._errors import Error
from ._model import _recipe_args

__all__ = ["QuantizedLinear", "QuantizedConv2d", "quantize_", "calibrate"]

P = _qforge.QuantizationParams


def _weight_params(weight, spec):
    """Params of the [N, K] float weight as a rule's weights section says."""
    w = weight.detach().to("cpu", torch.float32).contiguous().numpy()
    g = spec["granularity"]
    if spec.get("rounding", "nearest") != "nearest":
        raise ValueError(f"qforge.torch: weight rounding '{spec['rounding']}' is not supported; "
                         "GPTQ rounding runs in the model layer (qforge.quantize_model); use "
                         "nearest here")
    if g == _qforge.Granularity.block:
        raise ValueError("qforge.torch: block-wise weights are not supported yet; use "
                         "per_channel or per_tensor")
    axis = spec["axis"]
    if g == _qforge.Granularity.per_channel and axis not in (None, 0, -2):
        raise ValueError(f"qforge.torch: per-channel weights along axis {axis}; nn.Linear's "
                         "output channels are axis 0")
    obs = _qforge.MinMaxObserver(axis=0 if g == _qforge.Granularity.per_channel else None)
    obs.observe(w)
    return w, obs.params(spec["dtype"], spec["mapping"])


class _QuantizedLayer(nn.Module):
    """What QuantizedLinear and QuantizedConv2d share: the rule, the accelerator, the float
    weight and bias (kept for training), and the activation params with their calibration."""

    kind = "layer"

    def __init__(self, module, layer, accelerator, name):
        super().__init__()
        if layer.get("weights") is None or layer.get("activations") is None:
            raise ValueError(f"qforge.torch: '{name}': {layer['describe']}; qforge's quantized "
                             f"{self.kind} needs both weights and activations quantized")
        self.weight = module.weight
        self.bias = module.bias
        self.layer = layer
        self.name = name
        self._accelerator = accelerator
        self.activation_params = None
        self._observer = None
        act = layer["activations"]
        if act["mode"] == "explicit":
            if act["mapping"] == _qforge.Mapping.symmetric:
                self.activation_params = P.per_tensor_symmetric(act["dtype"], act["scale"])
            else:
                self.activation_params = P.per_tensor_affine(act["dtype"], act["scale"],
                                                             act["zero_point"])

    @property
    def accelerator(self):
        return self._accelerator or default_accelerator()

    def _cuda_accelerator(self):
        """The accelerator for CUDA tensors: the one given to quantize_ if only the cuda plugin
        may win there (a CPU plugin winning a plan prepared with residency='device' would take
        host memory), else a process-wide one over the cuda plugin alone."""
        if self._accelerator is not None and self._accelerator.policy["plugins"] == ["cuda"]:
            return self._accelerator
        return _default_cuda_accelerator()

    def _float_bias(self):
        return (None if self.bias is None else
                self.bias.detach().to("cpu", torch.float32).contiguous().numpy())

    # ---- calibration (static activations) ----
    def start_calibration(self):
        act = self.layer["activations"]
        self._observer = _qforge.HistogramObserver(method=act["method"],
                                                   percentile=act["percentile"])

    def finish_calibration(self):
        act = self.layer["activations"]
        if self._observer is None or not self._observer.has_data:
            raise ValueError(f"qforge.torch: '{self.name}' saw no calibration data")
        self.activation_params = self._observer.params(act["dtype"], act["mapping"])
        self._observer = None
        self._plans = {}

    def _float_path(self, x):
        """Observes x while calibrating; True when the float layer must run (training or
        calibrating). Otherwise checks the device."""
        if self._observer is not None:
            self._observer.observe(x.detach().to(torch.float32).contiguous().cpu().numpy())
        if self.training or self._observer is not None:
            return True
        if x.device.type not in ("cpu", "cuda"):
            raise ValueError(f"qforge.torch: '{self.name}' got a tensor on {x.device}; qforge "
                             "runs CPU and CUDA tensors")
        return False

    def _cuda_run(self, key, device, codes_dtype, in_shape, out_shape, make,
                  chain=_qforge._DeviceChain):
        """The _DeviceRun of `key` for CUDA tensors of in_shape on `device`, its quantize and
        layer plans made by make(accelerator) once and joined by `chain`; each must run on the
        tensor's device. codes_dtype: the quantized activations' dtype."""
        run = self._plans.get(key)
        if run is None:
            index = device.index or 0
            plans = make(self._cuda_accelerator())
            for plan in plans:
                if plan.host_memory or plan.device != index:
                    where = "the host" if plan.host_memory else f"cuda:{plan.device}"
                    raise ValueError(f"qforge.torch: '{self.name}': the plan for cuda:{index} "
                                     f"runs on {where} ({plan!r}); qforge's cuda plugin numbers "
                                     "devices as CUDA does, so pass an accelerator with that "
                                     "device")
            run = _DeviceRun(chain, plans, codes_dtype, in_shape, out_shape, device)
            self._plans[key] = run
        return run

    def _static_params(self):
        if self.activation_params is None:
            raise ValueError(f"qforge.torch: '{self.name}' has static activations and was not "
                             "calibrated; pass calibration_loader to quantize_")
        return self.activation_params


class QuantizedLinear(_QuantizedLayer):
    """nn.Linear whose eval-mode forward runs qforge's quantized matmul (see the module doc)."""

    kind = "matmul"

    def __init__(self, linear, layer, accelerator=None, name=""):
        super().__init__(linear, layer, accelerator, name)
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.quantize_weights()

    def quantize_weights(self):
        """Quantizes the current float weight (and copies the bias); call after training."""
        w, self.weight_params = _weight_params(self.weight, self.layer["weights"])
        self.weight_codes = self.accelerator.quantize(w, self.weight_params)
        self.bias_values = self._float_bias()
        self._plans = {}

    def forward(self, x):
        if self._float_path(x):
            return nn.functional.linear(x, self.weight, self.bias)
        lead = x.shape[:-1]
        x2 = x.detach().reshape(-1, self.in_features).to(torch.float32).contiguous()
        n = self.out_features
        if x2.shape[0] == 0:
            return x2.new_empty((*lead, n)).to(x.dtype)
        if x2.is_cuda:
            return self._forward_cuda(x2).reshape(*lead, n).to(x.dtype)
        if self.layer["activations"]["mode"] == "dynamic":
            return self._forward_dynamic(x2).reshape(*lead, n).to(x.dtype)
        xn = x2.numpy()
        m, k = xn.shape[0], self.in_features
        params = self._static_params()
        plan = self._plans.get(m)
        if plan is None:
            plan = self.accelerator.prepare_matmul(
                m, n, k, params, self.weight_params, b_layout="nk", b=self.weight_codes,
                bias=self.bias_values)
            self._plans[m] = plan
        y = plan.run(self.accelerator.quantize(xn, params))
        return torch.from_numpy(y).reshape(*lead, n).to(x.dtype)

    def _forward_dynamic(self, x):
        """Dynamic activations on a CPU tensor x [M, K] (float32, contiguous): the batch's range
        gives its params, and one matmul_dequant plan per batch size (weights and bias packed
        once) takes them at run. uint8 affine (ONNX's DynamicQuantizeLinear) runs the range,
        the codes and the matmul in one call into qforge (_DynamicRun); other dtypes and
        mappings take the range in numpy and quantize through the accelerator first."""
        m = x.shape[0]
        run = self._plans.get(("dynamic", m))
        if run is None:
            run = self._make_dynamic_run(m)
            self._plans[("dynamic", m)] = run
        return run(x)

    def _make_dynamic_run(self, m):
        act = self.layer["activations"]
        n, k = self.out_features, self.in_features
        acc = self.accelerator
        a_params = P.per_tensor_affine(act["dtype"], 1.0, 0) \
            if act["mapping"] == _qforge.Mapping.affine else \
            P.per_tensor_symmetric(act["dtype"], 1.0)
        try:
            plan = acc.prepare_matmul(m, n, k, a_params, self.weight_params, b_layout="nk",
                                      b=self.weight_codes, bias=self.bias_values,
                                      a_params_at_run=True)
        except Error as e:
            if e.code != "unsupported":
                raise
            return _PerCallDynamic(self, acc, m, act, reason=str(e))
        plans = [plan]
        if _is_dynamic_quantize_linear(act):
            plans.insert(0, acc.prepare_dynamic_quantize([m, k]))
        for p in plans:
            if not p.host_memory:
                raise ValueError(f"qforge.torch: '{self.name}': the plan for a CPU tensor runs on "
                                 f"cuda:{p.device} ({p!r}); pass an accelerator whose policy "
                                 "leaves the cuda plugin out for CPU tensors")
        if len(plans) == 2:
            return _DeviceRun(_qforge._DynamicChain, plans, _qforge.DType.uint8, (m, k),
                              (m, n), torch.device("cpu"))
        return _HostDynamic(plan, acc, act)

    def _forward_cuda(self, x):
        run = self._plans.get(("cuda", x.get_device(), x.shape[0]))
        if run is None:
            run = self._make_cuda_run(x)
        return run(x)

    def _make_cuda_run(self, x):
        m, n, k = x.shape[0], self.out_features, self.in_features
        act = self.layer["activations"]
        if act["mode"] == "dynamic":
            if not _is_dynamic_quantize_linear(act):
                raise ValueError(
                    f"qforge.torch: '{self.name}': dynamic {act['dtype'].name} "
                    f"{act['mapping'].name} activations on CUDA tensors; the cuda plugin "
                    "computes a batch's range on the device for uint8 affine ones (ONNX's "
                    "DynamicQuantizeLinear): use those, or run on the CPU")

            def make_dynamic(acc):
                return (acc.prepare_dynamic_quantize([m, k], residency="device"),
                        acc.prepare_matmul(m, n, k, P.per_tensor_affine(_qforge.DType.uint8,
                                                                        1.0, 0),
                                           self.weight_params, b_layout="nk",
                                           b=self.weight_codes, bias=self.bias_values,
                                           a_params_at_run=True, residency="device"))

            return self._cuda_run(("cuda", x.get_device(), m), x.device, _qforge.DType.uint8,
                                  (m, k), (m, n), make_dynamic, _qforge._DynamicChain)
        params = _as_int8_codes(self._static_params())

        def make(acc):
            return (acc.prepare_quantize([m, k], params, residency="device"),
                    acc.prepare_matmul(m, n, k, params, self.weight_params, b_layout="nk",
                                       b=self.weight_codes, bias=self.bias_values,
                                       residency="device"))

        return self._cuda_run(("cuda", x.get_device(), m), x.device, params.dtype, (m, k), (m, n),
                              make)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"{self.layer['describe']}")


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class QuantizedConv2d(_QuantizedLayer):
    """nn.Conv2d whose eval-mode forward runs qforge's conv_dequant plan (NCHW, weights
    [O, C / groups, KH, KW] quantized once, float bias): static or explicit activations. A
    plan fixes the activation params, so dynamic activations are refused."""

    kind = "convolution"

    def __init__(self, conv, layer, accelerator=None, name=""):
        super().__init__(conv, layer, accelerator, name)
        if layer["activations"]["mode"] == "dynamic":
            raise ValueError(f"qforge.torch: '{name}': dynamic activations are not supported for "
                             "Conv2d (a convolution plan fixes the activation params); use "
                             "static activations (calibration_loader) or skip the layer")
        if conv.padding_mode != "zeros":
            raise ValueError(f"qforge.torch: '{name}': padding_mode '{conv.padding_mode}' is not "
                             "supported; qforge pads with the activations' zero point (zeros)")
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.kernel_size = _pair(conv.kernel_size)
        self.stride = _pair(conv.stride)
        self.dilation = _pair(conv.dilation)
        self.padding = conv.padding if isinstance(conv.padding, str) else _pair(conv.padding)
        self.groups = conv.groups
        self.quantize_weights()

    def quantize_weights(self):
        """Quantizes the current float weight (and copies the bias); call after training."""
        w, self.weight_params = _weight_params(self.weight, self.layer["weights"])
        self.weight_codes = self.accelerator.quantize(w, self.weight_params)
        self.bias_values = self._float_bias()
        self._plans = {}

    def _pads(self, h, w):
        """(top, left, bottom, right) as nn.Conv2d pads: 'same' puts the odd one at the end."""
        if self.padding == "valid":
            return (0, 0, 0, 0)
        if self.padding == "same":
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            return (total[0] // 2, total[1] // 2, total[0] - total[0] // 2,
                    total[1] - total[1] // 2)
        ph, pw = self.padding
        return (ph, pw, ph, pw)

    def forward(self, x):
        if self._float_path(x):
            return nn.functional.conv2d(x, self.weight, self.bias, self.stride, self.padding,
                                        self.dilation, self.groups)
        if x.dim() != 4:
            raise ValueError(f"qforge.torch: '{self.name}' got a {x.dim()}-D input; expected "
                             "[N, C, H, W]")
        params = self._static_params()
        xc = x.detach().to(torch.float32).contiguous()
        if xc.is_cuda:
            return self._forward_cuda(xc, params).to(x.dtype)
        xn = xc.numpy()
        shape = tuple(xn.shape)
        plan = self._plans.get(shape)
        if plan is None:
            plan = self._prepare_conv(self.accelerator, shape, params)
            self._plans[shape] = plan
        y = plan.run(self.accelerator.quantize(xn, params))
        return torch.from_numpy(y).to(x.dtype)

    def _prepare_conv(self, acc, shape, params, residency="host"):
        return acc.prepare_conv(
            list(shape), params, self.weight_codes, list(self.weight.shape), self.weight_params,
            stride=list(self.stride), pads=list(self._pads(*shape[2:])),
            dilation=list(self.dilation), groups=self.groups, bias=self.bias_values,
            residency=residency)

    def _forward_cuda(self, x, params):
        shape = tuple(x.shape)
        key = ("cuda", x.get_device(), shape)
        run = self._plans.get(key)
        if run is not None:
            return run(x)
        n, _, h, w = shape
        kh, kw = self.kernel_size
        (dh, dw), (sh, sw) = self.dilation, self.stride
        top, left, bottom, right = self._pads(h, w)
        oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
        ow = (w + left + right - dw * (kw - 1) - 1) // sw + 1

        def make(acc):
            return (acc.prepare_quantize(list(shape), params, residency="device"),
                    self._prepare_conv(acc, shape, params, residency="device"))

        return self._cuda_run(key, x.device, params.dtype, shape,
                              (n, self.out_channels, oh, ow), make)(x)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, {self.layer['describe']}")


# torch dtypes of the quantized activations' storage, by qforge dtype name.
_TORCH_STORAGE = {"int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16}


def _as_int8_codes(params):
    """uint8 affine per-tensor activation params as the int8 ones of the same codes less 128
    (zero point z - 128): quantize is round(x / s) + z saturated, so every code and every
    (a - za) the matmul sees is the same, and the cuda plugin's matmul reads int8 A as it is
    instead of converting uint8 A on every call. Other params unchanged."""
    if (params.dtype != _qforge.DType.uint8 or params.mapping != _qforge.Mapping.affine
            or params.granularity != _qforge.Granularity.per_tensor or params.qmin != 0
            or params.qmax != 255):
        return params
    return P.per_tensor_affine(_qforge.DType.int8, params.scales[0],
                               int(params.zero_points[0]) - 128)


# The current stream's id on a device: torch's private getter (a tuple, no Stream object built:
# it runs once per layer call) where it exists, else the public one.
if hasattr(torch._C, "_cuda_getCurrentStream"):
    def _current_stream_id(index):
        return torch._C._cuda_getCurrentStream(index)[0]
else:  # pragma: no cover - depends on the PyTorch version
    def _current_stream_id(index):
        return torch.cuda.current_stream(index).stream_id


class _DeviceRun:
    """One quantized layer's work on tensors of one shape on one device, prepared once: the
    quantize plan and the matmul (or conv) plan chained in C++ (`chain`: _qforge._DeviceChain for
    params fixed in the plans, _qforge._DynamicChain for a batch's own params), the quantized
    activations' buffer between them, the output shape. A call is one torch.empty for the
    output, a stream check (CUDA) and one call into qforge.

    Ordering on CUDA: the plans queue on the legacy default stream, which is torch's default
    stream, so on that stream nothing else is needed; on another current stream the legacy
    stream first waits for it, and afterwards it waits for the legacy stream (torch's
    wait_stream, an event each way). The dynamic chain's first plan waits on the host for the
    batch's range (its scale and zero point are read on the host by the matmul plan); the static
    one does not synchronise."""

    __slots__ = ("plans", "chain", "between", "out_shape", "device", "index", "default_id",
                 "legacy")

    def __init__(self, chain, plans, codes_dtype, in_shape, out_shape, device):
        self.plans = tuple(plans)
        self.between = torch.empty(in_shape, dtype=_TORCH_STORAGE[codes_dtype.name],
                                   device=device)
        self.chain = chain(*plans, self.between)
        self.out_shape = tuple(out_shape)
        self.device = device
        self.index = self.legacy = self.default_id = None
        if device.type == "cuda":
            self.index = device.index if device.index is not None else torch.cuda.current_device()
            self.legacy = torch.cuda.default_stream(self.index)
            self.default_id = self.legacy.stream_id

    def __call__(self, x):
        y = torch.empty(self.out_shape, dtype=torch.float32, device=self.device)
        if self.index is None or _current_stream_id(self.index) == self.default_id:
            self.chain.run(x.data_ptr(), y.data_ptr())
            return y
        current = torch.cuda.current_stream(self.index)
        self.legacy.wait_stream(current)
        self.chain.run(x.data_ptr(), y.data_ptr())
        current.wait_stream(self.legacy)
        return y

    def __iter__(self):
        return iter(self.plans)

    def __repr__(self):
        return f"<qforge.torch run on {self.device}: {self.plans[0]!r} then {self.plans[1]!r}>"


def _is_dynamic_quantize_linear(act):
    """Whether dynamic activations are ONNX's DynamicQuantizeLinear (uint8 affine over the full
    range), which a plan computes (range, codes, scale and zero point) in one pass."""
    return act["dtype"] == _qforge.DType.uint8 and act["mapping"] == _qforge.Mapping.affine


class _HostDynamic:
    """Dynamic activations other than uint8 affine on CPU tensors: the batch's range in numpy,
    its params as QuantizationParams.from_range computes them, the codes through the
    accelerator, then the matmul_dequant plan with those params at run."""

    __slots__ = ("plan", "accelerator", "dtype", "mapping")

    def __init__(self, plan, accelerator, act):
        self.plan, self.accelerator = plan, accelerator
        self.dtype, self.mapping = act["dtype"], act["mapping"]

    def __call__(self, x):
        xn = x.numpy()
        params = P.from_range(self.dtype, self.mapping, float(xn.min()), float(xn.max()))
        a = self.accelerator.quantize(xn, params)
        return torch.from_numpy(self.plan.run(a, a_params=params))


class _PerCallDynamic:
    """Where no loaded plugin takes A's params at run for these weights (the accelerator's
    reason is kept): the per-call matmul_dequant with the batch's params."""

    __slots__ = ("layer", "accelerator", "m", "dtype", "mapping", "reason")

    def __init__(self, layer, accelerator, m, act, reason):
        self.layer, self.accelerator, self.m = layer, accelerator, m
        self.dtype, self.mapping, self.reason = act["dtype"], act["mapping"], reason

    def __call__(self, x):
        xn = x.numpy()
        params = P.from_range(self.dtype, self.mapping, float(xn.min()), float(xn.max()))
        a = self.accelerator.quantize(xn, params)
        lay = self.layer
        return torch.from_numpy(self.accelerator.matmul_dequant(
            a, [self.m, lay.in_features], params, lay.weight_codes,
            [lay.out_features, lay.in_features], lay.weight_params, "nk", lay.bias_values))


_cuda_lock = threading.Lock()
_cuda_default = None


def _default_cuda_accelerator():
    """A process-wide qforge.Accelerator over the cuda plugin alone, made on first use."""
    global _cuda_default
    with _cuda_lock:
        if _cuda_default is None:
            try:
                _cuda_default = _qforge.Accelerator(plugins=["cuda"])
            except Error as e:
                raise ValueError(f"qforge.torch: a CUDA tensor needs qforge's cuda plugin, which "
                                 f"could not be used here ({e})") from e
            if "cuda" not in _cuda_default.plugins:
                _cuda_default = None
                raise ValueError("qforge.torch: a CUDA tensor needs qforge's cuda plugin, which "
                                 "is not loaded (see qforge.hwinfo() for why)")
        return _cuda_default


# The module types quantize_ swaps, with the op type a recipe's op_types names them by.
_SWAPPABLE = ((nn.Linear, "Linear", QuantizedLinear), (nn.Conv2d, "Conv2d", QuantizedConv2d))


def _set_module(model, name, module):
    parent = model
    *path, last = name.split(".")
    for p in path:
        parent = getattr(parent, p)
    setattr(parent, last, module)


def calibrate(model, loader):
    """Runs ``loader``'s batches through ``model`` (no grad, eval mode) while every
    QuantizedLinear / QuantizedConv2d with static activations observes its input; then fixes
    their params.
    A batch is a tensor, a tuple/list whose first element is the input (a DataLoader's
    ``(x, label)``), or a dict of keyword arguments (a tokenizer's output: ``model(**batch)``)."""
    layers = [m for m in model.modules()
              if isinstance(m, _QuantizedLayer) and m.layer["activations"]["mode"] == "static"]
    for m in layers:
        m.start_calibration()
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for batch in loader:
                if isinstance(batch, dict):
                    model(**batch)
                else:
                    model(batch[0] if isinstance(batch, (tuple, list)) else batch)
    finally:
        model.train(was_training)
    for m in layers:
        m.finish_calibration()


def quantize_(model, recipe, calibration_loader=None, accelerator=None):
    """Replaces the nn.Linear and nn.Conv2d modules the recipe quantizes (matched by module name,
    op type "Linear" or "Conv2d") with QuantizedLinear / QuantizedConv2d, in place; calibrates
    static ones on ``calibration_loader``. A module that cannot be quantized as its rule says is
    an error, unless the decision came from the recipe's default or an optional rule: then it
    stays float and the report says why. Returns the recipe's resolution report (text)."""
    recipe_json, recipe_path = _recipe_args(recipe)
    modules = []
    for name, m in model.named_modules():
        for cls, op_type, quantized in _SWAPPABLE:
            if isinstance(m, cls):
                modules.append((name, m, op_type, quantized))
                break
    decisions, report = _qforge.resolve_recipe(recipe_json, recipe_path,
                                               [(name, op) for name, _, op, _ in modules])
    static = False
    kept_float = []
    for (name, module, _, quantized), layer in zip(modules, decisions):
        if layer is None:
            continue
        try:
            q = quantized(module, layer, accelerator, name)
        except ValueError as e:
            if not layer["lenient"]:
                raise
            kept_float.append(f"{name}: {e} (left in float)")
            continue
        q.train(module.training)  # a new module starts in training mode; keep the model's mode
        static = static or layer["activations"]["mode"] == "static"
        _set_module(model, name, q)
    if static:
        if calibration_loader is None:
            raise ValueError("qforge.torch.quantize_: the recipe has static activations; pass "
                             "calibration_loader (or use dynamic activations)")
        calibrate(model, calibration_loader)
    if kept_float:
        report += "\n" + "\n".join(kept_float)
    return report

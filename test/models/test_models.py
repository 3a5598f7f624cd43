#!/usr/bin/env python3
"""End-to-end checks of `cuts import` on whole models.

usage: test_models.py --cuts PATH/TO/cuts --work WORKDIR [-k SUBSTRING]

Two families of models:

* small models built here with onnx.helper (fixed seeds): conv-bn-relu, a
  ResNet basic block, a MobileNetV2 inverted-residual block, two
  squeeze-excitation blocks, a transformer encoder layer (opset 20, its head
  shapes computed by a Shape/Gather/Unsqueeze/Concat subgraph), the same
  layer with symbolic batch/sequence dims imported with --input-shape, a
  conv model with a symbolic batch, and a model full of Identity/Dropout;
* the PyTorch exports in test/models/exported/, inflated with random weights
  by inflate.py.

For each model: onnxruntime (CPU) gives the real output shapes and element
types; `cuts import` (with and without --no-passes) must exit 0 and its
func.func signature must agree with them; after the clean-up passes no
identity/dropout/shape/constant_of_shape op, no batch_normalization after a
conv, and no op whose operands are all constants may remain; MatMul+Add must
have become cuts.matmul_add; the op counts are checked. The small models are
also converted back from the printed cuts dialect (--print-weights) to ONNX
and run by onnxruntime, and the outputs must match the original model's: this
checks that the folding (BatchNormalization into Conv, shape arithmetic,
Clip bounds) computed the right values, not just the right types.

Prints one line per check and a closing `N passed, N failed`; exits 1 if any
check failed.
"""
import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover - reported as failures below
    ort = None

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTED = os.path.join(HERE, "exported")

# Ops that must never survive the clean-up passes.
FORBIDDEN_AFTER_PASSES = ("cuts.identity", "cuts.dropout", "cuts.shape",
                          "cuts.constant_of_shape", "cuts.range")

NP_TO_MLIR = {
    np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
    np.dtype(np.float64): "f64", np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32", np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8", np.dtype(np.uint8): "ui8",
    np.dtype(np.bool_): "i1",
}
MLIR_TO_NP = {v: k for k, v in NP_TO_MLIR.items()}
MLIR_TO_ONNX = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16,
                "f64": TensorProto.DOUBLE, "i64": TensorProto.INT64,
                "i32": TensorProto.INT32, "i8": TensorProto.INT8,
                "ui8": TensorProto.UINT8, "i1": TensorProto.BOOL}


class CheckFailed(Exception):
    pass


def require(cond, msg):
    if not cond:
        raise CheckFailed(msg)


#===----------------------------------------------------------------------===#
# Running things
#===----------------------------------------------------------------------===#

class Runner:
    def __init__(self, cuts, work):
        self.cuts = cuts
        self.work = work
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, name, fn, *args):
        """Runs one check; a raised exception is a failure."""
        t0 = time.time()
        try:
            fn(*args)
        except CheckFailed as e:
            self._fail(name, str(e))
        except Exception:  # a bug in a check is a failure too
            self._fail(name, traceback.format_exc())
        else:
            self.passed += 1
            print("PASS: %s (%.2fs)" % (name, time.time() - t0), flush=True)

    def _fail(self, name, msg):
        self.failed += 1
        self.failures.append(name)
        print("FAIL: %s\n    %s" % (name, msg.strip().replace("\n", "\n    ")),
              flush=True)

    def cuts_import(self, model, *args, timeout=120):
        cmd = [self.cuts, "import", model] + list(args)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        return p.returncode, p.stdout.decode(errors="replace"), \
            p.stderr.decode(errors="replace")

    def import_ok(self, model, *args):
        rc, out, err = self.cuts_import(model, *args)
        require(rc == 0, "`cuts import %s %s` exited %d:\n%s" %
                (os.path.basename(model), " ".join(args), rc, err[-3000:]))
        require("func.func @main" in out, "no func.func @main in the output")
        return out


def ort_outputs(path, feeds):
    """{output name: (shape tuple, mlir element type)} and the arrays."""
    require(ort is not None, "onnxruntime is not installed")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    arrays = sess.run(names, feeds)
    return {n: (tuple(a.shape), NP_TO_MLIR[a.dtype]) for n, a in
            zip(names, arrays)}, dict(zip(names, arrays))


#===----------------------------------------------------------------------===#
# Reading the printed cuts dialect
#===----------------------------------------------------------------------===#

def parse_tensor_type(t):
    """'tensor<1x3xf32>' -> ((1, 3), 'f32')."""
    m = re.fullmatch(r"tensor<(.*)>", t.strip())
    require(m, "not a ranked tensor type: %r" % t)
    parts = m.group(1).split("x")
    dims = parts[:-1]
    require(all(d.isdigit() for d in dims),
            "non-static tensor type %r in the signature" % t)
    return tuple(int(d) for d in dims), parts[-1]


def split_top(s, sep=","):
    """Splits s at top-level separators (outside <>, [], (), {} and quotes)."""
    out, depth, cur, quote = [], 0, "", False
    k = 0
    while k < len(s):
        c = s[k]
        if quote:
            cur += c
            if c == "\\":
                cur += s[k + 1]
                k += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
            cur += c
        elif c in "<[({":
            depth += 1
            cur += c
        elif c in ">])}":
            # '->' is not a bracket
            if c == ">" and cur.endswith("-"):
                cur += c
            else:
                depth -= 1
                cur += c
        elif c == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
        k += 1
    if cur.strip():
        out.append(cur)
    return [x.strip() for x in out]


def matching(s, start):
    """Index of the bracket closing s[start]."""
    pairs = {"(": ")", "{": "}", "<": ">", "[": "]"}
    stack, quote = [], False
    for k in range(start, len(s)):
        c = s[k]
        if quote:
            if c == '"' and s[k - 1] != "\\":
                quote = False
            continue
        if c == '"':
            quote = True
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1] and not (c == ">" and s[k - 1] == "-"):
            stack.pop()
            if not stack:
                return k
    raise CheckFailed("unbalanced brackets in %r" % s[start:start + 200])


def signature(mlir):
    """([(name, type)], [(name, type)]) of func.func @main."""
    k = mlir.find("func.func @main(")
    require(k >= 0, "no func.func @main(")
    open_ = mlir.index("(", k)
    close = matching(mlir, open_)
    args = []
    for a in split_top(mlir[open_ + 1:close]):
        m = re.match(r"%\w+\s*:\s*(tensor<[^>]*>)\s*(\{.*\})?$", a)
        require(m, "cannot read argument %r" % a)
        n = re.search(r'cuts\.name = "([^"]*)"', m.group(2) or "")
        args.append((n.group(1) if n else None, m.group(1)))
    rest = mlir[close + 1:].lstrip()
    require(rest.startswith("->"), "no results in the signature")
    rest = rest[2:].lstrip()
    if rest.startswith("("):
        res_text = rest[1:matching(rest, 0)]
    else:
        res_text = re.match(r"tensor<[^>]*>", rest).group(0)
    results = []
    for r in split_top(res_text):
        m = re.match(r"(tensor<[^>]*>)\s*(\{.*\})?$", r)
        require(m, "cannot read result %r" % r)
        n = re.search(r'cuts\.name = "([^"]*)"', m.group(2) or "")
        results.append((n.group(1) if n else None, m.group(1)))
    return args, results


OP_LINE = re.compile(
    r"^\s*(?:(?P<res>%[\w#:, %]+?)\s*=\s*)?(?P<op>cuts\.[a-z_]+)(?P<rest>.*)$")


class Op:
    def __init__(self, results, name, operands, attrs, result_types, line):
        self.results, self.name, self.operands = results, name, operands
        self.attrs, self.result_types, self.line = attrs, result_types, line

    def __repr__(self):
        return self.line.strip()[:200]


def parse_ops(mlir):
    """The cuts ops of @main, in order."""
    ops = []
    body = mlir.split("{-#")[0]
    for line in body.splitlines():
        m = OP_LINE.match(line)
        if not m:
            continue
        results = []
        if m.group("res"):
            for r in m.group("res").split(","):
                r = r.strip()
                name, _, count = r.partition(":")
                if count:
                    results += ["%s#%d" % (name, k) for k in range(int(count))]
                else:
                    results.append(name)
        rest = m.group("rest")
        # operands, then an optional attribute dict, then ':' and the types
        operands = []
        k = 0
        while True:
            mm = re.match(r"\s*(%[\w#]+)\s*,?", rest[k:])
            if not mm:
                break
            operands.append(mm.group(1))
            k += mm.end()
        rest = rest[k:].lstrip()
        attrs = {}
        if rest.startswith("{"):
            end = matching(rest, 0)
            for kv in split_top(rest[1:end]):
                key, _, val = kv.partition("=")
                attrs[key.strip()] = val.strip()
            rest = rest[end + 1:].lstrip()
        require(rest.startswith(":"), "cannot read op line %r" % line)
        types = rest[1:].strip()
        if "->" in types:
            out = types.rsplit("->", 1)[1].strip()
            if out.startswith("("):
                out = out[1:-1]
            result_types = split_top(out)
        else:
            result_types = [types]
        ops.append(Op(results, m.group("op"), operands, attrs, result_types,
                      line))
    return ops


def op_counts(ops):
    return Counter(o.name for o in ops)


def return_operands(mlir):
    m = re.search(r"^\s*return\s+([^:]*):", mlir, re.M)
    require(m, "no return in @main")
    return [x.strip() for x in m.group(1).split(",")]


def resources(mlir):
    """{key: bytes} from the dialect_resources section."""
    out = {}
    if "{-#" not in mlir:
        return out
    for m in re.finditer(r'^\s*([\w.$]+): "0x([0-9A-Fa-f]*)"', mlir.split(
            "{-#", 1)[1], re.M):
        blob = bytes.fromhex(m.group(2))
        out[m.group(1)] = blob[4:]  # the first 4 bytes are the alignment
    return out


def dense_value(attr, type_text, blobs):
    """numpy array of a `dense<...>` / `dense_resource<...>` attribute."""
    shape, et = parse_tensor_type(type_text)
    dt = MLIR_TO_NP[et]
    m = re.match(r"dense_resource<([\w.$]+)>", attr)
    if m:
        require(m.group(1) in blobs, "resource %s is not printed" % m.group(1))
        raw = blobs[m.group(1)]
        return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    m = re.match(r"dense<(.*)>\s*:\s*tensor<", attr, re.S)
    require(m, "cannot read the constant %r" % attr[:200])
    body = m.group(1).strip()
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    if body == "":
        return np.zeros(shape, dtype=dt)
    body = body.replace("true", "True").replace("false", "False")
    value = np.array(ast.literal_eval(body), dtype=dt)
    if value.ndim == 0:
        return np.full(shape, value, dtype=dt)
    return value.reshape(shape)


def attr_ints(text):
    m = re.fullmatch(r"array<i64(?::\s*(.*))?>", text.strip())
    require(m, "not an i64 array: %r" % text)
    return [int(x) for x in m.group(1).split(",")] if m.group(1) else []


def attr_number(text):
    return float(text.split(":")[0].strip())


def attr_int(text):
    return int(text.split(":")[0].strip())


def attr_bool(text):
    return text.strip() == "true"


#===----------------------------------------------------------------------===#
# cuts dialect -> ONNX, to run the folded graph with onnxruntime
#===----------------------------------------------------------------------===#

SIMPLE = {"cuts.relu": "Relu", "cuts.sigmoid": "Sigmoid", "cuts.tanh": "Tanh",
          "cuts.erf": "Erf", "cuts.exp": "Exp", "cuts.sqrt": "Sqrt",
          "cuts.neg": "Neg", "cuts.add": "Add", "cuts.sub": "Sub",
          "cuts.mul": "Mul", "cuts.div": "Div", "cuts.equal": "Equal",
          "cuts.and": "And", "cuts.or": "Or", "cuts.not": "Not",
          "cuts.less": "Less", "cuts.where": "Where", "cuts.matmul": "MatMul",
          "cuts.global_average_pool": "GlobalAveragePool",
          "cuts.hard_swish": "HardSwish", "cuts.pow": "Pow",
          "cuts.reciprocal": "Reciprocal"}


def cuts_to_onnx(mlir, path):
    """Writes the printed (--print-weights) cuts module as an ONNX model."""
    blobs = resources(mlir)
    args, results = signature(mlir)
    ops = parse_ops(mlir)
    nodes, inits = [], []
    vname = lambda v: "v" + v.replace("%", "_").replace("#", "_")
    counter = [0]

    def const(arr):
        counter[0] += 1
        n = "const_%d" % counter[0]
        inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    m = re.search(r"func\.func @main\((.*?)\)\s*->", mlir)
    arg_ssa = re.findall(r"(%arg\d+)\s*:", m.group(1))
    inputs = []
    for ssa, (name, t) in zip(arg_ssa, args):
        shape, et = parse_tensor_type(t)
        inputs.append(helper.make_tensor_value_info(name, MLIR_TO_ONNX[et],
                                                    list(shape)))
        nodes.append(helper.make_node("Identity", [name], [vname(ssa)]))
    for op in ops:
        ins = [vname(o) for o in op.operands]
        outs = [vname(r) for r in op.results]
        a = op.attrs
        n = op.name
        if n == "cuts.constant":
            arr = dense_value(a["value"], op.result_types[0], blobs)
            nodes.append(helper.make_node(
                "Constant", [], outs,
                value=numpy_helper.from_array(arr, outs[0] + "_value")))
        elif n in SIMPLE:
            nodes.append(helper.make_node(SIMPLE[n], ins, outs))
        elif n == "cuts.matmul_add":
            nodes.append(helper.make_node("MatMul", ins[:2], [outs[0] + "_mm"]))
            nodes.append(helper.make_node("Add", [outs[0] + "_mm", ins[2]],
                                          outs))
        elif n == "cuts.conv":
            nodes.append(helper.make_node(
                "Conv", ins, outs, strides=attr_ints(a["strides"]),
                pads=attr_ints(a["pads"]),
                dilations=attr_ints(a["dilations"]),
                group=attr_int(a["group"])))
        elif n in ("cuts.max_pool", "cuts.average_pool"):
            kw = dict(kernel_shape=attr_ints(a["kernel_shape"]),
                      strides=attr_ints(a["strides"]),
                      pads=attr_ints(a["pads"]),
                      dilations=attr_ints(a["dilations"]),
                      ceil_mode=int(attr_bool(a["ceil_mode"])))
            if n == "cuts.average_pool":
                kw["count_include_pad"] = int(attr_bool(a["count_include_pad"]))
            nodes.append(helper.make_node(
                "MaxPool" if n == "cuts.max_pool" else "AveragePool", ins,
                outs, **kw))
        elif n == "cuts.clip":
            _, et = parse_tensor_type(op.result_types[0])
            dt = MLIR_TO_NP[et]
            lo = const(np.array(attr_number(a["min"]), dt)) if "min" in a \
                else ""
            hi = const(np.array(attr_number(a["max"]), dt)) if "max" in a \
                else ""
            nodes.append(helper.make_node("Clip", ins + [lo, hi], outs))
        elif n == "cuts.hard_sigmoid":
            nodes.append(helper.make_node("HardSigmoid", ins, outs,
                                          alpha=attr_number(a["alpha"]),
                                          beta=attr_number(a["beta"])))
        elif n == "cuts.leaky_relu":
            nodes.append(helper.make_node("LeakyRelu", ins, outs,
                                          alpha=attr_number(a["alpha"])))
        elif n == "cuts.flatten":
            nodes.append(helper.make_node("Flatten", ins, outs,
                                          axis=attr_int(a["axis"])))
        elif n == "cuts.gemm":
            nodes.append(helper.make_node(
                "Gemm", ins, outs, alpha=attr_number(a["alpha"]),
                beta=attr_number(a["beta"]),
                transA=int(attr_bool(a["transA"])),
                transB=int(attr_bool(a["transB"]))))
        elif n == "cuts.reshape":
            nodes.append(helper.make_node(
                "Reshape", ins + [const(np.array(attr_ints(a["shape"]),
                                                 np.int64))], outs))
        elif n == "cuts.expand":
            nodes.append(helper.make_node(
                "Expand", ins + [const(np.array(attr_ints(a["shape"]),
                                                np.int64))], outs))
        elif n in ("cuts.unsqueeze", "cuts.squeeze"):
            nodes.append(helper.make_node(
                "Unsqueeze" if n == "cuts.unsqueeze" else "Squeeze",
                ins + [const(np.array(attr_ints(a["axes"]), np.int64))], outs))
        elif n == "cuts.transpose":
            nodes.append(helper.make_node("Transpose", ins, outs,
                                          perm=attr_ints(a["perm"])))
        elif n == "cuts.softmax":
            nodes.append(helper.make_node("Softmax", ins, outs,
                                          axis=attr_int(a["axis"])))
        elif n == "cuts.layer_normalization":
            nodes.append(helper.make_node(
                "LayerNormalization", ins, outs, axis=attr_int(a["axis"]),
                epsilon=attr_number(a["epsilon"])))
        elif n == "cuts.gelu":
            nodes.append(helper.make_node(
                "Gelu", ins, outs, approximate=a["approximate"].strip('"')))
        elif n == "cuts.gather":
            nodes.append(helper.make_node("Gather", ins, outs,
                                          axis=attr_int(a["axis"])))
        elif n == "cuts.cast":
            nodes.append(helper.make_node(
                "Cast", ins, outs, to=MLIR_TO_ONNX[a["to"].strip()]))
        else:
            raise CheckFailed("the round trip does not know %s" % n)
    ret = return_operands(mlir)
    outputs = []
    for ssa, (name, t) in zip(ret, results):
        shape, et = parse_tensor_type(t)
        nodes.append(helper.make_node("Identity", [vname(ssa)], [name]))
        outputs.append(helper.make_tensor_value_info(name, MLIR_TO_ONNX[et],
                                                     list(shape)))
    graph = helper.make_graph(nodes, "roundtrip", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 20)])
    model.ir_version = 10
    onnx.save(model, path)


#===----------------------------------------------------------------------===#
# Generic checks
#===----------------------------------------------------------------------===#

def check_signature(mlir, expected, input_names=None):
    """expected: {name: (shape, elem)} from onnxruntime, in output order."""
    args, results = signature(mlir)
    if input_names is not None:
        require([n for n, _ in args] == list(input_names),
                "func arguments are %s, the model's inputs %s" %
                ([n for n, _ in args], list(input_names)))
    got = [(n, parse_tensor_type(t)) for n, t in results]
    want = list(expected.items())
    require(len(got) == len(want), "%d results, onnxruntime has %d: %s" %
            (len(got), len(want), got))
    for (gn, gt), (wn, wt) in zip(got, want):
        require(gn == wn, "result named %r, onnxruntime's output is %r" %
                (gn, wn))
        require(gt == wt, "result %r is %s, onnxruntime computes %s" %
                (gn, gt, wt))


def check_clean(mlir, bn_after_conv=True):
    ops = parse_ops(mlir)
    counts = op_counts(ops)
    left = {o: counts[o] for o in FORBIDDEN_AFTER_PASSES if counts[o]}
    require(not left, "left after the passes: %s" % left)
    defs = {}
    for o in ops:
        for r in o.results:
            defs[r] = o
            defs[r.split("#")[0]] = o
    for o in ops:
        if o.name == "cuts.constant":
            continue
        producers = [defs.get(v) for v in o.operands]
        require(any(p is None or p.name != "cuts.constant"
                    for p in producers),
                "op with only constant operands was not folded: %r" % o)
        if bn_after_conv and o.name == "cuts.batch_normalization":
            p = producers[0]
            require(p is None or p.name != "cuts.conv",
                    "batch_normalization after a conv was not folded: %r" % o)
    # Every constant is used (dead code removed) and is a real tensor.
    used = {v for o in ops for v in o.operands} | set(return_operands(mlir))
    for o in ops:
        if o.name == "cuts.constant":
            require(o.results[0] in used, "unused constant: %r" % o)
    return counts


def check_counts(counts, expected):
    bad = {k: (counts[k], v) for k, v in expected.items() if counts[k] != v}
    require(not bad, "op counts (got, want): %s; all: %s" %
            (bad, dict(counts)))


def check_matmul_fused(mlir):
    """No cuts.add consumes a cuts.matmul result (both orders)."""
    ops = parse_ops(mlir)
    defs = {r: o for o in ops for r in o.results}
    for o in ops:
        if o.name == "cuts.add":
            for v in o.operands:
                p = defs.get(v)
                require(not (p and p.name == "cuts.matmul"),
                        "MatMul + Add not fused into cuts.matmul_add: %r" % o)


def check_roundtrip(runner, name, onnx_path, import_args, feeds, ref):
    """The folded graph run by onnxruntime computes what the model computes."""
    mlir = runner.import_ok(onnx_path, "--print-weights", *import_args)
    rt = os.path.join(runner.work, name + ".roundtrip.onnx")
    cuts_to_onnx(mlir, rt)
    _, got = ort_outputs(rt, feeds)
    require(list(got) == list(ref), "outputs %s vs %s" % (list(got),
                                                          list(ref)))
    for k in ref:
        a, b = got[k], ref[k]
        require(a.shape == b.shape, "%s: shape %s vs %s" % (k, a.shape,
                                                           b.shape))
        if a.dtype.kind == "f":
            tol = 1e-4 * max(1.0, float(np.abs(b).max()))
            err = float(np.abs(a.astype(np.float64) - b).max())
            require(err <= tol, "%s: max |cuts - onnx| = %g > %g" %
                    (k, err, tol))
        else:
            require(np.array_equal(a, b), "%s differs" % k)


#===----------------------------------------------------------------------===#
# Small models
#===----------------------------------------------------------------------===#

class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.k = 0

    def name(self, prefix):
        self.k += 1
        return "%s_%d" % (prefix, self.k)

    def w(self, shape, scale=0.2, name=None, dtype=np.float32):
        n = name or self.name("w")
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal(shape) * scale).astype(dtype), n))
        return n

    def const(self, arr, name=None):
        n = name or self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def node(self, op, ins, nout=1, name=None, **attrs):
        nm = name or self.name(op.lower())
        outs = [nm + ("_out%d" % k if k else "_out") for k in range(nout)]
        self.nodes.append(helper.make_node(op, ins, outs, name=nm, **attrs))
        return outs[0] if nout == 1 else outs

    def constant_node(self, arr):
        out = self.name("constant")
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=out,
            value=numpy_helper.from_array(np.asarray(arr), out + "_v")))
        return out

    def bn(self, x, c):
        return self.node("BatchNormalization", [
            x, self.w([c], 0.5), self.w([c], 0.5), self.w([c], 0.5),
            self.const((self.rng.random(c) + 0.5).astype(np.float32))])

    def conv(self, x, cin, cout, k, group=1, bias=True, **attrs):
        ins = [x, self.w([cout, cin // group, k, k], 0.3)]
        if bias:
            ins.append(self.w([cout], 0.1))
        return self.node("Conv", ins, group=group, kernel_shape=[k, k],
                         **attrs)

    def model(self, path, inputs, outputs, opset=17):
        g = helper.make_graph(self.nodes, os.path.basename(path)[:-5],
                              inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8 if opset <= 17 else 10
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, path)
        return path


def vi(name, shape, et=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, et, shape)


def rename_last(b, new):
    """Renames the last node's output (the graph output) to `new`."""
    old = b.nodes[-1].output[0]
    b.nodes[-1].output[0] = new
    for n in b.nodes:
        for k, i in enumerate(n.input):
            if i == old:
                n.input[k] = new


def make_conv_bn_relu(path):
    b = Builder(1)
    y = b.node("Relu", [b.bn(b.conv("x", 3, 8, 3, pads=[1, 1, 1, 1]), 8)])
    rename_last(b, "y")
    return b.model(path, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 8, 16, 16])])


def make_resnet_block(path):
    b = Builder(2)
    c = 8
    h = b.node("Relu", [b.bn(b.conv("x", c, c, 3, bias=False,
                                     pads=[1, 1, 1, 1]), c)])
    h = b.bn(b.conv(h, c, c, 3, bias=False, pads=[1, 1, 1, 1]), c)
    b.node("Relu", [b.node("Add", [h, "x"])])
    rename_last(b, "y")
    return b.model(path, [vi("x", [1, c, 8, 8])], [vi("y", ["n", "c", "h", "w"])])


def make_mobilenet_block(path):
    b = Builder(3)
    c, e = 8, 32

    def relu6(x):
        return b.node("Clip", [x, b.constant_node(np.array(0, np.float32)),
                               b.constant_node(np.array(6, np.float32))])
    h = relu6(b.bn(b.conv("x", c, e, 1, bias=False), e))
    h = relu6(b.bn(b.conv(h, e, e, 3, group=e, bias=False,
                          pads=[1, 1, 1, 1]), e))
    h = b.bn(b.conv(h, e, c, 1, bias=False), c)
    b.node("Add", ["x", h])
    rename_last(b, "y")
    return b.model(path, [vi("x", [1, c, 10, 10])], [vi("y", [1, c, 10, 10])])


def make_se_conv(path):
    b = Builder(4)
    c, r = 16, 4
    s = b.node("GlobalAveragePool", ["x"])
    s = b.node("Relu", [b.conv(s, c, r, 1)])
    s = b.node("HardSigmoid", [b.conv(s, r, c, 1)], alpha=1 / 6, beta=0.5)
    b.node("Mul", ["x", s])
    rename_last(b, "y")
    return b.model(path, [vi("x", [1, c, 7, 7])], [vi("y", [1, c, 7, 7])])


def make_se_gemm(path):
    b = Builder(5)
    c, r = 16, 4
    s = b.node("Flatten", [b.node("GlobalAveragePool", ["x"])], axis=1)
    s = b.node("Relu", [b.node("Gemm", [s, b.w([r, c]), b.w([r])],
                               transB=1)])
    s = b.node("Sigmoid", [b.node("Gemm", [s, b.w([r, c]), b.w([c])])])
    s = b.node("Reshape", [s, b.const(np.array([1, c, 1, 1], np.int64))])
    b.node("Mul", [s, "x"])
    rename_last(b, "y")
    return b.model(path, [vi("x", [1, c, 5, 5])], [vi("y", [1, c, 5, 5])])


def make_conv_dynamic_batch(path):
    b = Builder(6)
    h = b.node("Relu", [b.bn(b.conv("x", 3, 4, 3, strides=[2, 2]), 4)])
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    b.node("Gemm", [h, b.w([10, 4]), b.w([10])], transB=1)
    rename_last(b, "y")
    return b.model(path, [vi("x", ["N", 3, 9, 9])], [vi("y", ["N", 10])])


def make_dropout_identity(path):
    b = Builder(7)
    h = b.node("Identity", ["x"])
    h = b.node("Add", [b.node("MatMul", [h, b.w([16, 24])]), b.w([24])])
    h = b.node("Dropout", [h, b.const(np.array(0.25, np.float32))])
    h = b.node("Identity", [b.node("Relu", [h])])
    h = b.node("Dropout", [h])  # no ratio
    h = b.node("Add", [b.w([8]), b.node("MatMul", [h, b.w([24, 8])])])
    b.node("Identity", [h])
    rename_last(b, "y")
    return b.model(path, [vi("x", [2, 16])], [vi("y", [2, 8])])


def make_transformer(path, symbolic=False):
    """A post-norm encoder layer: x [B, S, D], mask [B, S] (1 = attend)."""
    b = Builder(8)
    D, H = 32, 4
    Dh = D // H
    i64 = lambda *v: b.const(np.array(v, np.int64))

    # Shape arithmetic as the exporters write it.
    shp = b.node("Shape", ["x"])
    bsz = b.node("Unsqueeze", [b.node("Gather", [shp, b.const(np.array(
        0, np.int64))], axis=0), i64(0)])
    seq = b.node("Unsqueeze", [b.node("Gather", [shp, b.const(np.array(
        1, np.int64))], axis=0), i64(0)])
    heads_shape = b.node("Concat", [bsz, seq, i64(H), i64(Dh)], axis=0)
    merged_shape = b.node("Concat", [bsz, seq, i64(D)], axis=0)
    scores_shape = b.node("Concat", [bsz, i64(H), seq, seq], axis=0)

    def proj(x, din, dout, bias_first=False):
        mm = b.node("MatMul", [x, b.w([din, dout])])
        bias = b.w([dout], 0.1)
        return b.node("Add", [bias, mm] if bias_first else [mm, bias])

    def heads(t, perm):
        return b.node("Transpose", [b.node("Reshape", [t, heads_shape])],
                      perm=perm)

    q = heads(proj("x", D, D), [0, 2, 1, 3])
    k = heads(proj("x", D, D), [0, 2, 3, 1])
    v = heads(proj("x", D, D), [0, 2, 1, 3])
    scores = b.node("Mul", [b.node("MatMul", [q, k]),
                            b.const(np.array(1 / np.sqrt(Dh), np.float32))])
    # mask: zeros from ConstantOfShape(Shape(mask)), Equal, Expand, Where
    zeros = b.node("ConstantOfShape", [b.node("Shape", ["mask"])],
                   value=numpy_helper.from_array(np.array([0], np.int64)))
    masked = b.node("Equal", ["mask", zeros])
    masked = b.node("Unsqueeze", [masked, i64(1, 2)])
    masked = b.node("Expand", [masked, scores_shape])
    scores = b.node("Where", [masked, b.const(np.array(-1e4, np.float32)),
                              scores])
    attn = b.node("Softmax", [scores], axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [attn, v])],
                 perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, merged_shape])
    h = b.node("Add", [proj(ctx, D, D, bias_first=True), "x"])
    h = b.node("LayerNormalization", [h, b.w([D], 0.5), b.w([D], 0.1)],
               axis=-1, epsilon=1e-5)
    f = b.node("Gelu", [proj(h, D, 4 * D)])
    f = proj(f, 4 * D, D)
    b.node("LayerNormalization", [b.node("Add", [h, f]), b.w([D], 0.5),
                                  b.w([D], 0.1)], axis=-1, epsilon=1e-5)
    rename_last(b, "y")
    if symbolic:
        ins = [vi("x", ["batch", "seq", D]),
               vi("mask", ["batch", "seq"], TensorProto.INT64)]
        outs = [vi("y", ["batch", "seq", D])]
    else:
        ins = [vi("x", [2, 8, D]), vi("mask", [2, 8], TensorProto.INT64)]
        outs = [vi("y", [2, 8, D])]
    return b.model(path, ins, outs, opset=20)


def transformer_feeds(rng, bsz, seq):
    mask = (rng.random((bsz, seq)) < 0.7).astype(np.int64)
    mask[:, 0] = 1
    return {"x": rng.standard_normal((bsz, seq, 32)).astype(np.float32),
            "mask": mask}


def float_feed(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


TRANSFORMER_COUNTS = {
    "cuts.matmul_add": 6, "cuts.matmul": 2, "cuts.layer_normalization": 2,
    "cuts.reshape": 4, "cuts.transpose": 4, "cuts.softmax": 1,
    "cuts.where": 1, "cuts.equal": 1, "cuts.expand": 1, "cuts.gelu": 1,
    "cuts.unsqueeze": 1, "cuts.add": 2, "cuts.mul": 1,
    "cuts.gather": 0, "cuts.concat": 0}

# name: (builder, feeds(rng), import args, op counts after the passes,
#        op counts with --no-passes)
SMALL = {
    "conv_bn_relu": (
        make_conv_bn_relu, lambda r: {"x": float_feed(r, (1, 3, 16, 16))}, [],
        {"cuts.conv": 1, "cuts.relu": 1, "cuts.batch_normalization": 0,
         "cuts.constant": 2},
        {"cuts.conv": 1, "cuts.batch_normalization": 1, "cuts.relu": 1}),
    "resnet_block": (
        make_resnet_block, lambda r: {"x": float_feed(r, (1, 8, 8, 8))}, [],
        {"cuts.conv": 2, "cuts.relu": 2, "cuts.add": 1,
         "cuts.batch_normalization": 0, "cuts.constant": 4},
        {"cuts.conv": 2, "cuts.batch_normalization": 2, "cuts.add": 1}),
    "mobilenet_block": (
        make_mobilenet_block, lambda r: {"x": float_feed(r, (1, 8, 10, 10))},
        [],
        {"cuts.conv": 3, "cuts.clip": 2, "cuts.add": 1,
         "cuts.batch_normalization": 0, "cuts.constant": 6},
        {"cuts.conv": 3, "cuts.batch_normalization": 3, "cuts.clip": 2}),
    "se_conv": (
        make_se_conv, lambda r: {"x": float_feed(r, (1, 16, 7, 7))}, [],
        {"cuts.global_average_pool": 1, "cuts.conv": 2, "cuts.relu": 1,
         "cuts.hard_sigmoid": 1, "cuts.mul": 1},
        {"cuts.conv": 2, "cuts.hard_sigmoid": 1}),
    "se_gemm": (
        make_se_gemm, lambda r: {"x": float_feed(r, (1, 16, 5, 5))}, [],
        {"cuts.global_average_pool": 1, "cuts.flatten": 1, "cuts.gemm": 2,
         "cuts.relu": 1, "cuts.sigmoid": 1, "cuts.reshape": 1, "cuts.mul": 1},
        {"cuts.gemm": 2, "cuts.reshape": 1}),
    "conv_dynamic_batch": (
        make_conv_dynamic_batch, lambda r: {"x": float_feed(r, (3, 3, 9, 9))},
        ["--input-shape", "x=3x3x9x9"],
        {"cuts.conv": 1, "cuts.batch_normalization": 0, "cuts.gemm": 1},
        {"cuts.conv": 1, "cuts.batch_normalization": 1}),
    "dropout_identity": (
        make_dropout_identity, lambda r: {"x": float_feed(r, (2, 16))}, [],
        {"cuts.matmul_add": 2, "cuts.relu": 1, "cuts.matmul": 0,
         "cuts.add": 0},
        {"cuts.identity": 3, "cuts.dropout": 2, "cuts.matmul": 2}),
    "transformer": (
        make_transformer, lambda r: transformer_feeds(r, 2, 8), [],
        TRANSFORMER_COUNTS,
        {"cuts.shape": 2, "cuts.constant_of_shape": 1, "cuts.concat": 3,
         "cuts.matmul": 8}),
    "transformer_symbolic": (
        lambda p: make_transformer(p, symbolic=True),
        lambda r: transformer_feeds(r, 3, 5),
        ["--input-shape", "x=3x5x32", "--input-shape", "mask=3x5"],
        TRANSFORMER_COUNTS,
        {"cuts.shape": 2, "cuts.constant_of_shape": 1, "cuts.matmul": 8}),
}


def test_small(runner, name):
    make, feeds_of, args, counts, raw_counts = SMALL[name]
    path = os.path.join(runner.work, name + ".onnx")
    state = {}

    def build():
        make(path)
        feeds = feeds_of(np.random.default_rng(42))
        state["feeds"] = feeds
        state["expected"], state["ref"] = ort_outputs(path, feeds)
        state["inputs"] = list(feeds)

    runner.check(name + ": build + onnxruntime", build)
    if "expected" not in state:
        return

    def with_passes():
        out = runner.import_ok(path, *args)
        check_signature(out, state["expected"], state["inputs"])
        c = check_clean(out)
        check_matmul_fused(out)
        check_counts(c, counts)
        state["out"] = out

    def without_passes():
        out = runner.import_ok(path, "--no-passes", *args)
        check_signature(out, state["expected"], state["inputs"])
        check_counts(op_counts(parse_ops(out)), raw_counts)

    runner.check(name + ": import", with_passes)
    runner.check(name + ": import --no-passes", without_passes)
    runner.check(name + ": folded graph computes the model",
                 check_roundtrip, runner, name, path, args, state["feeds"],
                 state["ref"])
    if name == "mobilenet_block":
        runner.check(name + ": Clip bounds became attributes",
                     check_clip_bounds, state.get("out", ""), 0.0, 6.0)
        runner.check(name + ": depthwise conv keeps group", lambda: require(
            re.search(r"cuts\.conv [^\n]*group = 32 : i64",
                      state.get("out", "")), "no conv with group = 32"))


def check_clip_bounds(mlir, lo, hi):
    clips = [o for o in parse_ops(mlir) if o.name == "cuts.clip"]
    require(clips, "no cuts.clip")
    for o in clips:
        require(len(o.operands) == 1,
                "Clip bound still an operand: %r" % o)
        require("min" in o.attrs and attr_number(o.attrs["min"]) == lo and
                "max" in o.attrs and attr_number(o.attrs["max"]) == hi,
                "Clip bounds are not [%g, %g]: %r" % (lo, hi, o))


def test_symbolic_needs_input_shape(runner):
    """Without --input-shape a symbolic dim is an error naming the input."""
    path = os.path.join(runner.work, "transformer_symbolic.onnx")
    rc, out, err = runner.cuts_import(path)
    require(rc == 1, "exit code %d, want 1 (stderr: %s)" % (rc, err))
    require(err.startswith("cuts: error: %s: " % path), "stderr: %r" % err)
    require("input 'x'" in err and "--input-shape" in err and
            "'batch'" in err, "stderr: %r" % err)


#===----------------------------------------------------------------------===#
# PyTorch exports
#===----------------------------------------------------------------------===#

def inflate(runner, model):
    outdir = os.path.join(runner.work, "exported", model)
    path = os.path.join(outdir, model + ".onnx")
    subprocess.run([sys.executable, os.path.join(HERE, "inflate.py"),
                    os.path.join(EXPORTED, model + ".onnx"), outdir],
                   check=True)
    return path


def onnx_op_counts(path):
    m = onnx.load(path, load_external_data=False)
    return Counter(n.op_type for n in m.graph.node)


# model: (expected results [(name or None, type)], extra checks)
EXPORTED_MODELS = {
    "mobilenetv2_b1_ts17": [("output", "tensor<1x1000xf32>")],
    "resnet50_b1_ts17": [("output", "tensor<1x1000xf32>")],
    "bert_small_s128_dyn20": [(None, "tensor<1x128x128xf32>"),
                              (None, "tensor<1x128xf32>")],
    "bert_base_s128_dyn20": [(None, "tensor<1x128x768xf32>"),
                             (None, "tensor<1x768xf32>")],
}
BERT_LAYERS = {"bert_small_s128_dyn20": 2, "bert_base_s128_dyn20": 12}
ORT_ON = ("mobilenetv2_b1_ts17", "bert_small_s128_dyn20")


def exported_feeds(path):
    m = onnx.load(path, load_external_data=False)
    rng = np.random.default_rng(0)
    feeds = {}
    inits = {t.name for t in m.graph.initializer}
    for i in m.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.type.tensor_type.elem_type == TensorProto.INT64:
            if "mask" in i.name:
                feeds[i.name] = np.ones(shape, np.int64)
            else:
                feeds[i.name] = rng.integers(0, 1000, shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def test_exported(runner, model):
    state = {}

    def do_inflate():
        state["path"] = inflate(runner, model)
    runner.check(model + ": inflate", do_inflate)
    if "path" not in state:
        return
    path = state["path"]
    onnx_counts = onnx_op_counts(path)
    graph_outputs = [o.name for o in onnx.load(
        path, load_external_data=False).graph.output]

    def imported():
        out = runner.import_ok(path)
        state["out"] = out
        _, results = signature(out)
        want = EXPORTED_MODELS[model]
        require(len(results) == len(want), "results %s, want %s" %
                (results, want))
        for (gn, gt), (wn, wt), on in zip(results, want, graph_outputs):
            require(gt == wt, "result %s is %s, want %s" % (gn, gt, wt))
            require(gn == (wn or on), "result named %r, want %r" %
                    (gn, wn or on))
        counts = check_clean(out)
        check_matmul_fused(out)
        if model.startswith("mobilenet"):
            check_counts(counts, {"cuts.conv": onnx_counts["Conv"],
                                  "cuts.clip": onnx_counts["Clip"],
                                  "cuts.add": onnx_counts["Add"]})
            check_clip_bounds(out, 0.0, 6.0)
        elif model.startswith("resnet"):
            check_counts(counts, {"cuts.conv": onnx_counts["Conv"],
                                  "cuts.relu": onnx_counts["Relu"],
                                  "cuts.add": onnx_counts["Add"],
                                  "cuts.max_pool": 1, "cuts.gemm": 1})
        else:
            n = BERT_LAYERS[model]
            check_counts(counts, {"cuts.matmul_add": 6 * n,
                                  "cuts.matmul": 2 * n,
                                  "cuts.layer_normalization": 2 * n + 1,
                                  "cuts.softmax": n, "cuts.gelu": n,
                                  "cuts.gemm": 1, "cuts.tanh": 1})
        # Only weights (and folded values) remain as constants, and every
        # constant is a real tensor (no leftovers of ONNX Constant nodes that
        # fed Clip bounds or shape arithmetic).
        for o in parse_ops(out):
            if o.name == "cuts.constant":
                shape, _ = parse_tensor_type(o.result_types[0])
                require(len(shape) >= 1 or model.startswith("bert"),
                        "scalar constant left: %r" % o)

    runner.check(model + ": import", imported)

    def no_passes():
        out = runner.import_ok(path, "--no-passes")
        _, results = signature(out)
        require([t for _, t in results] ==
                [t for _, t in EXPORTED_MODELS[model]],
                "results %s" % results)
        if onnx_counts["Identity"]:
            require(op_counts(parse_ops(out))["cuts.identity"] ==
                    onnx_counts["Identity"], "Identity not imported as "
                    "cuts.identity with --no-passes")
    runner.check(model + ": import --no-passes", no_passes)

    if model in ORT_ON:
        def with_ort():
            feeds = exported_feeds(path)
            expected, _ = ort_outputs(path, feeds)
            check_signature(state.get("out", ""), expected, list(feeds))
        runner.check(model + ": signature matches onnxruntime", with_ort)


#===----------------------------------------------------------------------===#

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("-k", default="", help="run only tests whose name has this")
    ap.add_argument("--keep", action="store_true",
                    help="keep the inflated weights (hundreds of MB)")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    runner = Runner(os.path.abspath(opts.cuts), os.path.abspath(opts.work))
    t0 = time.time()
    for name in SMALL:
        if opts.k in name:
            test_small(runner, name)
    if opts.k in "transformer_symbolic":
        runner.check("transformer_symbolic: error without --input-shape",
                     test_symbolic_needs_input_shape, runner)
    for model in EXPORTED_MODELS:
        if opts.k in model:
            test_exported(runner, model)
    if not opts.keep:
        shutil.rmtree(os.path.join(runner.work, "exported"),
                      ignore_errors=True)
    print("took %.1fs" % (time.time() - t0))
    if runner.failures:
        print("failed:\n  " + "\n  ".join(runner.failures))
    print("%d passed, %d failed" % (runner.passed, runner.failed))
    return 1 if runner.failed or not runner.passed else 0


if __name__ == "__main__":
    sys.exit(main())

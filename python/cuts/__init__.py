"""cuts: load a compiled model (model.cuts) and run it.

    import cuts
    m = cuts.load("out/model.cuts", device=0)
    s = m.session()
    outs = s.run({"input": x})   # numpy arrays, or DLPack tensors (torch, cupy)
    m.inputs, m.outputs          # names, dtypes, shapes, batch axes, profiles
    cuts.compile("model.onnx", arch="sm_90", out="out/", tune=True)

Threads: a Model is shared by any number of threads; a Session belongs to
one thread at a time (make one per worker thread). Runs release the GIL, so
sessions on several threads run at once.

Without a GPU, ``cuts.load(path, emulate=True)`` runs every kernel on the
CPU (``cuts run --emulate``): slow, for tests.

Errors from the runtime or the compiler raise ``cuts.CutsError`` with their
message.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from ._cuts import CutsError, DeviceBuffer, api_version, describe
from . import _cuts

__all__ = ["CutsError", "Model", "Pending", "Session", "TensorInfo",
           "api_version", "compile", "load", "pinned_empty"]

# The C API's dtypes (cuts.h, ONNX's values) and their numpy types;
# bfloat16 tensors take numpy uint16 arrays of their bit patterns.
_DTYPES = {"float32": (1, np.float32), "uint8": (2, np.uint8),
           "int8": (3, np.int8), "int16": (5, np.int16),
           "int32": (6, np.int32), "int64": (7, np.int64),
           "bool": (9, np.bool_), "float16": (10, np.float16),
           "float64": (11, np.float64), "bfloat16": (16, np.uint16)}


class TensorInfo:
    """An input or output: name, dtype (the artifact's name: "float32",
    "int64", ...), shape at the largest batch profile, and batch_axis (0
    where axis 0 is the batch of a model with profiles, else -1)."""

    def __init__(self, d):
        self.name = d["name"]
        self.dtype = d["dtype"]
        self.shape = tuple(d["shape"])
        self.batch_axis = d["batch_axis"]

    def shape_at(self, batch):
        if self.batch_axis < 0 or not batch:
            return self.shape
        return (batch,) + self.shape[1:]

    def __repr__(self):
        return "TensorInfo(%r, %s, %s%s)" % (
            self.name, self.dtype, list(self.shape),
            ", batch_axis=0" if self.batch_axis == 0 else "")


def _cuts_executable():
    """The `cuts` command: $CUTS_EXECUTABLE, else on PATH."""
    exe = os.environ.get("CUTS_EXECUTABLE") or shutil.which("cuts")
    if not exe:
        raise CutsError("the cuts command is not found: put it on PATH or "
                        "set CUTS_EXECUTABLE")
    return exe


def _is_device_array(x):
    dev = getattr(x, "__dlpack_device__", None)
    return dev is not None and not isinstance(x, np.ndarray) and dev()[0] != 1


class Model:
    """A compiled model. Use cuts.load()."""

    def __init__(self, path, device=0, max_batch=0, emulate=False,
                 devices=None, device_shares=None, master_gpu=False,
                 weight_source="host", weight_codec="none", weight_budget=0):
        self.path = os.fspath(path)
        info = describe(self.path)
        self.name = info["model"]
        self.precision = info["precision"]
        self.ranks = info["ranks"]  # tensor-parallel ranks (0: none)
        self.archs = list(info["archs"])
        self.profiles = list(info["profiles"])
        self.inputs = [TensorInfo(d) for d in info["inputs"]]
        self.outputs = [TensorInfo(d) for d in info["outputs"]]
        self.emulate = emulate
        self.device = device
        self.devices = list(devices) if devices else [device]
        sources = ("host", "peer", "nccl")
        if weight_source not in sources:
            raise CutsError("weight_source must be one of %s" % (sources,))
        codecs = ("none", "3to1", "bf16")
        if weight_codec not in codecs:
            raise CutsError("weight_codec must be one of %s" % (codecs,))
        if not (isinstance(weight_budget, int) and weight_budget >= 0):
            raise CutsError("weight_budget must be a byte count >= 0")
        if emulate and weight_budget:
            raise CutsError("weight_budget streams weights to a GPU; an "
                            "emulated model has none")
        self._model = None if emulate else _cuts.Model(
            self.path, device, max_batch, list(devices or []),
            list(device_shares or []), master_gpu,
            sources.index(weight_source), codecs.index(weight_codec),
            weight_budget)
        if self._model is not None:
            self.profiles = list(self._model.profiles)

    @property
    def max_batch(self):
        """The largest batch a run takes (0: the model has no profiles)."""
        return self._model.max_batch if self._model else max(self.profiles)

    def swap_weights(self, path):
        """Replaces the weights with those of `path` (model.cuts of the same
        graph, other values) on every device while sessions keep running:
        each takes them at its next run (cuts_model_swap_weights)."""
        if self._model is None:
            raise CutsError("an emulated model has no device weights")
        self._model.swap_weights(os.fspath(path))

    def session(self, cuda_graph=False):
        """A session: make one per thread."""
        return Session(self, cuda_graph)

    def __repr__(self):
        return "cuts.Model(%r, inputs=%s, outputs=%s, profiles=%s)" % (
            self.path, self.inputs, self.outputs, self.profiles)


def load(path, device=0, max_batch=0, emulate=False, devices=None,
         device_shares=None, master_gpu=False, weight_source="host",
         weight_codec="none", weight_budget=0):
    """Loads model.cuts onto GPU `device` (profiles above the first that
    serves `max_batch` are left out). devices=[0, 1, ...]: data parallel,
    the model on each (a device may repeat), every run's batch split across
    them in proportion to device_shares (equal by default); needs batch
    profiles, and numpy inputs; master_gpu=True: the baseline that sends
    every slice through the first device instead; weight_source: how the
    devices after the first get the weights ("host", "peer" copies from the
    first, "nccl" broadcast); weight_codec: sent encoded, "3to1" (ScaleDNN's
    compression) or "bf16" (truncation), every device then holding the
    decoded weights (needs cuts compile --weight-codecs); weight_budget:
    at most this many bytes of weights on the GPU, the rest streamed from
    the file as the kernels run (one device). emulate=True: no GPU, every
    kernel run on the CPU."""
    return Model(path, device, max_batch, emulate, devices, device_shares,
                 master_gpu, weight_source, weight_codec, weight_budget)


class Session:
    """Runs of one model on one stream. Not for two threads at once."""

    def __init__(self, model, cuda_graph=False):
        self.model = model
        self._session = (None if model.emulate
                         else _cuts.Session(model._model, cuda_graph))

    def _batch(self, inputs):
        for t in self.model.inputs:
            if t.batch_axis == 0 and t.name in inputs:
                shape = getattr(inputs[t.name], "shape", ())
                if len(shape):
                    return int(shape[0])
        return 0

    def run(self, inputs, device_outputs=False):
        """inputs: {name: array} (numpy arrays, or any DLPack tensor; torch
        and cupy tensors on the GPU are read in place). Returns {name:
        output}: numpy arrays, or with device_outputs=True arrays on the GPU
        (torch tensors where the inputs were torch's, else DLPack objects).
        With batch profiles, any batch up to the model's largest."""
        names = {t.name for t in self.model.inputs}
        unknown = sorted(set(inputs) - names)
        if unknown:
            raise CutsError("the model has no input %r (its inputs: %s)" %
                            (unknown[0], sorted(names)))
        missing = [t.name for t in self.model.inputs if t.name not in inputs]
        if missing:
            raise CutsError("no value for input %r" % missing[0])
        if self.model.emulate:
            if device_outputs:
                raise CutsError("an emulated model has no device outputs")
            return self._emulate(inputs)
        device = any(_is_device_array(v) for v in inputs.values())
        if device or device_outputs:
            return self._run_device(inputs, device_outputs)
        return self._run_host(inputs)

    @staticmethod
    def _host_array(t, x):
        """x as a contiguous numpy array of input t's dtype (converted
        within its kind: float64 to float32, int32 to int64)."""
        x = np.ascontiguousarray(np.asarray(x))
        want = _DTYPES[t.dtype][1]
        if x.dtype != want:
            if x.dtype.kind != np.dtype(want).kind:
                raise CutsError("input %r: %s given, the model's is %s" %
                                (t.name, x.dtype, t.dtype))
            x = x.astype(want)
        return x

    def _host_inputs(self, inputs):
        return [(t.name, self._host_array(t, inputs[t.name]))
                for t in self.model.inputs]

    def _run_host(self, inputs):
        batch = self._batch(inputs)
        ins = self._host_inputs(inputs)
        outs = [(t.name, np.empty(t.shape_at(batch), _DTYPES[t.dtype][1]))
                for t in self.model.outputs]
        self._session.run(ins, [_DTYPES[t.dtype][0] for t in self.model.inputs],
                          outs, [_DTYPES[t.dtype][0] for t in
                                 self.model.outputs], False)
        return dict(outs)

    def _run_device(self, inputs, device_outputs):
        batch = self._batch(inputs)
        dev = self.model.device
        keep = []  # device copies of host inputs, alive for the run
        ins = []
        torch_in = False
        for t in self.model.inputs:
            x = inputs[t.name]
            if _is_device_array(x):
                torch_in = torch_in or type(x).__module__.startswith("torch")
                ins.append((t.name, x))
                continue
            x = self._host_array(t, x)
            buf = DeviceBuffer(dev, x.nbytes)
            buf.copy_from(x.reshape(-1).view(np.uint8))
            keep.append(buf)
            ins.append((t.name, buf.view(_DTYPES[t.dtype][0], list(x.shape),
                                         dev)))
        outs, bufs = [], []
        for t in self.model.outputs:
            shape = list(t.shape_at(batch))
            n = int(np.prod(shape)) * np.dtype(_DTYPES[t.dtype][1]).itemsize
            buf = DeviceBuffer(dev, n)
            bufs.append(buf)
            outs.append((t.name, buf.view(_DTYPES[t.dtype][0], shape, dev)))
        self._session.run(ins, [_DTYPES[t.dtype][0] for t in self.model.inputs],
                          outs, [_DTYPES[t.dtype][0] for t in
                                 self.model.outputs], True)
        result = {}
        for (name, arr), buf, t in zip(outs, bufs, self.model.outputs):
            if device_outputs:
                if torch_in:
                    import torch
                    arr = torch.from_dlpack(arr)
                result[name] = arr
            else:
                host = np.empty(t.shape_at(batch), _DTYPES[t.dtype][1])
                buf.copy_to(host.reshape(-1).view(np.uint8))
                result[name] = host
        return result

    def _emulate(self, inputs):
        with tempfile.TemporaryDirectory(prefix="cuts-emulate-") as d:
            args = [_cuts_executable(), "run", self.model.path, "--emulate",
                    "--output-dir", d]
            for name, x in self._host_inputs(inputs):
                f = os.path.join(d, "in_%d.npy" % len(args))
                np.save(f, x)
                args += ["--input", "%s=%s" % (name, f)]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode:
                raise CutsError(_cli_error(r.stderr))
            return {t.name: np.load(os.path.join(d, t.name + ".npy"))
                    for t in self.model.outputs}

    def submit(self, inputs):
        """A pipelined host run (cuts_session_submit_host): returns at
        once with a Pending whose wait() gives the outputs as run() does.
        While one run computes the next one's inputs are copied in
        (pre-loading); two are in flight, a third submission waits for the
        oldest. Arrays from cuts.pinned_empty are copied by DMA."""
        if self._session is None:
            raise CutsError("an emulated model runs with run()")
        batch = self._batch(inputs)
        ins = self._host_inputs(inputs)
        outs = [(t.name, pinned_empty(t.shape_at(batch), _DTYPES[t.dtype][1]))
                for t in self.model.outputs]
        ticket = self._session.submit(
            ins, [_DTYPES[t.dtype][0] for t in self.model.inputs], outs,
            [_DTYPES[t.dtype][0] for t in self.model.outputs])
        return Pending(self, ticket, ins, outs)

    def set_preload(self, on):
        """Pre-loading on (the default) or off, for a comparison."""
        self._session.set_preload(bool(on))

    def movement(self, reset=False):
        """Per device-list entry, where host runs' time went (ms summed
        since the last reset): h2d, h2d_hidden (pre-loaded), peer,
        compute, gather, d2h, and the weights' broadcast at load."""
        return self._session.movement(reset)

    def run_info(self):
        """(batch, profile_batch) of the last run: a profile_batch above
        the batch means the inputs were padded to that profile."""
        if self._session is None:
            return (0, 0)
        return self._session.run_info()

    def benchmark(self, warmup=10, iters=100, batch=0):
        """Milliseconds of `iters` runs (on the session's own buffers) at
        `batch` (0: the largest profile)."""
        if self._session is None:
            raise CutsError("an emulated model cannot be timed")
        return self._session.benchmark(batch, warmup, iters)


class Pending:
    """A submitted run: wait() returns its outputs ({name: numpy array})."""

    def __init__(self, session, ticket, inputs, outputs):
        self._session, self.ticket = session, ticket
        self._inputs, self._outputs = inputs, outputs  # alive until waited

    def wait(self):
        self._session._session.wait(self.ticket)
        self._inputs = None
        return dict(self._outputs)


def pinned_empty(shape, dtype):
    """An uninitialised numpy array in page-locked host memory, which host
    runs copy by DMA (no staging)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return _cuts.pinned(n)[:n].view(dtype).reshape(shape)


def _cli_error(stderr):
    """The CLI's error line ("cuts: error: ..."), else its last line."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    errs = [l for l in lines if "error:" in l]
    return (errs or lines or ["cuts failed"])[-1]


def compile(model, arch, out, tune=False, precision=None, batch=None,
            args=(), progress=None):
    """Runs `cuts compile model --arch arch -o out` (with --tune,
    --precision, --batch 1,8,32 and any further `args`), showing the
    compile's phases as a progress bar on stderr (progress=None: when
    stderr is a terminal). Returns the path of out/model.cuts; a failed
    compile raises CutsError with the compiler's message."""
    cmd = [_cuts_executable(), "compile", os.fspath(model), "--arch", arch,
           "-o", os.fspath(out)]
    if tune:
        cmd.append("--tune")
    if precision:
        cmd += ["--precision", precision]
    if batch:
        cmd += ["--batch", ",".join(str(b) for b in batch)]
    cmd += list(args)
    if progress is None:
        progress = sys.stderr.isatty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    errors = []
    step = re.compile(r"cuts: ([\w ]+): (\d+)/(\d+)")
    for line in p.stderr:
        errors.append(line)
        m = step.search(line)
        if progress and m:
            done, total = int(m.group(2)), int(m.group(3))
            bar = "#" * (30 * done // max(total, 1))
            sys.stderr.write("\r%-10s [%-30s] %d/%d" %
                             (m.group(1)[:10], bar, done, total))
            sys.stderr.flush()
    p.stdout.read()
    if p.wait():
        if progress:
            sys.stderr.write("\n")
        raise CutsError(_cli_error("".join(errors)))
    if progress:
        sys.stderr.write("\n")
    return os.path.join(os.fspath(out), "model.cuts")

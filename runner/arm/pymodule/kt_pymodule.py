"""kt_pymodule.py - the Python half of the pymodule kind of arm (runner/arm/pymodule/), embedded
in ktrial and run by the interpreter the per-point worker starts (kernels/python/py_runtime.h).

A Session holds one point: the problem file (KernelBench's layout: class Model, get_inputs(),
get_init_inputs(), module-level sizes) with the spec's globals set on it, the seeded inputs of
each set, the weights' seed, each arm's module, and the float64 reference (Model in double; where
Model cannot run in double, the fp32 Model, which the result says). C drives it:

  prepare(arm)              make the arm's module (same seed, same get_init_inputs() for every
                            arm), run it once on every set, return each set's numerics
  stage(arm, set, rep)      untimed: the inputs of this call (rep >= 0: the set's inputs with a
                            few elements replaced, new for every repetition, so no two timed
                            calls see the same content) copied into the arm's input tensors,
                            the same memory at every call as an engine's buffers are; returns
                            the late writes found in other arms' held outputs
  run()                     the timed call: module(*inputs)
  after()                   untimed, first thing after the timer: a snapshot of the outputs
  check()                   the snapshot against the float64 reference of the inputs it was
                            given; inputs unchanged; no output sharing memory with an input or an
                            earlier output; returns (reason, numerics), reason "" when all hold

Every reason starts with the name of the check that failed (the names the kernel arms use where
they fit): reference, finite, fresh-inputs, inputs-unchanged, aliasing, late-writes.
"""
import ctypes
import importlib.util
import json
import math
import os
import sys
import time

import torch

CHECKS = ("reference", "finite", "fresh-inputs", "inputs-unchanged", "aliasing", "late-writes")


def _mix(*values):
    """A 63-bit seed from integers (splitmix64's finaliser over their sum chain)."""
    x = 0x9E3779B97F4A7C15
    for v in values:
        x = (x ^ (v & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 31
    return x & 0x7FFFFFFFFFFFFFFF


def _blas_threads(n):
    """The spec's threads for the OpenBLAS under torch's matmul too: ktrial loaded OpenBLAS
    before the interpreter started, so OPENBLAS_NUM_THREADS came too late for it, and
    torch.set_num_threads does not reach it."""
    try:
        ctypes.CDLL(None).openblas_set_num_threads(ctypes.c_int(n))
    except (OSError, AttributeError):
        pass  # no OpenBLAS in this process: nothing to set


def _load(path, name, names):
    """The file at 'path' as a new module 'name', with 'names' set on it after it ran."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
    for key, value in names.items():
        setattr(module, key, value)
    return module


def _tensors(value, what):
    """A returned tensor or tuple/list of tensors as a list; anything else is refused."""
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    for i, t in enumerate(items):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what} returned {type(t).__name__} at output {i}, "
                            "not a tensor or a tuple of tensors")
    return items


def _span(t):
    """The byte range of the storage under tensor 't'."""
    s = t.storage()
    lo = s.data_ptr()
    return lo, lo + s.nbytes()


def _overlaps(a, b):
    (alo, ahi), (blo, bhi) = _span(a), _span(b)
    return alo < bhi and blo < ahi and ahi > alo and bhi > blo


def _numerics(out, ref):
    """(elems, nonfinite, max_abs, max_rel, rel_l2, cosine) of 'out' against 'ref', over all
    outputs together, in float64."""
    elems = nonfinite = 0
    max_abs = max_rel = 0.0
    dd = rr = oo = orr = 0.0
    for o, r in zip(out, ref):
        o = o.detach().to(torch.float64).reshape(-1)
        r = r.detach().to(torch.float64).reshape(-1)
        elems += o.numel()
        finite = torch.isfinite(o)
        nonfinite += int((~finite).sum())
        o, r = o[finite], r[finite]
        if o.numel() == 0:
            continue
        d = (o - r).abs()
        max_abs = max(max_abs, float(d.max()))
        floor = 1e-3 * float(r.abs().max())
        max_rel = max(max_rel, float((d / r.abs().clamp_min(max(floor, 1e-300))).max()))
        dd += float((d * d).sum())
        rr += float((r * r).sum())
        oo += float((o * o).sum())
        orr += float((o * r).sum())
    rel_l2 = math.sqrt(dd / rr) if rr > 0 else math.sqrt(dd)
    cosine = orr / math.sqrt(oo * rr) if oo > 0 and rr > 0 else (1.0 if dd == 0 else 0.0)
    return (elems, nonfinite, max_abs, max_rel, rel_l2, cosine)


class Session:
    def __init__(self, problem, globals_json, arms, seed, sets, max_rel_l2):
        torch.set_grad_enabled(False)
        _blas_threads(torch.get_num_threads())
        self.names = json.loads(globals_json)
        self.problem = _load(problem, "kt_problem", self.names)
        for need in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.problem, need):
                raise AttributeError(f"{problem} has no '{need}' (KernelBench's layout: class "
                                     "Model, get_inputs(), get_init_inputs())")
        self.arms = arms  # [(file, class)], 0 the baseline
        self.seed = seed
        self.limit = max_rel_l2 if max_rel_l2 == max_rel_l2 else 1e-3  # NaN: not set
        torch.manual_seed(_mix(seed, 0x696E6974))
        self.init = list(self.problem.get_init_inputs())
        self.sets = []
        for s in range(sets):
            torch.manual_seed(_mix(seed, s))
            self.sets.append([t.contiguous() if isinstance(t, torch.Tensor) else t
                              for t in self.problem.get_inputs()])
        self.modules = [None] * len(arms)
        self.reference_note = ""
        self.ref_model = self._reference_model()
        self.cache = {}  # (set, rep) -> (inputs, reference outputs); the latest rep kept
        self.held = {}  # arm -> (live outputs, snapshot): re-read for late writes
        self.history = []  # (what, reference outputs) of the inputs calls were given, latest last
        self.staged = None
        self.bufs = {}  # arm -> its input tensors: the same memory every call, new content

    def _make(self, cls):
        torch.manual_seed(_mix(self.seed, 0x77656967))
        return cls(*self.init)

    def _reference_model(self):
        self.double = True
        try:
            model = self._make(self.problem.Model).double()
            model(*self._double(self.sets[0]))
            self.double = True
            return model
        except Exception as e:  # a module that cannot run in double: the fp32 Model, said so
            self.double = False
            self.reference_note = (f"Model cannot run in float64 ({type(e).__name__}: {e}); "
                                   "the reference is the fp32 Model")
            return self._make(self.problem.Model)

    def _double(self, inputs):
        if not self.double:
            return inputs
        return [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                for t in inputs]

    def _inputs(self, s, rep):
        """The pristine inputs of set 's' at repetition 'rep' and their reference outputs."""
        key = (s, rep if rep >= 0 else -1)
        if key in self.cache:
            return self.cache[key]
        base = self.sets[s]
        if rep < 0:
            inputs = base
        else:  # a few elements replaced by others of the same tensor: new content, same law
            g = torch.Generator().manual_seed(_mix(self.seed, s, rep, 0x66726573))
            inputs = []
            for t in base:
                if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 1:
                    flat = t.clone().reshape(-1)
                    m = max(2, min(256, flat.numel() // 64))
                    idx = torch.randint(flat.numel(), (m,), generator=g)
                    src = torch.randint(flat.numel(), (m,), generator=g)
                    flat[idx] = t.reshape(-1)[src] * (1.0 + 0.25 * torch.rand(m, generator=g))
                    inputs.append(flat.reshape(t.shape))
                else:
                    inputs.append(t)
        ref = _tensors(self.ref_model(*self._double(inputs)), "Model")
        what = f"input set {s}" if rep < 0 else f"repetition {rep} of input set {s}"
        self.history = [h for h in self.history if h[0] != what][-15:] + [(what, ref)]
        for k in [k for k in self.cache if k[1] >= 0]:
            del self.cache[k]
        self.cache[key] = (inputs, ref)
        return self.cache[key]

    def prepare(self, arm):
        """Makes the arm's module and runs it once on each set; a list of each set's
        (reason, numerics)."""
        file, cls = self.arms[arm]
        if os.path.abspath(file) == os.path.abspath(self.problem.__file__):
            module = self.problem
        else:
            module = _load(file, f"kt_arm_{arm}", self.names)
        if not hasattr(module, cls):
            raise AttributeError(f"{file} has no class '{cls}'")
        self.modules[arm] = self._make(getattr(module, cls))
        results = []
        for s in range(len(self.sets)):
            self.stage(arm, s, -1)
            self.run()
            self.after()
            results.append(self.check())
        self.held.pop(arm, None)
        return results

    def stage(self, arm, s, rep):
        """Untimed, before a call: fresh tensors with the inputs of (s, rep); the late writes
        found in the outputs other arms' earlier calls left, as [(arm, reason)]."""
        late = self.late_writes(arm)
        inputs, ref = self._inputs(s, rep)
        bufs = self.bufs.get(arm)
        if bufs is None or any(isinstance(t, torch.Tensor) and b.shape != t.shape
                               for b, t in zip(bufs, inputs)):
            bufs = self.bufs[arm] = [t.clone() if isinstance(t, torch.Tensor) else t
                                     for t in inputs]
        args = [b.copy_(t) if isinstance(t, torch.Tensor) else t for b, t in zip(bufs, inputs)]
        self.staged = (arm, self.modules[arm], args, inputs, ref)
        self.ret = None
        return late

    def run(self):
        self.ret = self.staged[1](*self.staged[2])

    def after(self):
        self.outs = _tensors(self.ret, self.arms[self.staged[0]][1])
        self.snap = [o.detach().clone() for o in self.outs]

    def late_writes(self, calling):
        """Outputs of other arms' calls that changed since their snapshot: written late."""
        found = []
        for arm, (live, snap) in list(self.held.items()):
            if arm != calling and any(not torch.equal(a, b) for a, b in zip(live, snap)
                                      if a.shape == b.shape):
                found.append((arm, "late-writes: its output changed after its call returned "
                                   "(seen at another arm's call): work left running past the "
                                   "timed call"))
                del self.held[arm]
        return found

    def check(self):
        """(reason, numerics + (inputs_modified,)) of the staged call."""
        arm, _, args, inputs, ref = self.staged
        out, snap = self.outs, self.snap
        bad = (0, 0, 0.0, 0.0, 0.0, 0.0, 0)
        if len(out) != len(ref) or any(o.shape != r.shape for o, r in zip(out, ref)):
            return (f"reference: output shapes {[tuple(o.shape) for o in out]}, Model's "
                    f"{[tuple(r.shape) for r in ref]}", bad)
        modified = any(isinstance(a, torch.Tensor) and not torch.equal(a, p)
                       for a, p in zip(args, inputs))
        for i, o in enumerate(out):
            for j, a in enumerate(args):
                if isinstance(a, torch.Tensor) and _overlaps(o, a):
                    return (f"aliasing: output {i} shares memory with input {j} "
                            "(an input returned or written as the output)", bad)
            for other, (live, _) in self.held.items():
                if any(_overlaps(o, e) for e in live):
                    who = "an earlier call's" if other == arm else f"arm {other}'s"
                    return (f"aliasing: output {i} shares memory with {who} output "
                            "(a result kept and handed out again)", bad)
        n = _numerics(snap, ref)
        numerics = n + (1 if modified else 0,)
        if modified:
            return ("inputs-unchanged: it wrote into its inputs", numerics)
        reason = ""
        if (n[1] > 0 and _numerics(ref, ref)[1] == 0) or n[4] > self.limit:
            reason = self._why_wrong(arm, out, snap, ref, n)
        self.held[arm] = (out, snap)
        return (reason, numerics)

    def _why_wrong(self, arm, out, snap, ref, n):
        """The check a wrong output fails: late-writes when it changes after the call returned,
        fresh-inputs when it is an earlier call's result, finite for NaN or Inf, else
        reference."""
        time.sleep(0.05)  # a thread still writing the output has had the time to
        if any(not torch.equal(a, b) for a, b in zip(out, snap)):
            return ("late-writes: its output changed after the call returned: work left "
                    "running past the timed call")
        for what, other in self.history:
            if other is not ref and len(other) == len(snap) and all(
                    a.shape == b.shape for a, b in zip(other, snap)):
                if _numerics(snap, other)[4] <= self.limit < _numerics(other, ref)[4]:
                    return (f"fresh-inputs: its output is the result of other inputs ({what}), "
                            f"not of the inputs it was given (rel_l2 {n[4]:.3g}): a memoised "
                            "result")
        if n[1] > 0:
            return f"finite: {n[1]} of {n[0]} output elements NaN or Inf"
        zeros = all(int(torch.count_nonzero(s)) == 0 for s in snap)
        return (f"reference: rel_l2 {n[4]:.3g} against the {'float64' if self.double else 'fp32'}"
                f" reference exceeds {self.limit:.3g}{' (all zeros)' if zeros else ''}")

"""Running an op: promote, compute the forward, record the graph, push tangents.

Everything an op needs besides its own formulas happens here, once: type
promotion, wrapping Python numbers, view bookkeeping, in-place writes and
version bumps, saving what the rules name, and forward-mode tangents.

Every call passes through ``_run``, the ops inside derivative rules too, and
mostly on arrays of a few elements, where the Python around the NumPy call
is the whole cost. So a call does only what it needs: arguments bound by the
op's precomputed binder, one pass over the inputs, NumPy's error state
swapped in rather than rebuilt, and no forward-mode work without a dual level.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import dtypes
from ..autograd import tangents
from ..autograd.node import OpNode
from ..autograd.saved import INFERENCE_SAVED
from ..autograd.view_nodes import (check_view_inplace, creation_kind, inherit_kind,
                                    rebase_after_inplace)
from ..grad_mode import _state as _MODES, is_inference_mode_enabled, is_recording, no_grad
from ..tensor import Tensor, wrap_array
from .registry import OPS, OpDef

# The live list of open dual levels (never rebound): an empty list is the
# fast exit from forward-mode work on every call.
_DUAL_LEVELS = tangents._levels


class VmapSlot:
    """Where ``refengine.batching`` plugs into the dispatcher, which does not import it.

    ``active`` counts the vmap calls running, in any thread: while it is 0 no
    call looks further. ``run(op, env, out)`` runs a call on batched tensors,
    or returns ``NotImplemented`` when none of its arguments is batched.
    """

    active = 0
    run = None


VMAP = VmapSlot()


def _errstate_quiet():
    """NumPy 1.x: the public context manager (its state is not a context variable)."""
    state = np.errstate(all="ignore")
    state.__enter__()
    return state


def _errstate_restore(state) -> None:
    state.__exit__(None, None, None)


try:
    # NumPy 2 keeps the error state in a context variable. np.errstate builds
    # a new state object on every entry, about as costly as a small ufunc;
    # the quiet state derived from a given current state is always the same,
    # so it is built once per current state and swapped in with set/reset.
    from numpy._core.umath import _extobj_contextvar as _FP_STATE
    from numpy._core.umath import _make_extobj
except ImportError:
    _quiet_fp, _restore_fp = _errstate_quiet, _errstate_restore
else:
    _quiet_for = (None, None)   # (current state, its all="ignore" version)

    def _quiet_fp():
        """Switch NumPy's floating-point errors off in this context; returns a token."""
        global _quiet_for
        current = _FP_STATE.get()
        seen, quiet = _quiet_for
        if current is not seen:
            quiet = _make_extobj(all="ignore")   # keeps the current bufsize and errcall
            _quiet_for = (current, quiet)
        return _FP_STATE.set(quiet)

    _restore_fp = _FP_STATE.reset


def wrap_number(value) -> Tensor:
    """A Python number as a zero-dim tensor that promotes like a number."""
    t = wrap_array(np.asarray(value))
    t._wrapped_number = dtypes.scalar_dtype(value)
    return t


def is_number(value) -> bool:
    """Whether ``value`` is a Python number, or a tensor that wraps one."""
    return not isinstance(value, Tensor) or value._wrapped_number is not None


def call(op: OpDef, *args, **kwargs):
    """Apply ``op`` out of place; returns a Tensor or a tuple of Tensors."""
    return _run(op, op.bind(args, kwargs), None)


def call_inplace(op: OpDef, self: Tensor, *args, **kwargs) -> Tensor:
    """Apply ``op`` writing its result into ``self`` (the ``NAME_`` variant)."""
    env = op.bind((self,) + args, kwargs)
    if self._is_inference and not is_inference_mode_enabled():
        _check_partial_overlap(op, env, self)     # torch's kernel refuses that first
        # PyTorch writes the values, unrecorded and with no tangent, and then
        # refuses the update
        with no_grad(), contextlib.ExitStack() as off:
            for level in tangents.active_levels():
                off.enter_context(tangents.excluding(level))
            _run(op, env, self)
        raise RuntimeError(INFERENCE_INPLACE)
    _check_inplace(self)
    _check_partial_overlap(op, env, self)
    return _run(op, env, self)


def _dense_bytes(a: np.ndarray):
    """The byte range of an array that covers it exactly (no gaps, no repeats), or None."""
    lo, hi = np.lib.array_utils.byte_bounds(a) if hasattr(np.lib, "array_utils") \
        else np.byte_bounds(a)
    return (lo, hi) if hi - lo == a.size * a.itemsize else None


def _same_layout(a: np.ndarray, b: np.ndarray) -> bool:
    # strides of dimensions of size 1 address nothing: a one-element tangent
    # made by broadcasting (stride 0) is the same memory as its view
    return a.shape == b.shape and all(
        x == y for x, y, n in zip(a.strides, b.strides, a.shape) if n > 1)


def _check_partial_overlap(op: OpDef, env: dict, self: Tensor) -> None:
    # PyTorch refuses an input that shares some, but not all, of the memory
    # written (the result would depend on the order elements are written)
    written = None
    for name in op.inputs[1:]:
        value = env.get(name)
        if not isinstance(value, Tensor) or value is self or value._storage is not self._storage:
            continue
        written = written or _dense_bytes(self._data)
        read = _dense_bytes(value._data)
        if written is None or read is None or (read == written and _same_layout(value._data,
                                                                                self._data)):
            continue
        if read[0] < written[1] and written[0] < read[1]:
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")


INFERENCE_INPLACE = (   # PyTorch's words, its missing spaces included
    "Inplace update to inference tensor outside InferenceMode is not allowed.You "
    "can make a clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")


def _check_inplace(self: Tensor) -> None:
    if self._is_inference and not is_inference_mode_enabled():
        raise RuntimeError(INFERENCE_INPLACE)
    if not is_recording() or not self.requires_grad:
        return
    # PyTorch's order: how the view was made, a view of a leaf, a leaf; its leaf test reads a
    # view's node unregenerated (a view untouched since its base's write gave it a history)
    if self._base is not None:
        check_view_inplace(self)
        if self._base.is_leaf:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    if self.is_leaf if self._base is None else self._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _inputs(op: OpDef, env: dict) -> tuple[dict, bool, bool]:
    """The tensor arguments (Python numbers wrapped, also in ``env``), whether
    all of them are numbers, and whether the call is recorded for backward. One pass
    does all three; ``requires_grad`` is read only when the op is recorded now and
    only until one input needs a gradient, as ``any`` would.
    """
    grad_on = op.vjp is not None and _MODES.grad and not _MODES.inference   # (is_recording())
    tensors = {}
    numbers_only = record = False
    nondiff = op.nondiff
    for name in op.inputs:
        value = env.get(name)
        if value is None:
            continue
        if not isinstance(value, Tensor):
            if isinstance(value, (list, tuple)):
                value = [v if isinstance(v, Tensor) else wrap_number(v) for v in value]
            else:
                value = wrap_number(value)
            env[name] = value
        if not tensors:
            numbers_only = True
        tensors[name] = value
        if isinstance(value, list):
            numbers_only = False
            if grad_on and not record and name not in nondiff:
                record = any(x.requires_grad for x in value)
            continue
        if not value._wrapped_number:
            numbers_only = False
        if grad_on and not record and name not in nondiff:
            record = value.requires_grad
    return tensors, numbers_only, record and op.reaches_autograd(tensors)


def _promoted_dtype(op: OpDef, tensors: dict, numbers_only: bool):
    members, common = [], None
    for n in op.promote:
        t = tensors.get(n)
        if t is None:
            continue
        if isinstance(t, list):
            members.extend(t)
            common = False
            continue
        members.append(t)
        if t._wrapped_number:
            common = False
        elif common is None:
            common = t._data.dtype   # (NumPy's: no frame) tensors of one dtype promote to it
        elif common is not False and common is not t._data.dtype:
            common = False
    dt = dtypes.result_type(*members) if common is None or common is False else (
        dtypes._BY_NP.get(common) or dtypes.from_numpy_dtype(common))
    if op.to_float and not (dt.is_floating_point or dt.is_complex):
        dt = dtypes.get_default_dtype()
    if numbers_only:
        # numbers only (say 1/n inside a rule): compute at full precision, as
        # Python (and PyTorch's Scalar arithmetic) would
        dt = _FULL_PRECISION[dt._category]
    return dt


_FULL_PRECISION = {0: dtypes.bool_, 1: dtypes.int64, 2: dtypes.float64, 3: dtypes.complex128}


def _forward(op: OpDef, env: dict, tensors: dict, numbers_only: bool) -> tuple[list, object]:
    promote = op.promote
    dt = _promoted_dtype(op, tensors, numbers_only) if promote is not None else None
    want_np = dt.np if dt is not None else None
    args = dict(env)
    scalars = op.scalar_inputs
    for n, t in tensors.items():
        if isinstance(t, list):
            a = [x._data for x in t]
            if want_np is not None and n in promote:
                a = [x if x.dtype is want_np else x.astype(want_np, copy=False) for x in a]
        else:
            a = t._data
            if want_np is not None and a.dtype is not want_np and n in promote:
                a = a.astype(want_np, copy=False)
            if scalars and t._wrapped_number and n in scalars:
                # a Scalar reaches the forward as a NumPy scalar, not a 0-dim array:
                # torch special-cases some Scalars (pow's exponent 0.5 is sqrt)
                a = a[()]
        args[n] = a
    token = _quiet_fp()   # IEEE results (inf, nan) are the semantics, not warnings
    try:
        result = op.forward(**args)
    except ValueError as error:
        if "could not be broadcast" not in str(error):
            raise
        raise RuntimeError(broadcast_error(
            [t.shape for t in tensors.values() if isinstance(t, Tensor)])) from None
    finally:
        _restore_fp(token)
    want = op.result_dtype(dt) if (op.result_dtype and dt is not None) else dt
    if len(op.outputs) == 1:
        if not isinstance(result, np.ndarray):
            result = np.asarray(result)
        if want is not None and result.dtype is not want.np and result.dtype != want.np:
            result = result.astype(want.np)
        return [result], dt
    results = [r if isinstance(r, np.ndarray) else np.asarray(r) for r in result]
    if want is not None and results[0].dtype != want.np:
        results[0] = results[0].astype(want.np)
    return results, dt


def broadcast_error(shapes) -> str:
    """PyTorch's words for shapes that do not broadcast: folded left to right,
    the rightmost dimension whose sizes differ with neither of them 1."""
    acc = tuple(shapes[0])
    for shape in shapes[1:]:
        shape, ndim = tuple(shape), max(len(acc), len(shape))
        a, b = (1,) * (ndim - len(acc)) + acc, (1,) * (ndim - len(shape)) + shape
        for i in range(ndim - 1, -1, -1):
            if a[i] != b[i] and 1 not in (a[i], b[i]):
                return (f"The size of tensor a ({a[i]}) must match the size of tensor b "
                        f"({b[i]}) at non-singleton dimension {i}")
        acc = tuple(y if x == 1 else x for x, y in zip(a, b))
    return "shapes " + ", ".join(str(list(s)) for s in shapes) + " do not broadcast"


def _same_root(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` view one array: NumPy says an empty view shares no
    memory, but torch's empty slice is a view of its base all the same."""
    def root(x):    # (as_strided's result has a non-array base holding the array)
        while getattr(x, "base", None) is not None:
            x = x.base
        return x
    return root(a) is root(b)


def _wrap_outputs(op: OpDef, results: list, tensors: dict) -> list:
    source = tensors.get(op.inputs[0]) if op.view else None
    if source is None or not isinstance(source, Tensor):
        return [wrap_array(r) for r in results]
    outs = []
    kind = inherit_kind(source._view_meta, creation_kind(multi=len(results) > 1))
    for r in results:
        if np.may_share_memory(r, source._data) or _same_root(r, source._data):
            t = Tensor(_array=r, _storage=source._storage,
                       _base=source._base if source._base is not None else source)
            t._is_inference = source._is_inference
            t._view_version = source._storage.version
            if kind is not None:
                t._view_meta = kind
        else:
            t = wrap_array(r)
        outs.append(t)
    return outs


def _refuse_saved_inference(op: OpDef, tensors: dict) -> None:
    """An in-place op that will save an inference tensor raises before it
    writes, as torch saves before it computes."""
    if is_inference_mode_enabled() or not any(
            isinstance(t, Tensor) and t._is_inference for t in tensors.values()):
        return
    needs = {n: t.requires_grad for n, t in tensors.items()
             if isinstance(t, Tensor) and n in op._diff_inputs
             and not (n in op.scalar_inputs and t._wrapped_number is not None)}
    for name in op.saved_names(needs):
        t = tensors.get(name)
        if isinstance(t, Tensor) and t._is_inference:
            raise RuntimeError(INFERENCE_SAVED)


def _writes_one_value(op: OpDef, env: dict, out: Tensor) -> bool:
    """torch lets fill_ and zero_ write a tensor whose elements share memory
    (every one gets the same value), and copy_ of the same memory does nothing."""
    return op.name in ("fill", "zero") or (op.name == "copy" and out.is_set_to(env.get("src")))


def _write_inplace(out: Tensor, result: np.ndarray, one_value: bool = False) -> None:
    if result.shape != out._data.shape:
        raise RuntimeError(f"output with shape {list(out._data.shape)} doesn't match the "
                           f"broadcast shape {list(result.shape)}")
    src, dst = dtypes.from_numpy_dtype(result.dtype), out.dtype
    if src._category > dst._category:
        raise RuntimeError(f"result type {dtypes.SCALAR_NAMES[src]} can't be cast to the "
                           f"desired output type {dtypes.SCALAR_NAMES[dst]}")
    target = out._data
    if (one_value or not _repeats(target)) and (_repeats(target) or not target.flags.writeable):
        # an expand's memory (read-only in NumPy), written once per place
        target, result = (_distinct_places(target, out._storage.array),
                          result[_distinct_index(target) + (Ellipsis,)])
    if not target.flags.writeable or _repeats(target):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.")
    np.copyto(target, result, casting="unsafe")
    out._bump_version()


def _repeats(a: np.ndarray) -> bool:
    """Some elements of ``a`` share one memory place (an expand's stride 0)."""
    return a.size > 1 and any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape))


def _distinct_index(a: np.ndarray) -> tuple:
    # the first element along every dimension an expand repeats (stride 0)
    return tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)


def _distinct_places(a: np.ndarray, storage: np.ndarray) -> np.ndarray:
    """A writable view of the memory places of ``a`` (read-only because an
    expand repeats some of them), each place once; ``storage`` is the array
    when a's chain of bases ends in NumPy's stride tricks (an expand, a diagonal)."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    root = root if root.flags.writeable and root.flags.c_contiguous else storage
    if not (root.flags.writeable and root.flags.c_contiguous):
        return a
    part = a[_distinct_index(a) + (Ellipsis,)]      # a view, a 0-d one too
    offset = part.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(part.shape, part.dtype, buffer=root, offset=offset, strides=part.strides)


def _run(op: OpDef, env: dict, out: Tensor | None, unbatched: bool = False):
    if VMAP.active and not unbatched:   # (unbatched: the caller saw no BatchedTensor in env)
        batched = VMAP.run(op, env, out)
        if batched is not NotImplemented:
            return batched
    raw = dict(env) if op.variant is not None else env   # only a variant reads the unwrapped args
    tensors, numbers_only, record = _inputs(op, env)
    if op.refuse is not None:
        op.refuse(tensors)
    results, _ = _forward(op, env, tensors, numbers_only)
    levels = tangents.levels_with_tangents(tensors, op) if _DUAL_LEVELS else ()
    if out is not None and record:
        check_view_inplace(out)
        # regenerated now if an earlier write calls for it; an operand view that
        # refuses its grad_fn raises before anything is written, as in torch
        for t in tensors.values():
            if isinstance(t, Tensor) and t._base is not None:
                t.grad_fn
        _refuse_saved_inference(op, tensors)
    if out is not None and (record or levels) and op.reads_self:
        tensors["self"] = env["self"] = _original(out)
    if out is not None:
        if out.is_complex() and results[0].dtype.kind != "c" and op.result_dtype is dtypes.to_real:
            raise RuntimeError(f"In-place {op.name} is not supported for complex tensors.")
        _write_inplace(out, results[0], _writes_one_value(op, env, out))
        for t in ((out, *tensors.values()) if record else ()):  # histories before the write
            if isinstance(t, Tensor) and t._base is not None and t._storage is out._storage:
                t._view_version = out._storage.version
        outs = [out]
    else:
        outs = _wrap_outputs(op, results, tensors) if op.view else [wrap_array(r) for r in (
            op.layout(op, results, tensors) if op.layout is not None else results)]
        if numbers_only and op.promote is not None:
            for t in outs:   # still a number: it promotes like one
                t._wrapped_number = dtypes.scalar_dtype(t._data.item())
    if op.view and out is None:
        _record_view_fn(op, env, tensors, outs)
    if record:
        old = out._grad_fn if out is not None else None
        node = OpNode.create(op, raw, env, tensors, outs, inplace=out is not None)
        if out is not None:
            rebase_after_inplace(out, node, old, tensors.values())
    if levels:
        tangents.push_tangents(op, env, tensors, outs, levels, inplace=out is not None)
    return out if out is not None else tuple(outs) if len(op.outputs) > 1 else outs[0]


def _original(t: Tensor) -> Tensor:
    """The value of ``t`` before an in-place write, with ``t``'s current history.

    Rules that need the input as it was (``mul_`` needs the old ``self`` for
    ``other``'s gradient) read this copy; the graph edge still goes to the
    tensor's previous ``grad_fn``, as in PyTorch.
    """
    orig = Tensor(_array=t._data.copy())
    orig._grad_fn, orig._output_nr = t.grad_fn, t._output_nr
    orig._requires_grad = t._requires_grad
    if t.grad_fn is None and t._requires_grad:
        orig._grad_accumulator = t._get_grad_accumulator()
    for level in tangents.active_levels():
        tangent = tangents.get_tangent(t, level)
        if tangent is not None:
            # a copy: the in-place jvp will overwrite t's tangent object
            with tangents.excluding(level):
                orig._fw_grads[level] = call(OPS["clone"], tangent)
    return orig


def _record_view_fn(op: OpDef, env: dict, tensors: dict, outs: list) -> None:
    source = tensors[op.inputs[0]]
    args = {k: v for k, v in env.items() if k != op.inputs[0]}
    fw_base = source._fw_base if source._fw_base is not None else source
    for i, t in enumerate(outs):
        if t._base is None:
            continue
        t._view_fn = _compose(op, args, i, source._view_fn, source)
        # a view of a root has the same path from its backward and its
        # forward base: one function serves both
        same = source._fw_view_fn is source._view_fn
        t._fw_base = fw_base
        t._fw_view_fn = t._view_fn if same else _compose(op, args, i, source._fw_view_fn, source)


def _compose(op: OpDef, args: dict, i: int, prev, source: Tensor):
    """base -> this view: ``prev`` (base -> source) followed by ``op``.

    Without ``prev`` the source is the base. An in-place view op (``t_``,
    ``squeeze_``...) may reshape the base later: the view then reads the
    base as it was, through the undo of each such op made since.
    """
    if prev is None:
        log = source._geometry_log
        if log is None:
            log = source._geometry_log = []
        made_at = len(log)

        def prev(base):
            for undo in reversed(log[made_at:]):
                base = undo(base)
            return base

    def view_fn(base):
        v = call(op, prev(base), **args)
        return v[i] if isinstance(v, tuple) else v
    return view_fn

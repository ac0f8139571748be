"""Running an op: promote, compute the forward, record the graph, push tangents.

Everything an op needs besides its own formulas happens here, once: type
promotion, wrapping Python numbers, view bookkeeping, in-place writes and
version bumps, saving what the rules name, and forward-mode tangents.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..autograd import forward_ad
from ..autograd.node import OpNode
from ..grad_mode import is_grad_enabled, is_inference_mode_enabled
from ..tensor import Tensor
from ..batching.batched import ACTIVE as _VMAP_ACTIVE, BatchedTensor, top_level
from .opdef import OPS, OpDef


def wrap_number(value) -> Tensor:
    """A Python number as a zero-dim tensor that promotes like a number."""
    t = Tensor(_array=np.asarray(value))
    t._wrapped_number = dtypes.scalar_dtype(value)
    return t


def call(op: OpDef, *args, **kwargs):
    """Apply ``op`` out of place; returns a Tensor or a tuple of Tensors."""
    bound = op.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return _run(op, dict(bound.arguments), out=None)


def call_inplace(op: OpDef, self: Tensor, *args, **kwargs) -> Tensor:
    """Apply ``op`` writing its result into ``self`` (the ``NAME_`` variant)."""
    bound = op.signature.bind(self, *args, **kwargs)
    bound.apply_defaults()
    _check_inplace(self)
    return _run(op, dict(bound.arguments), out=self)


def _check_inplace(self: Tensor) -> None:
    if self._is_inference and not is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed. You can make a clone to get a normal tensor before doing "
                           "inplace update.")
    if not is_grad_enabled():
        return
    if self._view_meta is not None and self._view_meta[0] == "no_grad" and self._base.requires_grad:
        _refuse_view_inplace(self)
    if not self.requires_grad:
        return
    if self._base is not None and self._base.is_leaf and self._base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if self.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _tensor_inputs(op: OpDef, env: dict) -> dict:
    tensors = {}
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
        tensors[name] = value
    return tensors


def _promoted_arrays(op: OpDef, tensors: dict):
    arrays = {n: ([v._data for v in t] if isinstance(t, list) else t._data)
              for n, t in tensors.items()}
    if op.promote is None:
        return arrays, None
    members = [t for n in op.promote if n in tensors
               for t in (tensors[n] if isinstance(tensors[n], list) else [tensors[n]])]
    dt = dtypes.result_type(*members)
    if op.to_float and not (dt.is_floating_point or dt.is_complex):
        dt = dtypes.get_default_dtype()
    if _numbers_only(tensors):
        # numbers only (say 1/n inside a rule): compute at full precision, as
        # Python (and PyTorch's Scalar arithmetic) would
        dt = _FULL_PRECISION[dt._category]
    for n in op.promote:
        if n in arrays:
            a = arrays[n]
            arrays[n] = ([x.astype(dt.np, copy=False) for x in a] if isinstance(a, list)
                         else a.astype(dt.np, copy=False))
    return arrays, dt


_FULL_PRECISION = {0: dtypes.bool_, 1: dtypes.int64, 2: dtypes.float64, 3: dtypes.complex128}


def _numbers_only(tensors: dict) -> bool:
    """Whether every tensor input is a wrapped Python number."""
    items = list(tensors.values())
    return bool(items) and all(not isinstance(t, list) and t._wrapped_number for t in items)


def _forward(op: OpDef, env: dict, tensors: dict) -> tuple[list, object]:
    arrays, dt = _promoted_arrays(op, tensors)
    with np.errstate(all="ignore"):   # IEEE results (inf, nan) are the semantics, not warnings
        result = op.forward(**{**env, **arrays})
    results = list(result) if len(op.outputs) > 1 else [result]
    want = op.result_dtype(dt) if (op.result_dtype and dt is not None) else dt
    for i, r in enumerate(results):
        r = r if isinstance(r, np.ndarray) else np.asarray(r)
        if want is not None and i == 0 and r.dtype != want.np:
            r = r.astype(want.np)
        results[i] = r
    return results, dt


def _wrap_outputs(op: OpDef, results: list, tensors: dict) -> list:
    source = tensors.get(op.inputs[0]) if op.view else None
    outs = []
    for r in results:
        if source is not None and isinstance(source, Tensor) and np.may_share_memory(r, source._data):
            t = Tensor(_array=r, _storage=source._storage,
                       _base=source._base if source._base is not None else source)
            t._is_inference = source._is_inference
            if len(results) > 1:
                t._view_meta = ("multi", op.node.replace("Backward0", ""))
            elif not is_grad_enabled():
                t._view_meta = ("no_grad", None)
            elif source._view_meta is not None:
                t._view_meta = source._view_meta
        else:
            t = Tensor(_array=r)
        outs.append(t)
    return outs


def _write_inplace(out: Tensor, result: np.ndarray) -> None:
    if result.shape != out._data.shape:
        raise RuntimeError(f"output with shape {list(out._data.shape)} doesn't match the "
                           f"broadcast shape {list(result.shape)}")
    src, dst = dtypes.from_numpy_dtype(result.dtype), out.dtype
    if src._category > dst._category:
        raise RuntimeError(f"result type {src.name} can't be cast to the desired output "
                           f"type {dst.name}")
    if not out._data.flags.writeable or (0 in out._data.strides and out._data.size > 1):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.")
    np.copyto(out._data, result, casting="unsafe")
    out._bump_version()


def _run(op: OpDef, env: dict, out: Tensor | None):
    if _VMAP_ACTIVE[0] and (top_level(env.values()) or isinstance(out, BatchedTensor)):
        from ..batching.runtime import run as run_batched
        return run_batched(op, env, out)
    raw = dict(env)
    tensors = _tensor_inputs(op, env)
    if op.refuse is not None:
        op.refuse(tensors)
    results, _ = _forward(op, env, tensors)
    record = op.differentiable and is_grad_enabled() and any(
        _requires_grad(tensors[n]) for n in op.diff_inputs if n in tensors)
    levels = forward_ad.levels_with_tangents(tensors, op)
    if out is not None and record and out._view_meta is not None:
        _refuse_view_inplace(out)
    if out is not None and (record or levels) and _needs_original_self(op):
        tensors["self"] = env["self"] = _original(out)
    if out is not None:
        if out.is_complex() and results[0].dtype.kind != "c" and op.result_dtype is dtypes.to_real:
            raise RuntimeError(f"In-place {op.name} is not supported for complex tensors.")
        _write_inplace(out, results[0])
        outs = [out]
    else:
        outs = _wrap_outputs(op, results, tensors)
        if op.promote is not None and _numbers_only(tensors):
            for t in outs:   # still a number: it promotes like one
                t._wrapped_number = dtypes.scalar_dtype(t._data.item())
    if op.view and out is None:
        _record_view_fn(op, env, tensors, outs)
    if record:
        old = out._grad_fn if out is not None else None
        node = OpNode.create(op, raw, env, tensors, outs, inplace=out is not None)
        if out is not None:
            from ..autograd.view_nodes import rebase_after_inplace
            rebase_after_inplace(out, node, old)
    if levels:
        forward_ad.push_tangents(op, env, tensors, outs, levels, inplace=out is not None)
    if out is not None:
        return out
    return tuple(outs) if len(op.outputs) > 1 else outs[0]


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
    for level in forward_ad.active_levels():
        tangent = forward_ad.get_tangent(t, level)
        if tangent is not None:
            # a copy: the in-place jvp will overwrite t's tangent object
            with forward_ad.excluding(level):
                orig._fw_grads[level] = call(OPS["clone"], tangent)
    return orig


_VIEW_ERRORS = {
    "multi": "Output {nr} of {name} is a view and is being modified inplace. This view is the "
             "output of a function that returns multiple views. Such functions do not allow the "
             "output views to be modified inplace. You should replace the inplace operation by "
             "an out-of-place one.",
    "custom": "Output {nr} of {name} is a view and is being modified inplace. This view was "
              "created inside a custom Function (or because an input was returned as-is) and the "
              "autograd logic to handle view+inplace would override the custom backward "
              "associated with the custom Function, leading to incorrect gradients. This "
              "behavior is forbidden. You can fix this by cloning the output of the custom "
              "Function.",
    "no_grad": "A view was created in no_grad mode and is being modified inplace with grad mode "
               "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
               "You can clarify your code by moving both the view and the inplace either both "
               "inside the no_grad block (if you don't want the inplace to be tracked) or both "
               "outside (if you want the inplace to be tracked).",
}


def _refuse_view_inplace(t: Tensor) -> None:
    kind, name = t._view_meta
    raise RuntimeError(_VIEW_ERRORS[kind].format(nr=t._output_nr, name=name))


def _requires_grad(t) -> bool:
    if isinstance(t, list):
        return any(x.requires_grad for x in t)
    return t.requires_grad


def _needs_original_self(op: OpDef) -> bool:
    rules = list(op.vjp.values()) if op.vjp else []
    if op.jvp is not None:
        rules.append(op.jvp)
    return any(r is not None and "self" in r.params for r in rules)


def _record_view_fn(op: OpDef, env: dict, tensors: dict, outs: list) -> None:
    source = tensors[op.inputs[0]]
    args = {k: v for k, v in env.items() if k != op.inputs[0]}
    fw_base = source._fw_base if source._fw_base is not None else source
    for i, t in enumerate(outs):
        if t._base is None:
            continue
        t._view_fn = _compose(op, args, i, source._view_fn)
        t._view_rebase_id = t._base._rebase_id
        t._fw_base, t._fw_view_fn = fw_base, _compose(op, args, i, source._fw_view_fn)


def _compose(op: OpDef, args: dict, i: int, prev):
    """base -> this view: ``prev`` (base -> source) followed by ``op``."""
    def view_fn(base):
        v = call(op, prev(base) if prev is not None else base, **args)
        return v[i] if isinstance(v, tuple) else v
    return view_fn

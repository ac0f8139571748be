"""Tangent storage and propagation for forward-mode AD.

Each tensor keeps one tangent per dual level (``_fw_grads``); a view without
its own reads its base's through its forward view function. The dispatcher
uses this module to push tangents through every op: it computes the tangent
of each level with that level switched off (``excluding``), so the tangent
computation itself carries the other levels' tangents, and a jvp of a jvp
is a second directional derivative. The public dual API (``make_dual``,
``unpack_dual``, ``dual_level``) is ``forward_ad``.
"""
from __future__ import annotations

import threading
import weakref

from .. import creation
from ..tensor import Tensor
from ..grad_mode import is_inference_mode_enabled
from .node import input_meta

_lock = threading.Lock()
_levels: list = []                  # active levels, innermost last
_members: dict = {}                 # level -> {id: tensor} (weak) with a tangent there
_tls = threading.local()


def _excluded() -> set:
    ex = getattr(_tls, "excluded", None)
    if ex is None:
        ex = _tls.excluded = set()
    return ex


def enter_dual_level() -> int:
    """Open a new (innermost) dual level and return its number."""
    with _lock:
        level = (_levels[-1] + 1) if _levels else 0
        _levels.append(level)
        _members[level] = weakref.WeakValueDictionary()
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close a level: every tangent of that level is dropped."""
    with _lock:
        if not _levels:
            raise RuntimeError("Trying to exit a forward AD level that was not entered")
        if level is None:
            level = _levels[-1]
        if level != _levels[-1]:
            raise RuntimeError(f"Trying to exit forward AD level {level} but the innermost "
                               f"level is {_levels[-1]}: exit levels in reverse order")
        _levels.pop()
        members = _members.pop(level)
    for t in list(members.values()):
        t._fw_grads.pop(level, None)


def active_levels() -> tuple:
    """The dual levels open now (outermost first)."""
    return tuple(_levels)


def forward_state() -> tuple:
    """The open levels and this thread's excluded ones, for ``restore_forward_state``."""
    return tuple(_levels), frozenset(_excluded())


def restore_forward_state(state: tuple) -> None:
    """Put the forward-AD state back as ``forward_state`` found it: close the
    levels opened since (dropping their tangents) and exclude exactly the levels
    excluded then. For an interruption that may have left a level half entered
    or half closed, or excluded (a timer firing in ``dual_level`` or in
    ``excluding``): every later jvp would be zero or refused."""
    levels, excluded = state
    with _lock:
        while len(_levels) > len(levels) or tuple(_levels) != levels[:len(_levels)]:
            _levels.pop()
        for level in [k for k in _members if k not in _levels]:
            for t in list(_members.pop(level).values()):
                t._fw_grads.pop(level, None)
        for level in _levels:
            _members.setdefault(level, weakref.WeakValueDictionary())
    ex = _excluded()
    ex.clear()
    ex.update(excluded)


def set_tangent(t, level: int, tangent) -> None:
    t._fw_grads[level] = tangent
    _members[level][id(t)] = t  # keyed by id: tensors compare elementwise


def get_tangent(t, level: int):
    """The tangent of ``t`` at ``level``; a view without its own reads its base's."""
    tangent = t._fw_grads.get(level)
    if tangent is None and t._fw_base is not None:
        base_tangent = t._fw_base._fw_grads.get(level)
        if base_tangent is not None:
            with excluding(level):
                tangent = t._fw_view_fn(base_tangent)
            # kept, as torch keeps a view's tangent once read: a view of the base's
            # tangent, it stays after the base's is gone (base.detach_())
            t._fw_grads[level] = tangent
    return tangent


class excluding:
    """Compute with one level switched off (the tangent of that level is being built)."""

    def __init__(self, level: int):
        self.level = level

    def __enter__(self):
        ex = _excluded()
        self.added = self.level not in ex
        ex.add(self.level)

    def __exit__(self, *exc):
        if self.added:
            _excluded().discard(self.level)


def levels_with_tangents(tensors: dict, op) -> tuple:
    """The active levels at which some differentiable input of ``op`` has a tangent."""
    if not _levels or is_inference_mode_enabled():   # inference mode tracks no tangents
        return ()
    ex = _excluded()
    found = []
    for level in _levels:
        if level in ex:
            continue
        for n in op.diff_inputs:
            t = tensors.get(n)
            items = t if isinstance(t, list) else ([t] if t is not None else [])
            if any(get_tangent(x, level) is not None for x in items):
                found.append(level)
                break
    if found and not op.differentiable:
        return ()
    if found and op.jvp is None:
        raise RuntimeError(f"Trying to use forward AD with {op.name} that does not support it: "
                           f"refengine has no jvp rule for {op.name}")
    return tuple(found)


def _tangent_or_zeros(t, level: int):
    tangent = get_tangent(t, level)
    if tangent is not None:
        return tangent
    # torch's formulas read a missing tangent as a ZeroTensor, whose product
    # with anything (inf, NaN) is zero: marked so that a formula can leave it out
    zeros = creation.zeros_like(t)
    zeros._absent_tangent = True
    return zeros


def absent(tangent) -> bool:
    """``tangent`` stands for an input that has no tangent: None, or the zeros
    of _tangent_or_zeros."""
    return tangent is None or getattr(tangent, "_absent_tangent", False)


def _tangent_env(op, env: dict, tensors: dict, outs: list, level: int) -> dict:
    tenv = dict(env)
    for n in op.diff_inputs:
        t = tensors.get(n)
        if t is None:
            tenv[f"{n}_t"] = None
        elif isinstance(t, list):
            tenv[f"{n}_t"] = [_tangent_or_zeros(x, level) for x in t]
        else:
            tenv[f"{n}_t"] = _tangent_or_zeros(t, level)
    for name, o in zip(op.outputs, outs):
        tenv[name] = o
    # an input's shape and dtype only where the jvp rule asks for them (a
    # Rule reads nothing but its params; most ask for neither)
    wanted = op.jvp.params
    for name in tensors:
        for suffix in ("_shape", "_dtype"):
            if name + suffix in wanted:
                tenv[name + suffix] = input_meta(name + suffix, tensors)[0]
    return tenv


def fit_tangent(tan, out):
    """Broadcast and cast a computed tangent to its output's shape and dtype."""
    if tuple(tan.shape) != tuple(out.shape):
        tan = tan.expand(tuple(out.shape)).clone()
    if tan.is_complex() and not out.is_complex():
        tan = tan.real
    if tan.dtype is not out.dtype:
        tan = tan.to(out.dtype)
    if type(tan) is type(out) is Tensor and out._data.flags.c_contiguous \
            and not tan._data.flags.c_contiguous:     # (a vmap's batched tensors: as they come)
        # torch gives a tangent its primal's layout, so a view of one is a view of both
        tan = tan.contiguous()
    return tan


def push_tangents(op, env: dict, tensors: dict, outs: list, levels: tuple, inplace: bool) -> None:
    """Compute and attach the output tangents of ``op`` at each level."""
    for level in levels:
        tenv = _tangent_env(op, env, tensors, outs, level)
        with excluding(level):
            tans = op.jvp(tenv)
            if not isinstance(tans, (tuple, list)):
                # one tangent: for the op's (only) differentiable output
                tans = tuple(tans if name in op.diff_outputs else None for name in op.outputs)
            for name, o, tan in zip(op.outputs, outs, tans):
                if tan is None or name not in op.diff_outputs or (
                        inplace and op.name == "copy" and env.get("src") is o):
                    continue        # (copy_ of a tensor onto itself keeps its tangent)
                if absent(tan):
                    tan = tan.clone()
                tan = fit_tangent(tan, o)
                if inplace:
                    _write_tangent(o, level, tan, op.name in ("fill", "zero"))
                else:
                    set_tangent(o, level, tan)


def _write_tangent(t, level: int, tan, one_value: bool = False) -> None:
    """In-place op on ``t``: update its tangent in place (the lens putback).
    ``one_value``: fill_ or zero_, whose tangent is one value, written as a
    fill (so into an expanded tangent too, as torch's ``self_t.fill_``)."""
    own = t._fw_grads.get(level)
    if own is not None:
        if one_value and tan.numel():
            own.fill_(tan.reshape(-1)[0])
        else:
            own.copy_(tan)
        return
    base = t._fw_base
    if base is not None:
        base_tangent = base._fw_grads.get(level)
        if base_tangent is None:
            base_tangent = creation.zeros_like(base)
            set_tangent(base, level, base_tangent)
        t._fw_view_fn(base_tangent).copy_(tan)
        return
    set_tangent(t, level, tan)

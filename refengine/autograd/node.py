"""Graph nodes: ``Node`` (a ``grad_fn``), ``OpNode`` for refengine ops, ``AccumulateGrad``."""
from __future__ import annotations

import itertools
import weakref
from _thread import RLock as _RLock   # threading.RLock's own class, without its frame
from types import MappingProxyType

from ..dtypes import _BY_NP
from ..grad_mode import is_recording, no_grad
from ..tensor import Tensor, wrap_array
from .hooks import RemovableHandle
from .saved import SAVED, SavedTensor, save_argument

_sequence = itertools.count()
_NONE = MappingProxyType({})    # read-only: a node's hooks until it gets its own


class Node:
    """A backward function in the graph (what ``tensor.grad_fn`` returns).

    ``next_functions`` are the (node, input_nr) edges towards the inputs;
    hooks run in the order the seed documents (tensor hooks, pre-hooks,
    retained grads, the node, post-hooks).
    """

    # Every recorded op makes a node and most never get a hook, a retained
    # grad or metadata, and many never run: those are made on first use.
    _pre_hooks = _NONE
    _post_hooks = _NONE
    _tensor_hooks = _NONE           # output_nr -> {id: hook}
    _retained = _NONE               # output_nr -> weakref to the tensor whose .grad we fill
    _num_outputs = 1

    def __init__(self, next_functions=()):
        self._next = tuple(next_functions)
        self._sequence_nr = next(_sequence)

    def _own(self, name: str) -> dict:
        # setdefault is atomic: two threads registering at once share one dict
        found = self.__dict__.get(name)
        return found if found is not None else self.__dict__.setdefault(name, {})

    @property
    def _lock(self):
        found = self.__dict__.get("_lock_")
        return found if found is not None else self.__dict__.setdefault("_lock_", _RLock())

    @property
    def metadata(self) -> dict:
        return self._own("_metadata")

    @metadata.setter
    def metadata(self, value: dict) -> None:
        self.__dict__["_metadata"] = value

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        return self._next

    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after the node runs; may return new grad_inputs."""
        return RemovableHandle.add(self._own("_post_hooks"), fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs)`` before the node runs; may return new grad_outputs."""
        return RemovableHandle.add(self._own("_pre_hooks"), fn)

    def _register_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        return RemovableHandle.add(self._own("_tensor_hooks").setdefault(output_nr, {}), fn)

    def _set_retains_grad(self, tensor) -> None:
        # weakly, as PyTorch: the tensor holds this node, which must not hold it back
        self._own("_retained")[tensor._output_nr] = weakref.ref(tensor)

    def _drop_retains_grad(self, tensor) -> None:
        ref = self._retained.get(tensor._output_nr)
        if ref is not None and ref() is tensor:
            del self._own("_retained")[tensor._output_nr]

    def apply(self, grads: list) -> list:
        raise NotImplementedError

    def _release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""

    def __call__(self, *grads):
        return tuple(self.apply(list(grads)))

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    def __dir__(self):
        names = list(super().__dir__())
        for key, value in self.__dict__.get("_saved", {}).items():
            names.append(f"_saved_{key}")
            if isinstance(value, SavedTensor):
                names.append(f"_raw_saved_{key}")
        return sorted(set(names))

    def __getattr__(self, attr: str):
        saved = self.__dict__.get("_saved")
        if saved is not None:
            if attr.startswith("_raw_saved_") and attr[11:] in saved:
                value = saved[attr[11:]]
                if isinstance(value, SavedTensor):
                    return value
            elif attr.startswith("_saved_") and attr[7:] in saved:
                value = saved[attr[7:]]
                if isinstance(value, SAVED):
                    return value.unpack()
                return value.item() if getattr(value, "_wrapped_number", None) else value
        raise AttributeError(f"'{self.name()}' object has no attribute '{attr}'")


class OpNode(Node):
    """The node of a refengine op: applies the op's vjp rules."""

    def __init__(self, op, name: str, edges, inputs, saved, outputs_meta):
        # Node.__init__ written out: a node per recorded op, a frame less each
        self._next = tuple(edges)
        self._sequence_nr = next(_sequence)
        self.op = op
        self._name = name
        self._inputs = inputs            # [(name, needs_grad, [(shape, dtype), ...] or (shape, dtype))]
        self._saved = saved
        self._outputs_meta = outputs_meta

    def name(self) -> str:
        return self._name

    @classmethod
    def create(cls, op, raw: dict, env: dict, tensors: dict, outs: list,
               inplace: bool = False) -> "OpNode":
        edges, inputs, needs = [], [], {}
        for n in op._diff_inputs:
            t = tensors.get(n)
            if t is None or (n in op.scalar_inputs and not isinstance(t, list)
                             and t._wrapped_number is not None):
                continue
            if isinstance(t, list):
                edges.extend(x._grad_edge() for x in t)
                inputs.append((n, [(x._data.shape, x.dtype) for x in t]))
                needs[n] = any(x.requires_grad for x in t)
            else:
                edge = t._grad_edge()
                edges.append(edge)
                a = t._data     # (the dtype without the property's frame, as Tensor.dtype maps it)
                inputs.append((n, (a.shape, _BY_NP.get(a.dtype) or t.dtype)))
                needs[n] = edge[0] is not None   # t.requires_grad, already worked out
        name = op.variant(raw) if op.variant else op.node
        meta = []    # (a loop: a comprehension is a frame of its own)
        for o in outs:
            a = o._data
            meta.append((a.shape, _BY_NP.get(a.dtype) or o.dtype))
        node = cls(op, name, edges, inputs, {}, meta)
        node._needs = needs
        node._num_outputs = len(outs)
        for i, o in enumerate(outs):
            if op.outputs[i] in op.diff_outputs:
                o._grad_fn, o._output_nr, o._requires_grad = node, i, False
        saved = node._saved
        for s in op.saved_names(needs):
            saved[s] = _saved_value(s, op, env, tensors, outs, node, inplace)
        return node

    def _unpack(self) -> dict:
        found = {}
        with self._lock:
            for k, v in self._saved.items():    # (a loop: a comprehension is a frame)
                found[k] = v.unpack() if isinstance(v, SAVED) else v
        return found

    def _grad_env(self, grads: list) -> dict | None:
        op = self.op
        if len(op.outputs) == 1:
            return None if grads[0] is None else {"grad": grads[0]}
        picked = []
        for i, name in enumerate(op.outputs):
            if name in op.diff_outputs:
                g = grads[i] if i < len(grads) else None
                if g is None:
                    from .. import creation   # (only here: see autograd.api._make_grads)
                    shape, dt = self._outputs_meta[i]
                    g = creation.zeros(shape, dtype=dt)
                picked.append(g)
        if all(grads[i] is None for i in range(len(grads))):
            return None
        return {"grad": picked[0]} if len(picked) == 1 else {"grads": tuple(picked)}

    def apply(self, grads: list, needed: list | None = None) -> list:
        """The gradients of the inputs; ``needed`` (one flag per edge) skips
        those that the running backward does not ask for."""
        env = self._grad_env(grads)
        if env is None:
            return [None] * len(self._next)
        env.update(self._unpack())
        result = []
        for name, meta in self._inputs:
            rule = self.op.vjp.get(name)
            count = len(meta) if isinstance(meta, list) else 1
            first = len(result)
            if (not self._needs[name] or rule is None
                    or (needed is not None and not any(needed[first:first + count]))):
                result.extend([None] * count)
                continue
            g = rule(env)
            if isinstance(meta, list):
                result.extend(reduce_grad(gi, *m) for gi, m in zip(g, meta))
            else:
                result.append(reduce_grad(g, *meta))
        return result

    def _release(self) -> None:
        for v in self._saved.values():
            if isinstance(v, SAVED):
                v.release()


def _saved_value(s: str, op, env: dict, tensors: dict, outs: list, node, inplace: bool):
    """What the node keeps for the name ``s`` a rule asks for."""
    if s.endswith(_META_SUFFIXES):
        meta = input_meta(s, tensors)
        if meta is not None:
            return meta[0]
    if s in op.outputs:
        i = op.outputs.index(s)
        return SavedTensor(outs[i], node, is_output=op.outputs[i] in op.diff_outputs)
    t = tensors.get(s)
    if t is not None and not isinstance(t, list):
        if t._wrapped_number and s in op.scalar_inputs:
            return t                     # a Scalar argument: a number, not a saved tensor
        before = outs[0]._version - 1 if inplace and t._storage is outs[0]._storage else None
        return SavedTensor(t, node, is_output=False, version=before)
    return save_argument(env[s], node)


_META_SUFFIXES = ("_shape", "_dtype")


def input_meta(name: str, tensors: dict):
    """``self_shape`` / ``self_dtype``: what a rule may know of an input without saving it."""
    if name.endswith("_shape"):
        shape = True
    elif name.endswith("_dtype"):
        shape = False
    else:
        return None
    t = tensors.get(name[:-6])
    if isinstance(t, list):
        return ([tuple(x.shape) if shape else x.dtype for x in t],)
    if t is not None:
        return (tuple(t.shape) if shape else t.dtype,)
    return None


def reduce_grad(g, shape: tuple, dtype):
    """Fit a gradient to its input: sum broadcast dims, project complex to real, cast."""
    if g is None:
        return None
    # a plain tensor's shape without building a Size (a batched one has no _data)
    if (g._data.shape if type(g) is Tensor else g.shape) != shape:
        g = sum_to(g, shape)
    gtype = g.dtype
    if gtype is not dtype:
        if gtype.is_complex and not dtype.is_complex:
            g = g.real
        if g.dtype is not dtype:
            g = g.to(dtype)
    return g


def sum_to(g, shape: tuple):
    """Sum ``g`` over the dimensions that broadcasting added to ``shape``."""
    lead = g.ndim - len(shape)
    if lead < 0:
        raise RuntimeError(f"gradient of shape {list(g.shape)} cannot be reduced to {list(shape)}")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape)
                                if s == 1 and g.shape[lead + i] != 1]
    if lead and len(dims) == lead and not is_recording():
        # only leading dims: the same sum without keepdim has the shape already
        # (the same values; a reshape is the costliest step under vmap). A graph
        # being recorded keeps torch's sum-then-view, whose nodes it names
        g = g.sum(dim=dims)
    else:
        if dims:
            g = g.sum(dim=dims, keepdim=True)
        if lead:
            g = g.reshape(shape)
    if tuple(g.shape) != tuple(shape):
        raise RuntimeError(f"gradient of shape {list(g.shape)} does not match input shape {list(shape)}")
    return g


class AccumulateGrad(Node):
    """The node of a leaf: accumulates incoming gradients into ``variable.grad``."""

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    def accumulate(self, grad, create_graph: bool, owned: bool = False) -> None:
        """Add ``grad`` into ``variable.grad`` and run the post-accumulate hooks.

        The first gradient is adopted, as PyTorch adopts it, when nothing else
        holds it (``owned``), grad mode is off and its layout is the
        variable's: ``.grad`` then shares its memory. Otherwise it is copied
        (with ``create_graph``, by a differentiable copy).
        """
        var = self.variable
        if grad is None:
            # PyTorch runs the post-accumulate hooks even when no gradient came
            _post_accumulate(var)
            return
        if not var.requires_grad:
            return   # as in PyTorch: a leaf set to requires_grad=False since gets nothing
        if var._grad_fn is not None:
            # detach_() and an in-place op since gave the leaf a history
            raise RuntimeError("leaf variable has been moved into the graph interior")
        with self._lock:
            if var._grad is None:
                if create_graph:
                    from ..creation import empty_like
                    var._grad = empty_like(grad).copy_(grad)
                elif owned and _same_layout(grad, var):
                    var._grad = grad.detach()
                else:
                    var._grad = _detached_copy(grad)
            elif create_graph:
                var._grad = var._grad + grad
            else:
                with no_grad():
                    var._grad.add_(grad.detach())
        _post_accumulate(var)


def _same_layout(grad, var) -> bool:
    """Whether ``grad`` may become ``var.grad`` as it is: a plain, writable array
    with the variable's strides (no broadcast view), as PyTorch's layout rule."""
    if type(grad) is not Tensor or grad.dtype is not var.dtype:
        return False
    a, v = grad._data, var._data
    if not a.flags.writeable or a.shape != v.shape:
        return False
    return all(n <= 1 or sa == sv for n, sa, sv in zip(a.shape, a.strides, v.strides))


def _post_accumulate(var) -> None:
    for hook in list(var._post_acc_hooks.values()):
        result = hook(var)
        if result is not None:
            if isinstance(result, Tensor):
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
            raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")


def _detached_copy(grad):
    """``grad.detach().clone()``; for a plain tensor without the op call."""
    if type(grad) is Tensor:
        return wrap_array(grad._data.copy())   # what clone computes, with no graph to record
    return grad.detach().clone()

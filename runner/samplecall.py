"""A ``SampleInput`` as what gradcheck takes: a function of the tensors that
require grad, those tensors, and the matching mpmath reference.

``SampleCall(info, sample, engine)`` closes over everything else in the
sample (non-differentiable tensors, ints, kwargs), so gradcheck perturbs
exactly the differentiable inputs. With ``engine="torch"`` the tensors are
copied into torch tensors and the op is ``info.torch_op()``: torch's own
formulas are then what is checked.

It is the ``opinfo`` registry's call builder (``OpinfoRegistry.call``).
Another registry supplies its own through its ``call`` method; the runner
reads only this interface of the object it returns:

- ``func(*inputs)`` and ``inputs``: what ``gradcheck.check`` receives;
- ``reference``: the mpmath reference as a function of mpmath arrays, or ``None``;
- ``has_plain_output()``: whether the output is differentiated as the op returns it;
- ``nan_outputs()``: a description of an unexpected NaN in the op's output, or ``None``.
"""
from __future__ import annotations

import numpy as np

from adcheck.refengine.pytree import tree_leaves, tree_map


def replace_tensors(value, is_tensor, fn):
    """``value`` (nested lists, tuples, dicts) with ``fn`` applied to each tensor."""
    return tree_map(lambda leaf: fn(leaf) if is_tensor(leaf) else leaf, value)


def _to_torch(value):
    """refengine tensors and dtypes in ``value`` become torch ones (imports torch)."""
    import torch

    from adcheck import refengine
    def convert(leaf):
        if isinstance(leaf, refengine.Tensor):
            array = leaf.detach().numpy().copy()
            return torch.from_numpy(array).requires_grad_(bool(leaf.requires_grad))
        if isinstance(leaf, refengine.dtypes.dtype):
            return getattr(torch, str(leaf).rsplit(".", 1)[-1])
        return leaf
    return tree_map(convert, value)


def _cast_floats(structure, name: str):
    """``structure`` with its real floating point torch tensors rounded to the
    torch dtype ``name``, each a new leaf that requires grad as before."""
    import torch
    dtype = getattr(torch, name)

    def cast(tensor):
        if not tensor.is_floating_point():
            return tensor
        return tensor.detach().to(dtype).requires_grad_(tensor.requires_grad)
    return replace_tensors(structure, lambda v: isinstance(v, torch.Tensor), cast)


def _tensor_type(engine: str):
    if engine == "torch":
        import torch
        return torch.Tensor
    from adcheck import refengine
    return refengine.Tensor


class SampleCall:
    """``func(*inputs)`` runs the op on the sample with ``inputs`` in place of
    its differentiable tensors; ``reference(*mp_arrays)`` does the same for
    the op's mpmath reference (``None`` when there is none)."""

    def __init__(self, info, sample, engine: str = "refengine", cast: str | None = None):
        """``cast``: a torch dtype name (``"bfloat16"``) the sample's floating
        point tensors are rounded to (``engine="torch"`` only)."""
        self.info, self.sample, self.engine = info, sample, engine
        structure = (sample.input, sample.args, sample.kwargs)
        self.op = info.op
        if engine == "torch":
            structure = _to_torch(structure)
            self.op = info.torch_op()
            if cast is not None:
                structure = _cast_floats(structure, cast)
        self.structure = structure
        self.tensor_type = _tensor_type(engine)
        self.inputs = tuple(t for t in tree_leaves(structure) if self._is_diff(t))
        self.process = sample.output_process_fn_grad
        self._slots = _slots(structure, self._is_diff)
        #: where the other tensors of a flat sample sit (``_placed``'s ``others``)
        self._constants = None if self._slots is None else _slots(
            structure, lambda v: self._is_tensor(v) and not self._is_diff(v))

    def _is_tensor(self, value) -> bool:
        return isinstance(value, self.tensor_type)

    def _is_diff(self, value) -> bool:
        return isinstance(value, self.tensor_type) and bool(value.requires_grad)

    def _rebuild(self, values, others=None):
        it = iter(values)
        return replace_tensors(
            self.structure, self._is_tensor,
            lambda t: next(it) if t.requires_grad else (t if others is None else others(t)))

    def func(self, *inputs):
        if self._slots is None:
            inp, args, kwargs = self._rebuild(inputs)
        else:
            inp, args, kwargs = self._placed(inputs)
        try:
            return self.process(self.op(inp, *args, **kwargs))
        except TypeError as exc:
            foreign = _foreign(exc, self.engine)
            if foreign is None:
                raise
            raise foreign from exc

    def _placed(self, inputs, others=None):
        """``_rebuild(inputs, others)`` of a flat sample (see ``_slots``): each input
        put in its slot, without a walk over the structure (gradcheck calls ``func``
        some hundred times a check; the walk was 4 % of a registry sweep, and as
        much again in the calls of the mpmath reference, which passes ``others``)."""
        inp, args, kwargs = self.structure
        first, in_args, in_kwargs = self._slots
        if first is not None:
            inp = inputs[first]
        if in_args:
            args = list(args)
            for position, k in in_args:
                args[position] = inputs[k]
        if in_kwargs:
            kwargs = dict(kwargs)
            for name, k in in_kwargs:
                kwargs[name] = inputs[k]
        if others is not None:
            tensor, at_args, at_kwargs = self._constants
            if tensor is not None:
                inp = others(inp)
            if at_args:
                args = list(args)
                for position, _ in at_args:
                    args[position] = others(args[position])
            if at_kwargs:
                kwargs = dict(kwargs)
                for name, _ in at_kwargs:
                    kwargs[name] = others(kwargs[name])
        return inp, args, kwargs

    @property
    def reference(self):
        """The mpmath reference with this sample's other arguments, or ``None``."""
        ref = self.info.mpmath_ref
        if ref is None or not self.has_plain_output():
            return None

        # the other tensors as mpmath arrays, converted once (an entry at a time, they
        # cost as much as the op's reference itself), a copy handed to each call
        converted: dict = {}

        def constant(tensor):
            if id(tensor) not in converted:
                converted[id(tensor)] = (tensor, _constant_to_mp(tensor))
            value = converted[id(tensor)][1]
            return value.copy() if isinstance(value, np.ndarray) else value

        def reference(*mp_inputs):
            inp, args, kwargs = self._rebuild(mp_inputs, constant) if self._slots is None \
                else self._placed(mp_inputs, constant)
            return ref(inp, *args, **kwargs)
        return reference

    def has_plain_output(self) -> bool:
        """Whether the output is differentiated as it is (no post-processing)."""
        from adcheck.opinfo import identity
        return self.process is identity

    def nan_outputs(self) -> str | None:
        """Where the op returns NaN for this sample and its NumPy reference does
        not (or has none): a description, else ``None``."""
        out = self.func(*self.inputs)
        arrays = [_numpy(t) for t in _flat(out) if self._is_tensor(t)]
        bad = [(i, np.isnan(a)) for i, a in enumerate(arrays)
               if np.issubdtype(a.dtype, np.inexact) and np.isnan(a).any()]
        if not bad:
            return None
        expected = self._reference_nans()
        for out_idx, mask in bad:
            if expected is None or out_idx >= len(expected) or \
                    expected[out_idx].shape != mask.shape or (mask & ~expected[out_idx]).any():
                where = tuple(int(k) for k in np.argwhere(mask)[0])
                return (f"output {out_idx} is NaN at {list(where)} where the NumPy "
                        "reference is not" if expected is not None else
                        f"output {out_idx} is NaN at {list(where)} (and the op has no NumPy "
                        "reference saying it should be)")
        return None

    def _reference_nans(self):
        if self.info.ref is None or not self.has_plain_output():
            return None
        inp, args, kwargs = self.sample.numpy()
        with np.errstate(all="ignore"):
            result = self.info.ref(inp, *args, **kwargs)
        return [np.isnan(np.asarray(a)) for a in _flat(result)]


def _foreign(exc: TypeError, engine: str) -> TypeError | None:
    """Where the op raised ``exc`` as another engine's code (a plugin's OpInfo
    whose op is torch's: torch.sin given a refengine tensor), a TypeError that
    says so and how such code is checked; else ``None``."""
    from adcheck.gradcheck.engines import foreign_engine
    other = foreign_engine(exc, engine)
    if other is None:
        return None
    own = ("; torch's own op (torch.sin): name it in torch_name= and run adcheck ops "
           "--engine torch" if other == "torch" else "")
    return TypeError(f"{exc}; the op looks like {other} code, and an OpInfo's op is run on "
                     f"{engine} tensors: check a function of {other}'s with adcheck check "
                     f"FILE:FUNCTION --engine {other}{own}")


def _slots(structure, is_diff):
    """Where each differentiable tensor of a flat sample (its input a leaf, its
    args a tuple of leaves, its kwargs a dict of leaves) sits: ``(k or None,
    [(position, k)], [(name, k)])``, ``k`` its index among the inputs (their
    order in ``tree_leaves``); ``None`` for a sample nesting containers deeper."""
    inp, args, kwargs = structure
    if type(args) is not tuple or type(kwargs) is not dict:
        return None
    leaves = [inp, *args, *kwargs.values()]
    if not all(_is_leaf(v) for v in leaves):
        return None
    count = iter(range(len(leaves)))
    first = next(count) if is_diff(inp) else None
    in_args = [(p, next(count)) for p, a in enumerate(args) if is_diff(a)]
    in_kwargs = [(name, next(count)) for name, v in kwargs.items() if is_diff(v)]
    return first, in_args, in_kwargs


def _is_leaf(value) -> bool:
    leaves = tree_leaves(value)
    return len(leaves) == 1 and leaves[0] is value


def _flat(value) -> list:
    """The leaves of an op's (or its reference's) result; a dict stays one leaf, as
    an output is a tensor or a sequence of them."""
    return tree_leaves(value, is_leaf=lambda v: isinstance(v, dict))


def _numpy(tensor) -> np.ndarray:
    if not hasattr(tensor, "detach"):
        return np.asarray(tensor)
    tensor = tensor.detach()
    if str(tensor.dtype) == "torch.bfloat16":  # NumPy has no bfloat16; float32 holds it
        tensor = tensor.float()
    elif str(tensor.dtype) == "torch.complex32":  # nor complex32; complex64 holds it
        tensor = tensor.cfloat()
    if hasattr(tensor, "resolve_conj"):   # torch's lazy conj() and neg() views refuse numpy()
        tensor = tensor.resolve_conj().resolve_neg()
    return tensor.numpy()


def _constant_to_mp(tensor):
    """A non-differentiable tensor as the mpmath reference receives it."""
    from adcheck.gradcheck.numerics.reference import to_mp
    array = _numpy(tensor).copy()
    return to_mp(array) if np.issubdtype(array.dtype, np.inexact) else array

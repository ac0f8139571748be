"""The ops that return several views of their input (split, chunk, unbind)."""
from __future__ import annotations

from ..autograd.view_nodes import multi_view
from .dispatch import call
from .opdef import OPS, public
from .shape import _norm_dim, narrow


def _at_least_1d(t, name: str) -> None:
    # torch refuses a 0-d tensor before it reads the dim
    if t.ndim == 0:
        raise RuntimeError(f"{name} expects at least a 1-dimensional tensor")


# split, chunk and unbind return several views: each is computed as a narrow /
# select view, then all become the outputs of one node (SplitBackward0 ...).
@public()
def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along ``dim`` (of one size, or of the given sizes)."""
    _at_least_1d(tensor, "split")
    d = _norm_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [min(step, n - s) for s in range(0, n, step)] if step > 0 else [n]
        sizes = sizes or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
    pieces, start = [], 0
    for size in sizes:
        pieces.append(narrow(tensor, d, start, size))
        start += size
    saved = {"dim": d, "self_sym_sizes": tuple(tensor.shape)}
    if isinstance(split_size_or_sections, int):
        name, saved["split_size"] = "SplitBackward0", split_size_or_sections
    else:
        name, saved["split_sizes"] = "SplitWithSizesBackward0", tuple(sizes)
    return multi_view(tuple(pieces), tensor, name, lambda g: call(OPS["cat"], g, d), saved)


@public()
def chunk(input, chunks, dim=0):
    """At most ``chunks`` views of (nearly) equal size along ``dim``."""
    _at_least_1d(input, "chunk")
    n = input.shape[_norm_dim(dim, input.ndim)]
    return split(input, max(-(-n // chunks), 1), dim)


@public()
def unbind(input, dim=0):
    """The views ``input.select(dim, i)`` for every ``i``."""
    d = _norm_dim(dim, input.ndim)
    if input.ndim == 0:     # after the dim's range, as torch (-1 and 0 name the tensor)
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return multi_view(tuple(input.select(d, i) for i in range(input.shape[d])), input,
                      "UnbindBackward0", lambda g: call(OPS["stack"], g, d), {"dim": d})

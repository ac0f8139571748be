"""Default inputs for a layer: the shapes its first layer takes.

A module's forward rarely takes ``randn(3, 4)``: a ``Linear(10, 5)`` wants
ten features, a ``Conv2d`` images of its channels, an ``Embedding`` indices
below its size, a ``BatchNorm1d(5)`` five features. The first submodule (in
registration order, the module itself first: the order ``modules()`` walks,
and the order most models apply them) whose kind tells the shape it takes
sets the default inputs of the whole module. Failing that, a layer of the
user's own with a 2-d ``weight`` is tried with rows as long as either side
of it. These are guesses: the call before the run (``probe``) decides which
one the module takes, and a module that takes none is told to give
``--inputs``.

Kinds are known by class name, so torch's and refengine's layers (which
share torch's names) are read alike without importing either engine.
"""
from __future__ import annotations

import re

#: rows of a batch (several, so that a bug mixing rows can show; BatchNorm
#: in training mode needs more than one)
ROWS = 3
#: a sequence's length for recurrent layers and attention
STEPS = 5
#: image sides tried for a convolution after the smallest it takes (MNIST,
#: CIFAR): a model flattening its feature maps into a Linear takes one size only
IMAGE_SIDES = (28, 32)
#: input sets guessed at most (each costs one call of the model before the run)
GUESSES = 6


def layer_inputs(module, count: int) -> list[list[str]]:
    """Input sets (``count`` specs each, the ``--inputs`` language) to try, in
    order, for ``module``: its first layer's, then the next kinds' (a model
    may assign its head before the layer its forward applies first), at most
    ``GUESSES``; empty when no layer of it tells a shape."""
    found: list = []
    for layer in _walk(module):
        for shapes in _by_kind(layer):
            fitted = _fitted(shapes, count)
            if fitted not in found:
                found.append(fitted)
        if len(found) >= GUESSES:
            return found[:GUESSES]
    if found:
        return found
    weight = _first_matrix(module)
    if weight is None:
        return []
    sides = list(dict.fromkeys((weight[1], weight[0])))
    return [_fitted([f"randn({ROWS}, {side})"], count) for side in sides]


def _walk(module):
    try:
        return list(module.modules())
    except Exception:  # noqa: BLE001 - a user's module may override modules()
        return [module]


def _fitted(shapes: list, count: int) -> list:
    """``shapes`` cut or padded (with the first) to ``count`` inputs."""
    return shapes[:count] if len(shapes) >= count else shapes + [shapes[0]] * (count - len(shapes))


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _ints(value) -> tuple | None:
    values = (value,) if isinstance(value, int) else tuple(value) if isinstance(
        value, (tuple, list)) else None
    return values if values and all(_int(v) for v in values) else None


def _randn(*shape) -> str:
    return f"randn({', '.join(str(s) for s in shape)})"


def _by_kind(layer) -> list[list[str]]:
    name = type(layer).__name__
    for pattern, rule in _RULES:
        if re.fullmatch(pattern, name):
            try:
                return rule(layer)
            except (AttributeError, TypeError, ValueError):
                return []
    # (a Linear, or a layer of the user's with its in_features; LazyLinear's is 0 until called)
    features = _int(getattr(layer, "in_features", None))
    return [[_randn(ROWS, features)]] if features else []


def _bilinear(layer):
    return [[_randn(ROWS, layer.in1_features), _randn(ROWS, layer.in2_features)]]


def _conv(layer):
    channels, kernel = _int(layer.in_channels), _ints(layer.kernel_size)
    if not channels or not kernel:
        return []
    dilation = _ints(layer.dilation) or (1,) * len(kernel)
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    smallest = [[_randn(2, channels, *[s + 2 for s in spans])]]
    if len(kernel) != 2:
        return smallest
    return smallest + [[_randn(2, channels, side, side)] for side in IMAGE_SIDES
                       if side >= max(spans) + 2]


def _spatial(dims: int):
    def rule(layer):
        channels = _int(getattr(layer, "num_features", None) or layer.num_channels)
        extra = {1: (4,), 2: (3, 3), 3: (2, 2, 2)}[dims]
        return [[_randn(2, channels, *extra)]] if channels else []
    return rule


def _batchnorm1d(layer):
    channels = _int(layer.num_features)
    return [[_randn(ROWS, channels)], [_randn(ROWS, channels, 4)]] if channels else []


def _normalized(layer):
    shape = _ints(layer.normalized_shape)
    return [[_randn(ROWS, *shape)]] if shape else []


def _embedding(layer):
    size = _int(layer.num_embeddings)
    if not size:
        return []
    # torch gives the padding row no gradient, by design: indices avoid it where a
    # range can (the first row, or the last)
    pad = getattr(layer, "padding_idx", None)
    if size > 1 and pad == 0:
        return [[f"randint({size - 1}, {ROWS}, 4) + 1 int64"]]
    if size > 1 and pad == size - 1:
        return [[f"randint({size - 1}, {ROWS}, 4) int64"]]
    return [[f"randint({size}, {ROWS}, 4) int64"]]


def _recurrent(layer):
    size = _int(layer.input_size)
    if not size:
        return []
    batched = (ROWS, STEPS, size) if getattr(layer, "batch_first", False) else (STEPS, ROWS, size)
    return [[_randn(*batched)], [_randn(STEPS, size)]]


def _cell(layer):
    return [[_randn(ROWS, layer.input_size)]]


def _attention(layer):
    embed = _int(layer.embed_dim)
    if not embed:
        return []
    key, value = _int(layer.kdim) or embed, _int(layer.vdim) or embed
    lead = (ROWS, STEPS) if getattr(layer, "batch_first", False) else (STEPS, ROWS)
    return [[_randn(*lead, embed), _randn(*lead, key), _randn(*lead, value)]]


#: (class name pattern, rule): a rule gives the input sets a layer of that kind takes
_RULES = (
    (r"Bilinear", _bilinear),
    (r"(Lazy)?Conv(Transpose)?[123]d", _conv),
    (r"BatchNorm1d|SyncBatchNorm", _batchnorm1d),
    (r"(BatchNorm|InstanceNorm)2d", _spatial(2)),
    (r"(BatchNorm|InstanceNorm)3d", _spatial(3)),
    (r"InstanceNorm1d|GroupNorm", _spatial(1)),
    (r"LayerNorm|RMSNorm", _normalized),
    (r"Embedding(Bag)?", _embedding),
    (r"RNN|LSTM|GRU", _recurrent),
    (r"(RNN|LSTM|GRU)Cell", _cell),
    (r"MultiheadAttention", _attention),
)


def _first_matrix(module) -> tuple | None:
    """The shape of the module's first 2-d parameter named ``weight``, if any."""
    try:
        for name, param in module.named_parameters():
            if name.rsplit(".", 1)[-1] == "weight" and len(tuple(param.shape)) == 2:
                return tuple(param.shape)
    except Exception:  # noqa: BLE001 - a user's module may override named_parameters()
        return None
    return None


def parameters_dtype(module) -> str | None:
    """The dtype name of ``module``'s first floating parameter ("float32"), if any."""
    try:
        for param in module.parameters():
            name = str(param.dtype).rsplit(".", 1)[-1]
            if name.startswith(("float", "bfloat", "complex")):
                return name
    except Exception:  # noqa: BLE001 - a user's module may override parameters()
        return None
    return None


def in_dtype(spec: str, dtype: str | None) -> str:
    """A floating spec of ``layer_inputs`` in ``dtype`` (indices stay as they are)."""
    return f"{spec} {dtype}" if dtype and dtype != "float64" and spec.startswith("randn") \
        else spec


def real_parameters(module) -> bool:
    """Whether ``module`` has floating parameters and none complex: complex
    inputs are no input for it (its own failure to take them is no warning)."""
    try:
        params = list(module.parameters())
        return bool(params) and not any(p.is_complex() for p in params)
    except Exception:  # noqa: BLE001 - a user's module may override parameters()
        return False

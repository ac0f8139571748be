"""A custom autograd.Function under vmap: its own vmap staticmethod, and the
rule generated from its forward (torch 2.13's behaviour: the seeds are
silent on vmap)."""
from __future__ import annotations

import numpy as np

from adcheck.conformance.case import TORCH_BEHAVIOUR, case


def _vmap(E):
    return E.func.vmap if E.__name__ == "torch" else E.vmap


def _weighted(E, seen: list, out_dim_of_rule: int = 0):
    """sum(x * w, -1) for rows x (n, d) and weights w (d), with a rule that
    records what it is told and puts the batch at ``out_dim_of_rule``."""
    class Weighted(E.autograd.Function):
        @staticmethod
        def forward(x, w):
            return (x * w).sum(-1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g.unsqueeze(-1) * w, (g.unsqueeze(-1) * x).sum(-2)

        @staticmethod
        def vmap(info, in_dims, x, w):
            seen.append((info.batch_size, info.randomness, in_dims))
            x_dim, w_dim = in_dims
            x = x.movedim(x_dim, 0) if x_dim is not None else x.expand(info.batch_size, *x.shape)
            w = w.movedim(w_dim, 0).unsqueeze(1) if w_dim is not None else w
            out = (x * w).sum(-1)          # (batch, n)
            return (out if out_dim_of_rule == 0 else out.movedim(0, 1)), out_dim_of_rule
    return Weighted


@case("A Function that overrides the vmap staticmethod runs it under vmap: it is told the "
      "batch size, the randomness and each argument's batch dimension (None: not batched), "
      "and returns (outputs, out_dims)", source=TORCH_BEHAVIOUR)
def own_vmap_rule_runs_under_vmap(E):
    seen = []
    Weighted = _weighted(E, seen)
    rng = np.random.default_rng(0)
    x = E.tensor(rng.standard_normal((3, 4, 5)))
    w = E.tensor(rng.standard_normal(5))
    out = _vmap(E)(Weighted.apply, in_dims=(0, None), randomness="same")(x, w)
    assert len(seen) == 1
    size, randomness, in_dims = seen[0]
    assert size == 3 and randomness == "same"
    assert in_dims[0] is not None and in_dims[1] is None
    expected = (x.numpy() * w.numpy()).sum(-1)
    assert tuple(out.shape) == (3, 4) and np.allclose(out.numpy(), expected)


@case("The out_dims a vmap rule returns say where each output's batch dimension is: vmap "
      "moves it to its own out_dims", source=TORCH_BEHAVIOUR)
def vmap_rule_out_dims_are_honoured(E):
    seen = []
    Weighted = _weighted(E, seen, out_dim_of_rule=1)
    rng = np.random.default_rng(1)
    x = E.tensor(rng.standard_normal((4, 5)))
    w = E.tensor(rng.standard_normal((3, 5)))
    out = _vmap(E)(Weighted.apply, in_dims=(None, 0))(x, w)
    assert seen[0][2][0] is None and seen[0][2][1] is not None
    expected = np.stack([(x.numpy() * w.numpy()[b]).sum(-1) for b in range(3)])
    assert tuple(out.shape) == (3, 4) and np.allclose(out.numpy(), expected)


@case("A vmap rule's result is what vmap returns, even where it differs from calling the "
      "Function once per example", source=TORCH_BEHAVIOUR)
def vmap_rule_result_is_taken_as_it_is(E):
    class ColSumOverBatch(E.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sum(0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vmap(info, in_dims, x):
            return x.sum(0), 0      # sums the batch: wrong, and what vmap gives
    x = E.tensor(np.arange(24.0).reshape(2, 3, 4))
    out = _vmap(E)(ColSumOverBatch.apply)(x)
    assert tuple(out.shape) == (3, 4)
    assert np.array_equal(out.numpy(), np.arange(24.0).reshape(2, 3, 4).sum(0))


@case("With generate_vmap_rule=True vmap runs the Function's forward on the batched "
      "arguments", source=TORCH_BEHAVIOUR)
def generated_vmap_rule_runs_the_forward(E):
    class Cube(E.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g
    x = E.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    out = _vmap(E)(Cube.apply)(x)
    assert np.allclose(out.detach().numpy(), np.linspace(-1, 1, 6).reshape(2, 3) ** 3)
    (g,) = E.autograd.grad(out.sum(), x)
    assert np.allclose(g.numpy(), 3 * np.linspace(-1, 1, 6).reshape(2, 3) ** 2)

"""Two torch autograd.Functions with their own vmap rules, one of them wrong.

``torch.func.vmap`` runs a Function's ``vmap`` staticmethod instead of its
forward. ``Gate``'s rule calls the Function again on whatever it is handed
and says the batch is at dimension 0, as rules written in a hurry do: under
vmap, a batched ``w`` then meets the rows of ``x`` instead of its own batch.
Its derivatives are right, so only the rule's check fails:

    adcheck check examples/vmap_rules.py:Gate --inputs 'randn(3, 5); randn(5)'
    adcheck check examples/vmap_rules.py:RightGate --inputs 'randn(3, 5); randn(5)'
"""
import torch


class Gate(torch.autograd.Function):
    """``x * sigmoid(w)`` for rows ``x`` (n, d) and a gate ``w`` (d)."""

    @staticmethod
    def forward(x, w):
        return x * torch.sigmoid(w)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        s = torch.sigmoid(w)
        return g * s, (g * x * s * (1 - s)).sum(0)

    @staticmethod
    def vmap(info, in_dims, x, w):
        return Gate.apply(x, w), 0      # WRONG: in_dims ignored


class RightGate(Gate):
    """The same, with a rule that moves each batch dimension to the front."""

    @staticmethod
    def vmap(info, in_dims, x, w):
        x_dim, w_dim = in_dims
        x = x.expand(info.batch_size, *x.shape) if x_dim is None else x.movedim(x_dim, 0)
        # (per example w is (d): batched, (B, d), it must meet each example's rows)
        w = w if w_dim is None else w.movedim(w_dim, 0).unsqueeze(1)
        return x * torch.sigmoid(w), 0

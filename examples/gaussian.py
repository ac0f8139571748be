"""A Gaussian's log-likelihood in its Cholesky factor: a constrained parameter.

torch.distributions validates ``scale_tril``: an entry above the diagonal
that moves off zero raises ValueError, so finite differences of those three
coordinates do not exist, and adcheck leaves them out and says so (see
"Constrained inputs" in docs/check.md).

    adcheck check gaussian.py:Gaussian --inputs 'randn(2, 3)'
"""
import torch


class Gaussian(torch.nn.Module):
    """``log N(x; 0, L L^T)`` summed over the rows of ``x``, ``L`` a parameter."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.L = torch.nn.Parameter(torch.eye(3) + 0.1 * torch.randn(3, 3, generator=g).tril(-1))

    def factor(self):
        """The Cholesky factor the likelihood takes (the parameter itself)."""
        return self.L

    def forward(self, x):
        zero = torch.zeros(3, dtype=x.dtype)
        # (validated whatever another library set as the default: zuko turns it off)
        gaussian = torch.distributions.MultivariateNormal(zero, scale_tril=self.factor(),
                                                          validate_args=True)
        return gaussian.log_prob(x).sum()

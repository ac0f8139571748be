"""Hand-written JAX derivative rules for ``adcheck check`` (pip install adcheck[jax]).

    adcheck check jax_ops.py:my_sin        # exits 1: the rule is off by a factor 2
    adcheck check jax_ops.py:my_tanh       # exits 0
    adcheck check jax_ops.py:my_square --inputs 'randn(3) complex128'
                                           # exits 1: a conj() that JAX's convention lacks

adcheck checks them in float64 (it turns on jax_enable_x64 itself).
"""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def my_sin(x):
    return jnp.sin(x)


def _sin_fwd(x):
    return jnp.sin(x), x


def _sin_bwd(x, ct):
    return (2 * ct * jnp.cos(x),)       # wrong: the 2 does not belong here


my_sin.defvjp(_sin_fwd, _sin_bwd)


@jax.custom_vjp
def my_tanh(x):
    return jnp.tanh(x)


def _tanh_fwd(x):
    y = jnp.tanh(x)
    return y, y


def _tanh_bwd(y, ct):
    return (ct * (1 - y * y),)


my_tanh.defvjp(_tanh_fwd, _tanh_bwd)


@jax.custom_vjp
def my_square(z):
    return z * z


def _square_fwd(z):
    return z * z, z


def _square_bwd(z, ct):
    # PyTorch's rule (grad * 2 * z.conj()); JAX's convention wants ct * 2 * z.
    # Right for real z, wrong for complex z.
    return (ct * 2 * jnp.conj(z),)


my_square.defvjp(_square_fwd, _square_bwd)

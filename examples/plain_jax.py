"""A plain JAX function: adcheck check plain_jax.py:jax_sin --engine jax."""
import jax.numpy as jnp


def jax_sin(x):
    """sin of a JAX array."""
    return jnp.sin(x)

"""A JAX model with two custom rules, one wrong: for the harvest tests."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def softclip(x, limit):
    """limit * tanh(x / limit); its x-cotangent is WRONG by a factor 1.5."""
    return limit * jnp.tanh(x / limit)


def _fwd(x, limit):
    return softclip(x, limit), (x, limit)


def _bwd(res, g):
    x, limit = res
    t = jnp.tanh(x / limit)
    return g * (1 - t * t) * 1.5, jnp.sum(g * (t - x / limit * (1 - t * t)))


softclip.defvjp(_fwd, _bwd)


@jax.custom_jvp
def square(x):
    """x * x, right, with a jvp."""
    return x * x


@square.defjvp
def _square_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x * x, 2 * x * t


def model(x):
    return square(softclip(x, jnp.asarray(2.0, dtype=x.dtype)))


def example_inputs():
    return (jnp.linspace(-3.0, 3.0, 5),)

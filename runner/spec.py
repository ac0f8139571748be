"""The input spec language of ``adcheck check --inputs``: parsed, never evaluated.

A spec lists the inputs of the function under check, separated by ``;``::

    randn(3, 4); rand(4) + 0.1; randn(2) complex128; full(2, 2, 0.5) nograd

Grammar (whitespace is free; ``#`` is not special)::

    spec     := item (";" item)* [";"]
    item     := call affine* word*
    call     := CTOR "(" [number ("," number)*] ")"
    affine   := ("+" | "-" | "*" | "/") number
    word     := DTYPE | "nograd"
    CTOR     := randn | rand | zeros | ones | full | eye | arange
    DTYPE    := float64 | float32 | complex128 | complex64     (default float64)
    number   := ["-"] digits ["." digits] [exponent] ["j"]

``randn``, ``rand``, ``zeros`` and ``ones`` take a shape (no argument: a
scalar); ``full`` a shape then its value; ``eye`` ``n`` or ``n, m``;
``arange`` ``stop``, ``start, stop`` or ``start, stop, step``. The affine
steps apply left to right. Every input requires grad unless marked
``nograd``. Random entries come from the ``numpy.random.Generator`` given to
``build``, so a seed fixes them. A bad spec raises ``SpecError`` whose
message names the column.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from adcheck.runner.errors import RunnerError

CTORS = ("randn", "rand", "zeros", "ones", "full", "eye", "arange")
DTYPES = ("float64", "float32", "complex128", "complex64")
MAX_ELEMENTS = 1_000_000

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?j?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[(),;+\-*/])
""", re.VERBOSE)


class SpecError(RunnerError):
    """A malformed spec; ``column`` is 1-based."""

    def __init__(self, message: str, column: int, text: str):
        self.column, self.text, self.reason = column, text, message
        super().__init__(f"bad input spec at column {column}: {message} "
                         f"(in {text!r}; example: \"randn(3, 4); rand(4) + 0.1\")")


@dataclass(frozen=True)
class Token:
    kind: str      # "number", "name", "punct" or "end"
    text: str
    column: int


@dataclass
class InputSpec:
    """One parsed input: ``ctor(*args)``, then ``affine`` steps, as ``dtype``."""

    ctor: str
    args: tuple
    affine: list = field(default_factory=list)
    dtype: str = "float64"
    requires_grad: bool = True

    def __str__(self) -> str:
        text = f"{self.ctor}({', '.join(_fmt(a) for a in self.args)})"
        text += "".join(f" {op} {_fmt(c)}" for op, c in self.affine)
        text += f" {self.dtype}" + ("" if self.requires_grad else " nograd")
        return text


def _fmt(value) -> str:
    return repr(value) if isinstance(value, complex) else f"{value:g}"


def tokenize(text: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise SpecError(f"unexpected character {text[pos]!r}", pos + 1, text)
        if match.lastgroup != "space":
            tokens.append(Token(match.lastgroup, match.group(), pos + 1))
        pos = match.end()
    tokens.append(Token("end", "end of spec", len(text) + 1))
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def fail(self, message: str, token: Token | None = None):
        token = token or self.tok
        raise SpecError(message, token.column, self.text)

    def take(self, text: str) -> Token:
        if self.tok.text != text:
            self.fail(f"expected {text!r}, found {self.tok.text!r}")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def number(self) -> tuple[complex | float, Token]:
        start = self.tok
        sign = 1
        if self.tok.text == "-":
            sign, self.pos = -1, self.pos + 1
        if self.tok.kind != "number":
            self.fail(f"expected a number, found {self.tok.text!r}")
        token, self.pos = self.tok, self.pos + 1
        value = complex(token.text) if token.text.endswith("j") else float(token.text)
        return sign * value, start

    def spec(self) -> list[InputSpec]:
        items = []
        while self.tok.kind != "end":
            items.append(self.item())
            if self.tok.text == ";":
                self.pos += 1
            elif self.tok.kind != "end":
                self.fail(f"expected ';' between inputs, found {self.tok.text!r}")
        if not items:
            self.fail("no input given")
        return items

    def item(self) -> InputSpec:
        name = self.tok
        if name.kind != "name" or name.text not in CTORS:
            self.fail(f"expected a constructor ({', '.join(CTORS)}), found {name.text!r}")
        self.pos += 1
        self.take("(")
        args = []
        while self.tok.text != ")":
            if args:
                self.take(",")
            args.append(self.number())
        self.take(")")
        spec = InputSpec(name.text, _check_args(name, args, self.text))
        while self.tok.text in "+-*/" and self.tok.kind == "punct":
            op = self.tok.text
            self.pos += 1
            value, _ = self.number()
            if op == "/" and value == 0:
                self.fail("division by zero", self.tokens[self.pos - 1])
            spec.affine.append((op, value))
        self.words(spec)
        return spec

    def words(self, spec: InputSpec):
        while self.tok.kind == "name":
            word = self.tok
            if word.text in CTORS:
                self.fail(f"expected ';' before the next input {word.text!r}")
            if word.text in DTYPES:
                spec.dtype = word.text
            elif word.text == "nograd":
                spec.requires_grad = False
            else:
                self.fail(f"unknown word {word.text!r}; expected a dtype "
                          f"({', '.join(DTYPES)}) or 'nograd'")
            self.pos += 1
        if any(isinstance(c, complex) for _, c in spec.affine) and "complex" not in spec.dtype:
            self.fail("a complex constant needs a complex dtype (add 'complex128' to "
                      "the input ending here)")


def _check_args(name: Token, args: list, text: str) -> tuple:
    values = [v for v, _ in args]
    ctor = name.text
    if ctor == "arange":
        return _arange_args(name, args, text)
    shape_args = args[:-1] if ctor == "full" else args
    if ctor == "full" and not args:
        raise SpecError("full needs a shape and a value, e.g. full(2, 3, 0.5)", name.column, text)
    if ctor == "eye" and len(args) not in (1, 2):
        raise SpecError("eye takes n or n, m", name.column, text)
    for value, token in shape_args:
        if isinstance(value, complex) or value != int(value) or value < 0:
            raise SpecError(f"a size must be a non-negative integer, found {token.text!r}"
                            if token.kind == "number" else "a size must be a non-negative "
                            "integer", token.column, text)
    shape = tuple(int(v) for v, _ in shape_args)
    size = shape[0] * shape[-1] if ctor == "eye" else int(np.prod(shape))
    if size > MAX_ELEMENTS:
        raise SpecError(f"at most {MAX_ELEMENTS} elements per input", name.column, text)
    return shape + ((values[-1],) if ctor == "full" else ())


def _arange_args(name: Token, args: list, text: str) -> tuple:
    if not 1 <= len(args) <= 3:
        raise SpecError("arange takes stop, start, stop or start, stop, step",
                        name.column, text)
    values = [v for v, _ in args]
    if any(isinstance(v, complex) for v in values):
        raise SpecError("arange takes real numbers", name.column, text)
    start, stop, step = (0.0, values[0], 1.0) if len(values) == 1 else (*values, 1.0)[:3]
    if step == 0 or not np.isfinite([start, stop, step]).all():
        raise SpecError("arange needs a non-zero, finite step", name.column, text)
    if (stop - start) / step > MAX_ELEMENTS:
        raise SpecError(f"at most {MAX_ELEMENTS} elements per input", name.column, text)
    return tuple(values)


def parse(text: str) -> list[InputSpec]:
    """Parse a spec; raise ``SpecError`` (with the column) when it is malformed."""
    return _Parser(text).spec()


def _base_array(spec: InputSpec, rng: np.random.Generator) -> np.ndarray:
    complex_ = spec.dtype.startswith("complex")
    args = spec.args
    if spec.ctor in ("randn", "rand"):
        draw = rng.standard_normal if spec.ctor == "randn" else rng.random
        array = draw(args)
        return array + 1j * draw(args) if complex_ else array
    if spec.ctor == "zeros":
        return np.zeros(args)
    if spec.ctor == "ones":
        return np.ones(args)
    if spec.ctor == "full":
        return np.full(args[:-1], args[-1])
    if spec.ctor == "eye":
        return np.eye(*args)
    return np.arange(*args, dtype=np.float64)


def array_of(spec: InputSpec, rng: np.random.Generator) -> np.ndarray:
    """The NumPy array ``spec`` describes, in its dtype."""
    array = np.asarray(_base_array(spec, rng))
    for op, value in spec.affine:
        if op == "+":
            array = array + value
        elif op == "-":
            array = array - value
        elif op == "*":
            array = array * value
        else:
            array = array / value
    if np.iscomplexobj(array) and not spec.dtype.startswith("complex"):
        array = array.real
    return array.astype(spec.dtype)


def build(specs: list[InputSpec], engine: str, rng: np.random.Generator) -> tuple:
    """Tensors of ``engine`` ("refengine", "torch" or "jax") for the parsed specs.

    For JAX this turns on 64-bit mode (``jax_enable_x64``), without which JAX
    would make float32 arrays of float64 specs; a ``nograd`` input is marked
    with ``gradcheck.engines.jax.nograd``, JAX arrays having no requires_grad.
    """
    arrays = [(array_of(s, rng), s.requires_grad) for s in specs]
    if engine == "torch":
        import torch
        return tuple(torch.from_numpy(a).requires_grad_(g) for a, g in arrays)
    if engine == "jax":
        import jax
        import jax.numpy as jnp

        from adcheck.gradcheck.engines.jax import nograd
        jax.config.update("jax_enable_x64", True)
        return tuple(jnp.asarray(a) if g else nograd(jnp.asarray(a)) for a, g in arrays)
    from adcheck import refengine
    return tuple(refengine.tensor(a, dtype=getattr(refengine, str(a.dtype)), requires_grad=g)
                 for a, g in arrays)

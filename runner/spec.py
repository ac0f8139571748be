"""The input spec language of ``adcheck check --inputs``: parsed, never evaluated.

A spec lists the inputs of the function under check, separated by ``;``::

    randn(3, 4); rand(4) + 0.1; randn(2) complex128; full(2, 2, 0.5) nograd

Grammar (whitespace is free; ``#`` is not special)::

    spec     := item (";" item)* (";" keyword ((";" | ",") keyword)*)* [";"]
    item     := call affine* word*
    call     := CTOR "(" [number ("," number)*] ")"
    affine   := ("+" | "-" | "*" | "/") number
    word     := DTYPE | "nograd"
    keyword  := NAME "=" value        (a non-tensor argument, passed by name)
    value    := number | True | False | None | 'text' | "(" [value ("," value)*] ")"
    CTOR     := randn | rand | randint | zeros | ones | full | eye | arange
    DTYPE    := float64 | float32 | complex128 | complex64 | float16 | bfloat16
              | int64 | int32 | int16 | int8 | uint8 | bool          (default float64)
    number   := ["-"] digits ["." digits] [exponent] ["j"]

A spec whose first item is ``example_inputs()`` (``EXAMPLE_CALL``) stands for
what the function ``example_inputs()`` of the target's file returns
(``runner.subjects``), followed by keywords as any spec.

``randn``, ``rand``, ``zeros`` and ``ones`` take a shape (no argument: a
scalar); ``randint`` its bound ``high`` then a shape (integers in
``[0, high)``); ``full`` a shape then its value; ``eye`` ``n`` or ``n, m``;
``arange`` ``stop``, ``start, stop`` or ``start, stop, step``. The affine
steps apply left to right. Every input requires grad unless marked
``nograd``; an integer or bool input never does (an index tensor for
``gather`` or an embedding: ``randint(10, 4) int64``). float16 and bfloat16
exist on torch and JAX only (``unsupported``). A keyword value is a number
(an int when written without a point), ``True``, ``False``, ``None``, a
quoted string or a tuple: ``randn(3, 4); dim=1, keepdim=True``. Random
entries come from the ``numpy.random.Generator`` given to ``build``, so a
seed fixes them. A bad spec raises ``SpecError`` whose
message names the column; a part out of the grammar's order (``randn(3) float32
* 2``, ``float32 randn(3)``, ``2 * randn(3)``, ``randn(3, dtype=float32)``) is
refused with the input spelled in that order where it can be.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field

import numpy as np

from adcheck.runner.spectokens import (CONSTANTS, CTORS, DTYPES, INTEGERS, SpecError, Token,
                                       tokenize)

#: dtypes each engine has (NumPy has no bfloat16: it is made on torch or JAX)
ENGINE_DTYPES = {"refengine": ("float64", "float32", "complex128", "complex64", "int64",
                               "int32", "bool"),
                 "torch": DTYPES, "jax": DTYPES}
MAX_ELEMENTS = 1_000_000
#: the spec of the tensors ``example_inputs()`` in the target's file returns
EXAMPLE_CALL = "example_inputs()"
#: how results made at ``EXAMPLE_CALL`` are labelled where others carry their dtype
EXAMPLE_LABEL = "example"


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


def _spelling(call: str, steps: list, words: list) -> str:
    """An input written in the grammar's order: the call, its steps, its words."""
    return " ".join([call, *steps, *words])


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0
        #: each input read so far, spelled back: (its call, its steps, its words)
        self.parts: list[tuple[str, list, list]] = []

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

    def spec(self) -> tuple[list[InputSpec], dict]:
        items, keywords = [], {}
        while self.tok.kind != "end":
            keyword = self.tok.kind == "name" and self.tokens[self.pos + 1].text == "="
            if keyword:
                self.keyword(keywords)
            else:
                if keywords:
                    self.fail("the tensors come first, then the keyword arguments "
                              "(randn(3, 4); dim=1)")
                items.append(self.item())
            if self.tok.text == ";" or (keyword and self.tok.text == ","):
                self.pos += 1
            elif self.tok.kind != "end":
                self.fail(f"expected ';' between inputs, found {self.tok.text!r}")
        if not items:
            self.fail("no input given")
        return items, keywords

    def keyword(self, keywords: dict) -> None:
        name = self.tok
        if name.text in keywords:
            self.fail(f"keyword {name.text!r} given twice")
        dtype = self.tokens[self.pos + 2].text
        if name.text == "dtype" and dtype in DTYPES:
            fixed = "; ".join(_spelling(call, steps, words if set(words) & set(DTYPES)
                                        else words + [dtype]) for call, steps, words in self.parts)
            self.fail("an input's dtype is a word after it, not a keyword: write "
                      + (repr(fixed) if fixed else f"'randn(3, 4) {dtype}' in --inputs"))
        self.pos += 2
        keywords[name.text] = self.value()

    def value(self):
        """A keyword argument's value: a number (an int when written without a
        point), True, False, None, a quoted string or a parenthesised tuple."""
        tok = self.tok
        if tok.kind == "name" and tok.text in CONSTANTS:
            self.pos += 1
            return CONSTANTS[tok.text]
        if tok.kind == "string":
            self.pos += 1
            return tok.text[1:-1]
        if tok.text == "(":
            self.pos += 1
            values = []
            while self.tok.text != ")":
                if values:
                    self.take(",")
                if self.tok.text != ")":
                    values.append(self.value())
            self.pos += 1
            return tuple(values)
        if tok.kind != "number" and tok.text != "-":
            self.fail(f"expected a value (a number, True, False, None, 'text' or a tuple), "
                      f"found {tok.text!r}")
        value, _ = self.number()
        plain = self.tokens[self.pos - 1].text
        whole = isinstance(value, float) and not any(c in plain for c in ".eE")
        return int(value) if whole else value

    def item(self) -> InputSpec:
        name = self.tok
        if name.kind != "name" or name.text not in CTORS:
            self.misplaced_lead()
            self.fail(f"expected a constructor ({', '.join(CTORS)}), found {name.text!r}")
        self.pos += 1
        self.take("(")
        args, texts, inside = [], [], []    # inside: dtypes written in the parentheses
        while self.tok.text != ")":
            if args or inside:
                self.take(",")
            if self.tok.kind == "name" and self.tok.text in DTYPES + ("dtype",):
                inside.append(self.dtype_argument())
            else:
                args.append(self.number())
                texts.append(self.spelled(args[-1][1]))
        self.take(")")
        spec = InputSpec(name.text, _check_args(name, args, self.text))
        call = f"{name.text}({', '.join(texts)})"
        steps, words = self.tail(spec, call)
        if inside:
            self.fail(f"the dtype goes after the parentheses, not inside them: write "
                      f"{_spelling(call, steps, words + [t.text for t in inside])!r}", inside[0])
        self.parts.append((call, steps, words))
        return spec

    def spelled(self, start: Token) -> str:
        """The text from ``start`` to the last token read, as the user wrote it."""
        last = self.tokens[self.pos - 1]
        return self.text[start.column - 1:last.column - 1 + len(last.text)]

    def dtype_argument(self) -> Token:
        """The dtype written among a constructor's arguments (``randn(3, float32)``
        or ``randn(3, dtype=float32)``), read so that the refusal spells the call."""
        if self.tok.text == "dtype":
            self.pos += 1
            self.take("=")
            if self.tok.text not in DTYPES:
                self.fail(f"expected a dtype ({', '.join(DTYPES)}), found {self.tok.text!r}")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def misplaced_lead(self) -> None:
        """Refuse an input that begins with what follows its constructor (a dtype,
        'nograd', a constant times or plus it: ``float32 randn(3)``, ``2 * randn(3)``)
        with the spelling in the grammar's order; return if it begins otherwise."""
        first, start, words = self.tok, self.pos, []
        while self.tok.kind == "name" and self.tok.text in DTYPES + ("nograd",):
            words.append(self.tok.text)
            self.pos += 1
        lead = [] if words else self.leading_steps()
        if self.tok.text not in CTORS or not (words or lead):
            self.pos = start
            return
        self.item()
        call, steps, own = self.parts[-1]
        if words:
            self.fail(f"{first.text!r} goes after its input's constructor and arithmetic: "
                      f"write {_spelling(call, steps, own + words)!r}", first)
        if None in lead:
            self.fail(f"the arithmetic goes after the constructor ({call} / 2); a number "
                      "divided by an input has no spelling: divide in the function, or "
                      "return such an input from example_inputs()", first)
        # the lead applies first: right after a product (2 * x * 3), after a sum
        # only before more sums (2 + x - 1; not 2 + x * 3, which is 2 + 3x)
        if any(s[0] in "*/" for s in steps) and any(s[0] in "+-" for s in lead):
            self.fail(f"the arithmetic goes after the constructor, applied left to right: "
                      f"write it as steps after {call!r}", first)
        self.fail(f"the arithmetic goes after the constructor: write "
                  f"{_spelling(call, lead + steps, own)!r}", first)

    def leading_steps(self) -> list:
        """The steps of a constant written before a constructor (``2 * randn(3)``:
        ``['* 2']``; ``None`` for a step with no spelling after it, c / x); ``[]``
        when the tokens here are no such constant."""
        if self.tok.text == "-" and self.tokens[self.pos + 1].text in CTORS:
            self.pos += 1
            return ["* -1"]
        signed = self.tok.text == "-" and self.tokens[self.pos + 1].kind == "number"
        if self.tok.kind != "number" and not signed:
            return []
        _, start = self.number()
        constant, op = self.spelled(start), self.tok.text
        if self.tok.kind != "punct" or op not in "+-*/":
            return []
        self.pos += 1
        return {"*": [f"* {constant}"], "+": [f"+ {constant}"],
                "-": ["* -1", f"+ {constant}"], "/": [None]}[op]

    def tail(self, spec: InputSpec, call: str) -> tuple[list, list]:
        """The arithmetic steps and the words after a constructor call, spelled
        back; a word before a step (``randn(4) float32 * 2``) is refused with
        the order written out."""
        steps, words, early = [], [], None
        while True:
            if self.tok.kind == "punct" and self.tok.text in "+-*/":
                early = early or (self.tokens[self.pos - len(words)] if words else None)
                op, self.pos = self.tok.text, self.pos + 1
                value, start = self.number()
                if op == "/" and value == 0:
                    self.fail("division by zero", self.tokens[self.pos - 1])
                spec.affine.append((op, value))
                steps.append(f"{op} {self.spelled(start)}")
            elif self.tok.kind == "name":
                words.append(self.word(spec))
            else:
                break
        if early:
            self.fail(f"{early.text!r} goes after the arithmetic (a constructor, then its "
                      f"+ - * / steps, then the dtype and 'nograd'): write "
                      f"{_spelling(call, steps, words)!r}", early)
        if any(isinstance(c, complex) for _, c in spec.affine) and "complex" not in spec.dtype:
            self.fail("a complex constant needs a complex dtype (add 'complex128' to "
                      "the input ending here)")
        return steps, words

    def word(self, spec: InputSpec) -> str:
        """Read a dtype or 'nograd' after a constructor into ``spec``."""
        word = self.tok
        if word.text in CTORS:
            self.fail(f"expected ';' before the next input {word.text!r}")
        if word.text in DTYPES:
            spec.dtype = word.text
            if word.text in INTEGERS:     # an index or a mask: never differentiated
                spec.requires_grad = False
                if spec.ctor in ("randn", "rand"):
                    self.fail(f"{spec.ctor} draws real numbers; an {word.text} input takes "
                              "randint(high, shape...), arange, zeros, ones or full", word)
        elif word.text == "nograd":
            spec.requires_grad = False
        else:
            self.fail(f"unknown word {word.text!r}; expected a dtype "
                      f"({', '.join(DTYPES)}) or 'nograd'")
        self.pos += 1
        return word.text

def _check_args(name: Token, args: list, text: str) -> tuple:
    values = [v for v, _ in args]
    ctor = name.text
    if ctor == "arange":
        return _arange_args(name, args, text)
    if ctor == "randint" and (not args or isinstance(values[0], complex) or values[0] < 1
                              or values[0] != int(values[0])):
        raise SpecError("randint takes high (an integer above 0) then the shape, e.g. "
                        "randint(5, 3) int64 for 3 integers in [0, 5)", name.column, text)
    shape_args = args[:-1] if ctor == "full" else args[1:] if ctor == "randint" else args
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
    high = (int(values[0]),) if ctor == "randint" else ()
    return high + shape + ((values[-1],) if ctor == "full" else ())


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


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> tuple:
    """``(tensors, keywords)`` of ``text``, parsed once per process: the command
    validates a spec, and each worker reads it for its dtype and its inputs."""
    return _Parser(text).spec()


def example_keywords(text: str) -> str | None:
    """For a spec naming ``example_inputs()`` (``EXAMPLE_CALL``): the text of its
    keywords ('' for none); ``None`` for any other spec."""
    head, _, rest = text.partition(";")
    return rest if "".join(head.split()) == EXAMPLE_CALL else None


def parse(text: str) -> list[InputSpec]:
    """The tensors of a spec; raise ``SpecError`` (with the column) when it is malformed."""
    return copy.deepcopy(_parsed(text)[0])


def parse_keywords(text: str) -> dict:
    """The keyword arguments of ``text`` alone (``dim=1, keepdim=True``)."""
    parser, keywords = _Parser(text), {}
    while parser.tok.kind != "end":
        if parser.tok.kind != "name" or parser.tokens[parser.pos + 1].text != "=":
            parser.fail(f"expected NAME=VALUE, found {parser.tok.text!r}")
        parser.keyword(keywords)
        if parser.tok.text in (";", ","):
            parser.pos += 1
        elif parser.tok.kind != "end":
            parser.fail(f"expected ',' between keyword arguments, found {parser.tok.text!r}")
    return keywords


def ndim(spec: InputSpec) -> int:
    """The number of dimensions of the tensor ``spec`` makes."""
    if spec.ctor == "eye":
        return 2
    if spec.ctor == "arange":
        return 1
    return len(spec.args) - (1 if spec.ctor in ("full", "randint") else 0)


def parse_call(text: str) -> tuple[list[InputSpec], dict]:
    """``(tensors, keywords)`` of a spec: its tensors, and its keyword arguments
    (``dim=1; keepdim=True``) by name."""
    tensors, keywords = _parsed(text)
    return copy.deepcopy(tensors), copy.deepcopy(keywords)


def _base_array(spec: InputSpec, rng: np.random.Generator) -> np.ndarray:
    complex_ = spec.dtype.startswith("complex")
    args = spec.args
    if spec.ctor in ("randn", "rand"):
        draw = rng.standard_normal if spec.ctor == "randn" else rng.random
        array = draw(args)
        return array + 1j * draw(args) if complex_ else array
    if spec.ctor == "randint":
        return rng.integers(0, args[0], args[1:])
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
    """The NumPy array ``spec`` describes, in its dtype (bfloat16: in float32,
    which ``build`` rounds to bfloat16)."""
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
    return array.astype(_NUMPY_DTYPE.get(spec.dtype, spec.dtype))


#: what NumPy holds a dtype it lacks in (the engine's tensor is then rounded to it)
_NUMPY_DTYPE = {"bfloat16": "float32"}


def build(specs: list[InputSpec], engine: str, rng: np.random.Generator) -> tuple:
    """Tensors of ``engine`` ("refengine", "torch" or "jax") for the parsed specs.

    For JAX this turns on 64-bit mode (``jax_enable_x64``), without which JAX
    would make float32 arrays of float64 specs; a ``nograd`` input is marked
    with ``gradcheck.engines.jax.nograd``, JAX arrays having no requires_grad.
    """
    arrays = [(array_of(s, rng), s.requires_grad, s.dtype) for s in specs]
    if engine == "torch":
        import torch
        return tuple(torch.from_numpy(a).to(getattr(torch, d)).requires_grad_(g)
                     for a, g, d in arrays)
    if engine == "jax":
        import jax
        import jax.numpy as jnp

        from adcheck.gradcheck.engines.jax import nograd
        jax.config.update("jax_enable_x64", True)
        made = [(jnp.asarray(a, dtype=getattr(jnp, d)), g) for a, g, d in arrays]
        return tuple(x if g else nograd(x) for x, g in made)
    from adcheck import refengine
    return tuple(refengine.tensor(a, dtype=getattr(refengine, d),
                                  requires_grad=g) for a, g, d in arrays)


def unsupported(specs: list[InputSpec], engine: str) -> str | None:
    """Why ``engine`` cannot make these inputs (a dtype it lacks), else ``None``."""
    missing = sorted({s.dtype for s in specs} - set(ENGINE_DTYPES[engine]))
    if not missing:
        return None
    return (f"{', '.join(missing)} exist on --engine torch and jax, not on {engine} (which has "
            f"{', '.join(ENGINE_DTYPES[engine])})")

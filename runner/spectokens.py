"""The words of the ``--inputs`` spec language (``runner.spec`` parses them):
its constructors, dtypes and constants, the tokenizer, and ``SpecError``."""
from __future__ import annotations

import re
from dataclasses import dataclass

from adcheck.runner.errors import RunnerError

CTORS = ("randn", "rand", "randint", "zeros", "ones", "full", "eye", "arange")
#: floating point and complex dtypes: inputs that may require grad
FLOATS = ("float64", "float32", "complex128", "complex64", "float16", "bfloat16")
#: integer and boolean dtypes: never differentiated (index tensors, masks)
INTEGERS = ("int64", "int32", "int16", "int8", "uint8", "bool")
DTYPES = FLOATS + INTEGERS
#: the words of a keyword argument's value that are not numbers
CONSTANTS = {"True": True, "False": False, "None": None}

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?j?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>'[^']*'|"[^"]*")
  | (?P<punct>[(),;+\-*/=])
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


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``end`` token."""
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise SpecError(_unexpected(text, pos, tokens), pos + 1, text)
        if match.lastgroup != "space":
            tokens.append(Token(match.lastgroup, match.group(), pos + 1))
        pos = match.end()
    tokens.append(Token("end", "end of spec", len(text) + 1))
    return tokens


def _unexpected(text: str, pos: int, tokens: list[Token]) -> str:
    """Why ``text[pos]`` starts no token; a library's dtype (``torch.float32``)
    is told to drop its prefix."""
    qualified = re.match(r"\.(\w+)", text[pos:])
    if tokens and tokens[-1].kind == "name" and qualified and qualified[1] in DTYPES:
        return (f"a dtype is a bare word after its input ('randn(3) {qualified[1]}'), "
                f"not {tokens[-1].text}.{qualified[1]}")
    return f"unexpected character {text[pos]!r}"

"""Programs for the differential fuzzer: what they are and how they are drawn.

A program is a list of statements, each one line of Python over an engine
module ``E`` (refengine or torch) and the variables ``v0, v1, ...`` that
earlier statements defined. The same text runs on both engines, and the
same text is the reproducer: there is no second interpretation of a program.

A statement knows the variable it defines (or rewrites, for an in-place op),
the variables it reads, and the grad mode it runs under. ``Program.mode`` is
how the program ends: ``backward``, ``double`` (grad with create_graph, then
backward through the gradients) or ``forward`` (everything inside a dual
level, the leaves dual tensors; the tangents are observed).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

SHAPES = ((3,), (2, 3), ())
MODES = ("backward", "double", "forward")
GRAD_MODES = ("E.no_grad()", "E.enable_grad()", "E.inference_mode()",
              "E.set_grad_enabled(False)")


@dataclass(frozen=True)
class Stmt:
    """One line: ``code`` defines the new variable ``target`` (or None) from ``uses``;
    ``observe`` is the variable looked at after it (the target, or the one an
    in-place op wrote)."""

    code: str
    target: str | None
    uses: tuple = ()
    kind: str = ""          # the template's name: how findings are grouped
    grad_mode: str | None = None
    observe: str | None = None

    def source(self) -> str:
        if self.grad_mode is None:
            return self.code
        return f"with {self.grad_mode}:\n    {self.code}"


@dataclass(frozen=True)
class Program:
    """Statements plus how the program ends (``mode``)."""

    stmts: tuple
    mode: str = "backward"

    def source(self) -> str:
        return "\n".join(s.source() for s in self.stmts)

    def without(self, indices) -> "Program":
        """The program minus the statements at ``indices`` and all that read
        what they defined."""
        gone, dropped, kept = set(), set(indices), []
        for i, s in enumerate(self.stmts):
            if i in dropped or gone & set(s.uses):
                if s.target is not None:
                    gone.add(s.target)
                continue
            kept.append(s)
        return replace(self, stmts=tuple(kept))


# ----- the generator ------------------------------------------------------

@dataclass
class _Var:
    name: str
    shape: tuple
    complex: bool
    leaf: bool = False
    expanded: bool = False      # a view of an expand: torch 2.13 crashes on some hooks


@dataclass
class _State:
    rng: random.Random
    mode: str
    vars: list = field(default_factory=list)
    stmts: list = field(default_factory=list)
    hooks: int = 0

    def new(self, shape, is_complex, leaf=False, expanded=False) -> str:
        name = f"v{len(self.vars)}"
        self.vars.append(_Var(name, tuple(shape), is_complex, leaf, expanded))
        return name

    def pick(self, pred=lambda v: True):
        choices = [v for v in self.vars if pred(v)]
        return self.rng.choice(choices) if choices else None


def _number(rng: random.Random, is_complex: bool) -> str:
    special = (0.0, 1.0, -1.0, 0.5, 2.0, -2.0)
    def real():
        return rng.choice(special) if rng.random() < 0.35 else round(rng.gauss(0, 1.2), 3)
    if is_complex:
        return f"complex({real()}, {real()})"
    return repr(real())


def _data(rng, shape, is_complex) -> str:
    if not shape:
        return _number(rng, is_complex)
    if len(shape) == 1:
        return "[" + ", ".join(_number(rng, is_complex) for _ in range(shape[0])) + "]"
    return "[" + ", ".join(_data(rng, shape[1:], is_complex) for _ in range(shape[0])) + "]"


def _leaf(st: _State) -> None:
    rng = st.rng
    shape, is_complex = rng.choice(SHAPES), rng.random() < 0.2
    dtype = "E.complex128" if is_complex else "E.float64"
    data = _data(rng, shape, is_complex)
    rg = st.mode == "forward" or rng.random() < 0.8
    if st.mode == "forward":
        tangent = _data(rng, shape, is_complex)
        code = (f"E.autograd.forward_ad.make_dual(E.tensor({data}, dtype={dtype}), "
                f"E.tensor({tangent}, dtype={dtype}))")
    else:
        code = f"E.tensor({data}, dtype={dtype}, requires_grad={rg})"
        if rg and rng.random() < 0.3:
            code += " * 1"          # a non-leaf that can be written in place
    name = st.new(shape, is_complex, leaf=rg)
    st.stmts.append(Stmt(f"{name} = {code}", name, (), "leaf", observe=name))


def generate(rng: random.Random, size: int | None = None) -> Program:
    """A random program of about ``size`` statements (drawn when None)."""
    from fuzz_templates import draw_statement
    mode = rng.choice(MODES)
    st = _State(rng, mode)
    for _ in range(rng.randint(1, 3)):
        _leaf(st)
    for _ in range(size if size is not None else rng.randint(2, 10)):
        if rng.random() < 0.1:
            _leaf(st)
            continue
        stmt = draw_statement(st)
        if stmt is None:
            continue
        if rng.random() < 0.12 and stmt.kind not in ("hook", "leaf"):
            stmt = replace(stmt, grad_mode=rng.choice(GRAD_MODES))
        st.stmts.append(stmt)
    from fuzz_templates import ending
    st.stmts.extend(ending(st))
    return Program(tuple(st.stmts), mode)

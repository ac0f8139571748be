"""The input sets of ``adcheck check MODULE:OBJECT``: given, or chosen to show bugs.

Given ``--inputs`` are parsed here, once, so a bad one exits 2 before any
work; ``--args`` (keyword arguments such as ``dim=1``) join every set.
Without ``--inputs`` the default sets are chosen so that the usual bugs can
show (issue 28, item 6):

- ``rows``: every input ``randn(3, 4)``, several rows, where a reduction
  over the wrong axis or a row-wise formula applied to the whole differs;
- ``broadcast`` (two inputs or more): the first ``randn(3, 4)``, the others
  ``randn(4)``, where a gradient not summed over the broadcast rows differs;
- ``complex``: every input ``randn(3, 4) complex128``, where a missing
  ``conj()`` differs.

A layer (an ``nn.Module``) gets instead the shapes its first layer takes
(``cli.commands.layer_inputs``: a Linear's width, a convolution's channels,
an embedding's indices), the first of them it runs on, and that set in
complex128 where it takes it.

Each is kept when the object runs on it (one call before the run, in a
process of its own: ``cli.commands.probe``); for each one it cannot run on,
a warning says which bug the run cannot show (not for complex inputs to a
layer of real parameters); when the call times out or its process dies,
that set alone is checked (the run then says why). When none runs because
the object indexes with an argument, each argument in turn is given as
indices (``INDEX_SET``, some repeated), the others as rows. When none runs,
``randn(3)`` per input is tried, kept with those warnings when the object
runs on it; when it runs on that neither, the command exits 2 with what each
set raised. Every set's layout (the tensors' shapes, ``runner.layouts``)
goes into the report, so that a failure's worst entries are shown in the
tensors' own indices.
"""
from __future__ import annotations

import re

from adcheck.cli.commands.layer_inputs import (in_dtype, layer_inputs, parameters_dtype,
                                                real_parameters)
from adcheck.cli.commands.probe import probe
from adcheck.cli.errors import InputError
from adcheck.runner.errors import RunnerError

EXAMPLE = "randn(3, 4); rand(4) + 0.1; randn(2) complex128"

#: (name, spec of each input given their number, the bug a run without it cannot show)
CANDIDATES = (
    ("rows", lambda n: ["randn(3, 4)"] * n,
     "a row-wise bug (a reduction over the wrong axis, rows coupled that should not be)"),
    ("broadcast", lambda n: ["randn(3, 4)"] + ["randn(4)"] * (n - 1) if n > 1 else None,
     "a broadcasting bug (a gradient not summed over the rows an input was broadcast to)"),
    ("complex", lambda n: ["randn(3, 4) complex128"] * n,
     "a complex bug (a missing conj(), a wrong real or imaginary part)"),
)


#: where every default set failed on an argument used as indices (an embedding's lookup
#: ``weight[idx]``): that argument as 12 integers below 10 (so some repeat: a backward
#: that writes by index assignment drops a repeated one's gradient), the others 10 rows
INDEX_SET = ("indices", "randint(10, 12) int64", "randn(10, 4)",
             "a lookup by repeated indices (a gradient written by index assignment)")
#: what a refusal says when the object indexes with a floating point argument
#: (torch's and refengine's IndexError, gather's and index_select's, F.embedding's)
_INDEX_WORDS = re.compile(r"(indices|for index).*(long|int|Long|Int)"
                          r"|(long|int|Long|Int).*(indices|for index)")
#: parameters by these names are options more often than tensors: where no default
#: set runs, the error says to give them with --args (an example value each)
OPTIONS = {"dim": "-1", "axis": "-1", "keepdim": "True", "eps": "1e-05", "p": "2",
           "alpha": "1.0", "beta": "1.0", "threshold": "20.0", "training": "False",
           # (shapes that fit the default sets' first input, randn(3, 4))
           "normalized_shape": "(4,)", "shape": "(4, 3)"}

#: how long the call of one input set before the run may take, in seconds (at most --timeout)
PROBE_SECONDS = 5.0


def _with_args(spec: str, args: str | None) -> str:
    return spec if not args else f"{spec.rstrip().rstrip(';')}; {args}"


def _parse(text: str, target):
    from adcheck.runner.spec import SpecError, parse_call, unsupported
    try:
        parsed, _ = parse_call(text)
    except SpecError as exc:
        raise InputError(f"--inputs: {exc}") from None
    # (a module is checked in its parameters too: an embedding's indices are enough)
    if not any(s.requires_grad for s in parsed) and not target.kind.endswith("Module"):
        raise InputError(f"--inputs {text!r}: every input is nograd or an integer, so there "
                         "is nothing to differentiate; give one floating point input that "
                         "requires grad")
    problem = unsupported(parsed, target.engine)
    if problem is not None:
        raise InputError(f"--inputs {text!r}: {problem}")
    return parsed


def _has_example(target) -> bool:
    """Whether the file the target comes from defines ``example_inputs()``."""
    from adcheck.runner.target import source_module
    try:
        return callable(getattr(source_module(target.spec), "example_inputs", None))
    except Exception:  # noqa: BLE001 - resolve() imported it already; nothing to add here
        return False


def _example_made(target) -> None:
    """Refuse (exit 2) an ``example_inputs()`` that raises or returns no tensors:
    the inputs' fault, not the object's."""
    from adcheck.runner.subjects import example_tensors
    try:
        example_tensors(target)
    except Exception as exc:  # noqa: BLE001 - the user's code, or what it returned
        file = target.spec.split(":")[0]
        said = str(exc) if isinstance(exc, RunnerError) else \
            f"example_inputs() in {file} raised {type(exc).__name__}: {exc}"
        raise InputError(f"{said}; fix it, or give --inputs") from None


def keyword_names(args: str | None) -> dict:
    """The keyword arguments of ``--args`` (``dim=1, keepdim=True``), by name."""
    from adcheck.runner.spec import SpecError, parse_keywords
    if not args:
        return {}
    try:
        return parse_keywords(args)
    except SpecError as exc:
        raise InputError(f"--args: {exc.reason} at column {exc.column} (in {args!r}; "
                         "example: --args 'dim=1, keepdim=True')") from None


def _defaults(target, args: str | None, seed: int,
              seconds: float) -> tuple[list, list, list]:
    """``(specs, layouts, warnings)`` of the default input sets (see the module)."""
    keywords = keyword_names(args)
    kept = _Kept(target, args, seed, seconds)
    count = _count(target, keywords) if target.arity is not None else _probed_count(kept)
    layer = layer_inputs(target.func, count) if target.kind.endswith("Module") else []
    if layer:   # the shapes its first layer takes; its complex set made from the one it runs on
        chosen = kept.first_of("rows", layer)
        complex_set = chosen and [_complex(s) for s in chosen]
        if complex_set != chosen and not kept.stopped:   # (indices alone: no complex set)
            kept.first_of("complex", [complex_set], quiet=real_parameters(target.func))
    else:
        for name, make, _ in CANDIDATES:
            shapes = make(count)
            if shapes is not None:
                kept.first_of(name, [shapes])
            if kept.stopped:
                break
        if not kept.specs and count > 1 and any(_INDEX_WORDS.search(r) for r in kept.refusals):
            _index_sets(kept, count)
        if not kept.specs and kept.refusals and all(_SQUARE_WORDS.search(r)
                                                    for r in kept.refusals):
            _square_sets(kept, count)
        options = _option_like(target, keywords)
        if kept.specs and options:   # (it ran with them as tensors: checked as such)
            kept.notes.append(f"{target.name} takes {', '.join(options)}, which the default "
                              "sets give as tensors, and it was checked so (their derivatives "
                              f"too); {_as_options(options)}")
    if not kept.specs:
        spec = _with_args("; ".join(["randn(3)"] * count), args)
        found = probe(target, spec, seed, 0, seconds)
        if found.kind == "raised":
            raise InputError(
                f"{target.name} runs on none of the default inputs ("
                + "; ".join(kept.refusals + [f"randn(3): {_raised(found.text)}"])
                + f"); {_what_to_give(target, keywords, kept.refusals + [found.text])}")
        kept.specs, kept.layouts = [spec], [found.layout]
    return kept.specs, kept.layouts, kept.notes


#: a parameter a refusal names (torch's "argument 'dim' (position 2) must be int",
#: Python's 'missing 1 required positional argument: "dim"')
_NAMED = re.compile(r"""argument '(\w+)'|arguments?: ['"](\w+)['"]""")
#: a parameter torch says must be a number or integers ("argument 'k' (position 2)
#: must be int, not Tensor"): an option whatever its name, with an example value
_TYPED = re.compile(r"argument '(\w+)' \(position \d+\) must be (int|tuple of ints|Number|"
                    r"float|bool), not Tensor")
_TYPED_EXAMPLES = {"int": "1", "tuple of ints": "(1,)", "Number": "2.0", "float": "2.0",
                   "bool": "True"}


def _option_like(target, keywords: dict, refusals: list = ()) -> dict:
    """The parameters of ``target`` that look like options (named as options
    usually are, ``OPTIONS``, or said by a refusal to be numbers), with an
    example value each, that ``--args`` does not give: by its signature, or
    named in ``refusals`` (an object whose signature does not tell)."""
    named = list(target.params) + [a or b for text in refusals
                                   for a, b in _NAMED.findall(text)]
    found = {p: OPTIONS[p] for p in named if p in OPTIONS}
    for text in refusals:
        for name, kind in _TYPED.findall(text):
            found.setdefault(name, _TYPED_EXAMPLES[kind])
    return {p: v for p, v in found.items() if p not in keywords}


def _as_options(options: dict) -> str:
    """How to give ``options`` (example values by name) as options, in words."""
    one = len(options) == 1
    example = ", ".join(f"{p}={v}" for p, v in options.items())
    return (f"if {'it is an option' if one else 'they are options'}, give "
            f"{'it' if one else 'them'} with --args, e.g. --args '{example}'")


def _what_to_give(target, keywords: dict, refusals: list = ()) -> str:
    """What to pass when no default set runs: the parameters whose names are
    usually options (``OPTIONS``) with ``--args``, or inputs with ``--inputs``."""
    options = _option_like(target, keywords, refusals)
    # (inputs no constructor makes, probability rows say, come from Python)
    made = (f", or define example_inputs() in {target.spec.split(':')[0]} returning them"
            if target.spec.split(":")[0].endswith(".py") else "")
    example = _example_for(target)
    if options:
        return (f"{target.name} takes {', '.join(options)}, which the default sets give as "
                f"tensors: {_as_options(options)}; else give inputs it takes with --inputs, "
                f"e.g. --inputs \"{example}\"{made}")
    return f"give inputs it takes with --inputs, e.g. --inputs \"{example}\"{made}"


def _example_for(target) -> str:
    """``EXAMPLE`` cut to the object's count of inputs, where its signature tells
    (a one-input module was shown three)."""
    parts = EXAMPLE.split("; ")
    count = getattr(target, "arity", None)
    if not count or count >= len(parts):
        return EXAMPLE
    return "; ".join(parts[:count])


def _index_sets(kept, count: int) -> None:
    """Each argument in turn as indices (``INDEX_SET``), the first set the
    object runs on kept, and that set's floating inputs in complex128 where it
    takes them."""
    name, indices, rows, _ = INDEX_SET
    sets = [[indices if k == position else rows for k in range(count)]
            for position in range(count)]
    before = len(kept.notes)
    chosen = kept.first_of(name, sets, bug=INDEX_SET[3])
    if not chosen:
        return
    # (the sets refused for indexing with floats: no bug is left unshown by them)
    del kept.notes[:before]
    position = chosen.index(indices)
    kept.notes.append(f"{kept.target.name} indexes with input {position}, which the default "
                      f"sets give as {indices} (12 indices below 10: some repeat), the "
                      f"others as {rows}; give --inputs to choose")
    if not kept.stopped:
        kept.first_of("complex", [[_complex(s) for s in chosen]])


#: where every default set was refused for not being square (a determinant, an
#: inverse, a solve, eigh): every input this matrix, and then in complex128
SQUARE = "randn(4, 4)"
#: how torch and refengine ("must be batches of square matrices") and JAX ("must
#: have shape [..., n, n]") refuse a matrix that is not square
_SQUARE_WORDS = re.compile(r"square|\[\.\.\., n, n\]")


def _square_sets(kept, count: int) -> None:
    """Every input ``SQUARE`` (the set kept where the object runs on it), and
    that set in complex128 where it takes it."""
    before = len(kept.notes)
    chosen = kept.first_of("square", [[SQUARE] * count],
                           bug="a matrix function's bug (the other default sets are not square)")
    if not chosen:
        return
    del kept.notes[:before]   # (the sets refused for not being square leave nothing unshown)
    kept.notes.append(f"{kept.target.name} takes square matrices, which the default sets "
                      f"give as {SQUARE}; give --inputs to choose")
    if not kept.stopped:
        kept.first_of("complex", [[_complex(s) for s in chosen]])


def layer_set(target, seed: int) -> str | None:
    """The first of a layer's own input sets (``layer_inputs``), in its
    parameters' dtype, it runs on, as ``--inputs`` would give it (``--harvest``
    runs the model as it is built); None for an object that is no layer, or
    that takes none."""
    if not target.kind.endswith("Module"):
        return None
    count = _count(target, {})
    dtype = parameters_dtype(target.func)
    for shapes in layer_inputs(target.func, count):
        spec = "; ".join(in_dtype(s, dtype) for s in shapes)
        if probe(target, spec, seed, 0, PROBE_SECONDS).kind == "ran":
            return spec
    return None


#: how many inputs an object whose signature does not tell is tried with, in turn
MOST_INPUTS = 3


def _probed_count(kept) -> int:
    """How many inputs an object whose signature does not say takes (a compiled
    function without a docstring, ``torch.relu``): the fewest of ``rows``
    inputs, up to ``MOST_INPUTS``, it runs on. Exits 2 when it runs on none."""
    refusals = []
    for count in range(1, MOST_INPUTS + 1):
        shown = "; ".join(["randn(3, 4)"] * count)
        found = probe(kept.target, _with_args(shown, kept.args), kept.seed, 0, kept.seconds)
        if found.kind != "raised":
            return count
        refusals.append(f"{shown}: {_raised(found.text)}")
    raise InputError(f"cannot tell how many inputs {kept.target.spec} takes, and it runs on "
                     f"none of 1 to {MOST_INPUTS} inputs ({'; '.join(refusals)}); "
                     + _what_to_give(kept.target, {}, refusals))


def _count(target, keywords: dict) -> int:
    """How many tensors the default sets give ``target``: its positional
    parameters not named in ``keywords`` (``--args``), at least one."""
    named = [p for p in target.params if p not in keywords]
    return max(len(named) if target.params else (target.arity or 1), 1)


def _complex(spec: str) -> str:
    return f"{spec} complex128" if spec.startswith("randn") else spec


#: where a function is NaN or inf on randn inputs (a log, a square root, atanh,
#: acosh), the real ones moved into these ranges in turn, the first where every
#: output is finite kept: (0.1, 0.9), then (1.1, 2.1)
DOMAINS = ("* 0.8 + 0.1", "+ 1.1")


def _moved(spec: str, affine: str) -> str:
    """``spec`` with a real ``randn(...)`` made ``rand(...) AFFINE``; others as they are."""
    if not spec.startswith("randn(") or "complex" in spec:
        return spec
    close = spec.index(")")
    return f"rand{spec[5:close + 1]} {affine}{spec[close + 1:]}"


class _Kept:
    """The default sets the object runs on, with their layouts; the warnings
    for those it refuses, and what each refusal said."""

    def __init__(self, target, args, seed: int, seconds: float):
        self.target, self.args, self.seed, self.seconds = target, args, seed, seconds
        self.specs, self.layouts, self.notes, self.refusals = [], [], [], []
        self.stopped = False

    def first_of(self, name: str, alternatives: list, quiet: bool = False,
                 bug: str | None = None) -> list | None:
        """Keep the first of ``alternatives`` (lists of specs) the object runs
        on, and return it; None, with a warning unless ``quiet``, when it runs
        on none (``bug``: what it cannot show then, by default the candidate
        ``name``'s). A call that times out or dies keeps its set and stops here
        (the run then says what happens)."""
        target = self.target
        bug = bug or next(b for n, _, b in CANDIDATES if n == name)
        for shapes in alternatives:
            shown = "; ".join(shapes)
            spec = _with_args(shown, self.args)
            found = probe(target, spec, self.seed, len(self.specs), self.seconds)
            if found.kind == "raised":
                self.refusals.append(f"{shown}: {_raised(found.text)}")
                continue
            if found.kind == "ran" and not found.finite:
                shapes, spec, found = self._in_domain(name, shapes, spec, found)
            self.specs.append(spec)
            self.layouts.append(found.layout)
            if found.kind in ("timeout", "died"):
                self.notes.append(f"on {name} inputs ({shown}) {target.name} {found.text} "
                                  "before the run; the other default inputs were not tried; "
                                  "give --inputs to choose")
                self.layouts[-1] = None
                self.stopped = True
            return shapes
        if not quiet:
            self.notes.append(f"the default inputs cannot show {bug}: {target.name} raised "
                              f"{_raised(found.text)} on {name} inputs ({shown}); give "
                              "inputs it takes with --inputs")
        return None

    def _in_domain(self, name: str, shapes: list, spec: str, found):
        """``(shapes, spec, found)`` of the first of ``DOMAINS`` where ``shapes``
        (on which the object ran with NaN or inf outputs) gives finite outputs,
        said in a warning; the given ones where none does (the run then says
        that no derivative can be checked where the function is not finite)."""
        for affine in DOMAINS:
            moved = [_moved(s, affine) for s in shapes]
            if moved == shapes:
                break
            again = probe(self.target, _with_args("; ".join(moved), self.args), self.seed,
                          len(self.specs), self.seconds)
            if again.kind == "ran" and again.finite:
                self.notes.append(
                    f"{self.target.name} is NaN or inf on {name} inputs ({'; '.join(shapes)}); "
                    f"they are {'; '.join(moved)} instead, where it is finite; give --inputs "
                    "to choose")
                return moved, _with_args("; ".join(moved), self.args), again
        return shapes, spec, found


def _raised(text: str) -> str:
    """A probe's exception as a warning names it: its type, and the start of its
    message (what shape it wanted: "running_mean should contain 4 elements not 5")."""
    kind, _, message = text.splitlines()[0].partition(":") if text else ("an error", "", "")
    message = message.strip()
    return f"{kind} ({message[:160]})" if message else kind


def _one_row(parsed) -> bool:
    """Whether no differentiated input has two dimensions or more."""
    from adcheck.runner.spec import ndim
    return all(ndim(s) < 2 for s in parsed if s.requires_grad)


def input_sets(target, given: tuple, args: str | None, seed: int,
               timeout: float | None = None) -> tuple[list, list, list]:
    """``(specs, layouts, warnings)``: the input sets of ``target`` (``given``:
    the ``--inputs``; none: the defaults), each with ``--args``, parsed and
    checked against the target's engine; a layout is ``None`` where the object
    did not run on the set here (the run then says why). Each forward call
    here runs at most ``PROBE_SECONDS`` (or ``timeout``, when shorter)."""
    from adcheck.runner.spec import EXAMPLE_CALL, example_keywords
    seconds = min(PROBE_SECONDS, timeout or PROBE_SECONDS)
    if not given and _has_example(target):
        given = (EXAMPLE_CALL,)
    if not given:
        specs, layouts, notes = _defaults(target, args, seed, seconds)
    else:
        keyword_names(args)
        specs, layouts, notes = [_with_args(text, args) for text in given], [], []
        slow = False
        for index, spec in enumerate(specs):
            example = example_keywords(spec) is not None
            parsed = None if example else _parse(spec, target)
            found = None if slow else probe(target, spec, seed, index, seconds)
            slow = slow or (found is not None and found.kind in ("timeout", "died"))
            layouts.append(None if found is None else found.layout)
            if example:
                _example_made(target)
                notes.append(f"checking {target.name} at example_inputs() of "
                             f"{target.spec.split(':')[0]} (--inputs checks it at others)")
            elif _one_row(parsed) and not target.kind.endswith("Module"):
                notes.append(f"--inputs {spec!r}: no input has several rows, so a row-wise "
                             "bug (a reduction over the wrong axis) cannot show; add a set "
                             "such as randn(3, 4)")
        return specs, layouts, notes
    for spec in specs:
        _parse(spec, target)
    return specs, layouts, notes

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
           "alpha": "1.0", "beta": "1.0", "threshold": "20.0", "training": "False"}

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
    if target.arity is None:
        raise InputError(f"cannot tell how many inputs {target.spec} takes; give them "
                         f"with --inputs, e.g. --inputs \"{EXAMPLE}\"")
    count = _count(target, keywords)
    kept = _Kept(target, args, seed, seconds)
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
                + f"); {_what_to_give(target, keywords)}")
        kept.specs, kept.layouts = [spec], [found.layout]
    return kept.specs, kept.layouts, kept.notes


def _option_like(target, keywords: dict) -> list:
    """The parameters of ``target`` named as options usually are (``OPTIONS``)
    that ``--args`` does not give."""
    return [p for p in target.params if p in OPTIONS and p not in keywords]


def _as_options(options: list) -> str:
    """How to give ``options`` as options, in words."""
    one = len(options) == 1
    example = ", ".join(f"{p}={OPTIONS[p]}" for p in options)
    return (f"if {'it is an option' if one else 'they are options'}, give "
            f"{'it' if one else 'them'} with --args, e.g. --args '{example}'")


def _what_to_give(target, keywords: dict) -> str:
    """What to pass when no default set runs: the parameters whose names are
    usually options (``OPTIONS``) with ``--args``, or inputs with ``--inputs``."""
    options = _option_like(target, keywords)
    if options:
        return (f"{target.name} takes {', '.join(options)}, which the default sets give as "
                f"tensors: {_as_options(options)}; else give inputs it takes with --inputs, "
                f"e.g. --inputs \"{EXAMPLE}\"")
    return f"give inputs it takes with --inputs, e.g. --inputs \"{EXAMPLE}\""


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


def _count(target, keywords: dict) -> int:
    """How many tensors the default sets give ``target``: its positional
    parameters not named in ``keywords`` (``--args``), at least one."""
    named = [p for p in target.params if p not in keywords]
    return max(len(named) if target.params else (target.arity or 1), 1)


def _complex(spec: str) -> str:
    return f"{spec} complex128" if spec.startswith("randn") else spec


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
    seconds = min(PROBE_SECONDS, timeout or PROBE_SECONDS)
    if not given:
        specs, layouts, notes = _defaults(target, args, seed, seconds)
    else:
        keyword_names(args)
        specs, layouts, notes = [_with_args(text, args) for text in given], [], []
        slow = False
        for index, spec in enumerate(specs):
            parsed = _parse(spec, target)
            found = None if slow else probe(target, spec, seed, index, seconds)
            slow = slow or (found is not None and found.kind in ("timeout", "died"))
            layouts.append(None if found is None else found.layout)
            if _one_row(parsed) and not target.kind.endswith("Module"):
                notes.append(f"--inputs {spec!r}: no input has several rows, so a row-wise "
                             "bug (a reduction over the wrong axis) cannot show; add a set "
                             "such as randn(3, 4)")
        return specs, layouts, notes
    for spec in specs:
        _parse(spec, target)
    return specs, layouts, notes

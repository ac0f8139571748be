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

Each is kept when the object runs on it (one call before the run, in a
process of its own: ``cli.commands.probe``); for each one it cannot run on,
a warning says which bug the run cannot show; when the call times out or
its process dies, that set alone is checked (the run then says why). When none runs, ``randn(3)`` per input is checked (the run
then reports why it fails), with that warning too. Every set's layout (the
tensors' shapes, ``runner.layouts``) goes into the report, so that a
failure's worst entries are shown in the tensors' own indices.
"""
from __future__ import annotations

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
    count = max(len([p for p in target.params if p not in keywords])
                if target.params else target.arity, 1)
    specs, layouts, notes = [], [], []
    for name, make, bug in CANDIDATES:
        shapes = make(count)
        if shapes is None:
            continue
        spec = _with_args("; ".join(shapes), args)
        found = probe(target, spec, seed, len(specs), seconds)
        if found.kind in ("timeout", "died"):   # checked as it is: the run says what happens
            notes.append(f"on {name} inputs ({'; '.join(shapes)}) {target.name} "
                         f"{found.text} before the run; the other default inputs were not "
                         "tried; give --inputs to choose")
            specs.append(spec)
            layouts.append(None)
            break
        if found.kind == "raised":
            notes.append(f"the default inputs cannot show {bug}: {target.name} raised "
                         f"{_raised(found.text)} on {name} inputs ({'; '.join(shapes)}); "
                         "give inputs it takes with --inputs")
            continue
        specs.append(spec)
        layouts.append(found.layout)
    if not specs:
        spec = _with_args("; ".join(["randn(3)"] * count), args)
        specs, layouts = [spec], [None]
    return specs, layouts, notes


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

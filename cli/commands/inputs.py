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

Each is kept when the object runs on it (one forward call here, in this
process); for each one it cannot run on, a warning says which bug the run
cannot show. When none runs, ``randn(3)`` per input is checked (the run
then reports why it fails), with that warning too. Every set's layout (the
tensors' shapes, ``runner.layouts``) goes into the report, so that a
failure's worst entries are shown in the tensors' own indices.
"""
from __future__ import annotations

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


#: how long one forward call here may take, in seconds (at most --timeout)
PROBE_SECONDS = 5.0


def _probe(target, spec: str, seed: int, index: int, seconds: float):
    """The layout of ``target`` on ``spec`` (it runs once, for at most
    ``seconds``), or the exception it raised (``TaskTimeout``: it ran longer)."""
    import importlib

    from adcheck.runner.layouts import layout_of
    from adcheck.runner.pool import TaskTimeout, deadline
    from adcheck.runner.reproduction import subject_of
    if target.engine in ("torch", "jax"):   # imported whole, before any time limit
        importlib.import_module(target.engine)
    try:
        with deadline(seconds):
            call, _ = subject_of(target, spec, seed, index).call()
            return layout_of(call)
    except (Exception, SystemExit, TaskTimeout) as exc:  # noqa: BLE001 - the user's code
        return exc


def _slow(found) -> bool:
    """Whether a probe ran out of time (``runner.pool.TaskTimeout``)."""
    from adcheck.runner.pool import TaskTimeout
    return isinstance(found, TaskTimeout)


def _with_args(spec: str, args: str | None) -> str:
    return spec if not args else f"{spec.rstrip().rstrip(';')}; {args}"


def _parse(text: str, engine: str):
    from adcheck.runner.spec import SpecError, parse_call, unsupported
    try:
        parsed, _ = parse_call(text)
    except SpecError as exc:
        raise InputError(f"--inputs: {exc}") from None
    if not any(s.requires_grad for s in parsed):
        raise InputError(f"--inputs {text!r}: every input is nograd or an integer, so there "
                         "is nothing to differentiate; give one floating point input that "
                         "requires grad")
    problem = unsupported(parsed, engine)
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
        found = _probe(target, spec, seed, len(specs), seconds)
        if _slow(found):   # one set only: the run's --timeout applies to it
            notes.append(f"the default inputs were not tried: {target.name} {found} on "
                         f"{name} inputs ({'; '.join(shapes)}), so only they are checked; "
                         "give --inputs to choose")
            return [spec], [None], notes
        if isinstance(found, BaseException):
            notes.append(f"the default inputs cannot show {bug}: {target.name} raised "
                         f"{type(found).__name__} on {name} inputs ({'; '.join(shapes)}); "
                         "give inputs it takes with --inputs")
            continue
        specs.append(spec)
        layouts.append(found)
    if not specs:
        spec = _with_args("; ".join(["randn(3)"] * count), args)
        specs, layouts = [spec], [None]
    return specs, layouts, notes


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
            parsed = _parse(spec, target.engine)
            found = None if slow else _probe(target, spec, seed, index, seconds)
            slow = slow or _slow(found)
            layouts.append(None if found is None or isinstance(found, BaseException) else found)
            if _one_row(parsed) and not target.kind.endswith("Module"):
                notes.append(f"--inputs {spec!r}: no input has several rows, so a row-wise "
                             "bug (a reduction over the wrong axis) cannot show; add a set "
                             "such as randn(3, 4)")
        return specs, layouts, notes
    for spec in specs:
        _parse(spec, target.engine)
    return specs, layouts, notes

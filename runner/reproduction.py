"""Rebuilding a reported check in a few lines of Python: the public way.

Every check adcheck reports can be run again, alone, exactly as the run ran
it: the same function, the same tensors, the same ``gradcheck.check``
keywords, the same seed. ``rebuild`` does it for a registry op (``adcheck
ops``, ``adcheck op``, the pytest marker), ``rebuild_target`` for a user's
object (``adcheck check MODULE:OBJECT``); both return a ``Rebuilt``, whose
``check()`` is the ``gradcheck.Report``::

    from adcheck import runner
    rebuilt = runner.rebuild("my_sin", "float64", 0, "reverse", plugins=["my_opinfos.py"])
    report = rebuilt.check()                    # gradcheck.check(*rebuilt)
    func, inputs, keywords = rebuilt           # to check it your own way
    print(report.message())

``seed`` is the run's base seed (``--seed``, 0 by default): each check
derives its own from it as the run did; the run's other options
(``memory_budget``, ``jacobian``, ``timeout``, ``explore``, ``batching``) are
keywords of both, and the check's ``Options`` are made as the run made them
(``runner.checks.check_options``). ``reproducer(result, record)`` is
the snippet every reproducer adcheck prints is made of (the terminal's
``adcheck op`` panel, the HTML report, the pytest plugin's failure text).
A check that does not apply to the sample, an unknown op, dtype, sample,
check or target raise ``runner.errors.RunnerError`` saying what to do.
"""
from __future__ import annotations

from typing import NamedTuple

from adcheck.runner.errors import RunnerError
from adcheck.runner.record import DEFAULT_TIMEOUT, RunRecord


class Rebuilt(NamedTuple):
    """One check as the run gave it to ``gradcheck.check(func, inputs, **keywords)``."""

    func: object
    inputs: tuple
    keywords: dict

    def check(self):
        """Run the check again: the ``gradcheck.Report``."""
        from adcheck import gradcheck
        return gradcheck.check(self.func, self.inputs, **self.keywords)

    @property
    def options(self):
        """The check's ``gradcheck`` ``Options``."""
        from adcheck.gradcheck.core.options import Options
        return Options.from_keywords(**self.keywords)


def _registry(registry):
    from adcheck.runner.registry import named
    if registry is None or registry == "opinfo":
        return named("opinfo")
    if isinstance(registry, str):
        return named(registry)
    return registry


def _rebuilt(subject, check: str, engine: str, seed: int, precise: bool, run: dict) -> Rebuilt:
    """The check as the run made it; ``run``: the run's other options (``rebuild``'s)."""
    from adcheck.runner.checks import Policy, check_named, check_options
    timeout = run.pop("timeout")
    try:
        check_named(check)
        policy = Policy(precise, engine, seed, **run)
    except ValueError as exc:
        raise RunnerError(str(exc).removeprefix("check: ")) from None
    call, problem = subject.call()
    reason = problem or subject.skip_reason(check, call)
    if reason is not None:
        raise RunnerError(f"{subject.name} {subject.dtype_name}[{subject.index}] {check} does "
                          f"not run a check: {reason}")
    chosen = check_options(subject, check, policy, call)
    if timeout:     # the run's checks plan for the time its timeout leaves them
        chosen = chosen.derive(time_limit=float(timeout))
    return Rebuilt(call.func, tuple(call.inputs), chosen.keywords())


def rebuild(op: str, dtype: str, sample: int, check: str = "reverse", *,
            engine: str = "refengine", seed: int = 0, precise: bool = True,
            plugins=(), registry=None, memory_budget: int | None = None,
            jacobian: str = "auto", timeout: float | None = DEFAULT_TIMEOUT,
            explore: float | None = None, batching: bool = True,
            same_as: bool = False) -> Rebuilt:
    """Check ``check`` of sample ``sample`` of registry op ``op`` in ``dtype``
    ("float64"), as ``adcheck ops --engine ENGINE --seed SEED`` ran it
    (``precise=False``: ``--torch-tolerances``); ``plugins``: the plugin files
    the op comes from (loaded first); ``registry``: the registry (default
    adcheck's own, ``"opinfo"``); ``memory_budget`` (bytes), ``jacobian``,
    ``timeout`` (seconds, or ``None``), ``explore`` (seconds, 0 for the default
    budget, or ``None``) and ``batching``: the run's ``--memory-budget``,
    ``--jacobian``, ``--timeout``, ``--explore``/``--explore-budget``, batching;
    ``same_as``: an in-place variant compared with its op's derivatives, as a
    sweep that checks both compares them (``gradcheck.core.sameas``)."""
    from adcheck.runner.checks import OpSubject
    from adcheck.runner.registry import dtype_name
    from adcheck.runner.selection import _check_index, get_op
    source = _registry(registry)
    source.load_plugins(tuple(str(p) for p in plugins))
    info = get_op(source, op)
    own = [dtype_name(d) for d in info.dtypes]
    if dtype not in own:
        raise RunnerError(f"{op} has no dtype {dtype!r}; it has {', '.join(own)}")
    _check_index(source, info, dtype, sample)
    dt = source.dtype(dtype)
    (made,) = list(source.samples(info, dt, sample))
    base = getattr(info, "variant_of", None)
    if same_as and base is None:
        raise RunnerError(f"{op} is not an in-place variant of another op: leave out same_as")
    planned = frozenset({(base, dtype)}) if same_as else frozenset()
    return _rebuilt(OpSubject(source, info, made, dt, engine, planned), check, engine, seed,
                    precise,
                    dict(memory_budget=memory_budget, jacobian=jacobian, timeout=timeout,
                         explore=explore, batching=batching))


def rebuild_target(target: str, inputs: str, check: str = "reverse", *, index: int = 0,
                   engine: str = "refengine", seed: int = 0, precise: bool = True,
                   memory_budget: int | None = None, jacobian: str = "auto",
                   timeout: float | None = DEFAULT_TIMEOUT, explore: float | None = None,
                   batching: bool = True) -> Rebuilt:
    """Check ``check`` of ``adcheck check TARGET --inputs INPUTS`` (``index``: the
    position of that ``--inputs`` among those given; ``engine``: ``--engine``; the
    other keywords as ``rebuild``'s)."""
    from adcheck.runner.subjects import target_subject
    subject = target_subject(target, inputs, engine, seed, index)
    return _rebuilt(subject, check, subject.target.engine, seed, precise,
                    dict(memory_budget=memory_budget, jacobian=jacobian, timeout=timeout,
                         explore=explore, batching=batching))


#: the keyword values a reproducer leaves out (rebuild's defaults)
_DEFAULTS = {"engine": "refengine", "seed": 0, "precise": True, "plugins": [], "index": 0,
             "registry": "opinfo", "memory_budget": None, "jacobian": "auto",
             "timeout": DEFAULT_TIMEOUT, "explore": None, "batching": True, "same_as": False}
#: the fields of a ``RunRecord`` that are keywords of ``rebuild`` and ``rebuild_target``
RUN_KEYWORDS = ("engine", "seed", "precise", "memory_budget", "jacobian", "timeout", "explore",
                "batching")


def _call(function: str, values: list, options: dict) -> str:
    """``function(...)`` with the keywords that differ from the defaults, one per
    line when it would be long (a terminal must not fold a path in two)."""
    from adcheck.gradcheck.core.options import DEFAULT_MEMORY_BUDGET
    if options.get("memory_budget") == DEFAULT_MEMORY_BUDGET:   # (what None resolves to)
        options = {**options, "memory_budget": None}
    shown = [", ".join(repr(v) for v in values)]
    shown += [f"{k}={v!r}" for k, v in options.items() if v != _DEFAULTS.get(k)]
    one_line = f"runner.{function}({', '.join(shown)})"
    if len(one_line) <= 80:
        return one_line
    return f"runner.{function}(\n" + "".join(f"    {part},\n" for part in shown) + ")"


def reproducer(result, record) -> str | None:
    """Python that reruns the check of ``result`` (a failed ``CheckResult``) as the
    run of ``record`` did (a ``RunRecord``, or the ``settings`` of a JSON report);
    ``None`` for a task-level error, which no check reproduces."""
    if result.sample is None or result.check == "setup":
        return None
    record = RunRecord.from_dict(record)
    common = {name: getattr(record, name) for name in RUN_KEYWORDS}
    if record.registry == "torch":   # PyTorch's op_db: its adapter's own snippet
        from adcheck.opinfo import torchdb
        return torchdb.get(result.op).reproducer(
            result.sample, result.dtype, result.check, precise=bool(record.precise),
            seed=result.seed)
    if record.kind:      # a user's object: adcheck check MODULE:OBJECT
        specs, index = record.inputs or (), result.sample
        call = _call("rebuild_target", [record.target, specs[index], result.check],
                     {"index": index, **common})
    else:
        # (a variant compared with its op in the sweep is rebuilt so: its failures say so)
        twin = any(f.get("against") == "same_as" for f in result.failures or ())
        call = _call("rebuild", [result.op, result.dtype, result.sample, result.check],
                     {**common, "plugins": list(record.plugins), "registry": record.registry,
                      "same_as": twin})
    return f"from adcheck import runner\n\nreport = {call}.check()\nprint(report.message())\n"

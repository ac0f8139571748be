"""How every check of a run is run (``Policy``), and the ``Options`` of one check.

A run's options are validated once, in the process that plans it, when its
``Policy`` is made (``runner.tasks.build_settings``); each check's
``Options`` are the policy's, with what the check means for its subject over
them (``check_options``): the one way the runner and ``runner.rebuild`` make
them.
"""
from __future__ import annotations

from dataclasses import dataclass

from adcheck.gradcheck.core.modes import check_named
from adcheck.gradcheck.core.options import Options


@dataclass(frozen=True)
class Policy:
    """How every check of a run is run: ``precise`` or the OpInfo's torch-style
    tolerances, the engine, the base seed of the random probes, the
    memory budget of each check in bytes (``None``: gradcheck's default),
    whether to explore other inputs, how Jacobians are built and whether in
    batches. Validated when made (``ValueError``), so that a bad value stops
    the run in the process that plans it, before any worker starts."""

    precise: bool = True
    engine: str = "refengine"
    seed: int = 0
    memory_budget: int | None = None
    #: ``--explore``: the explore mode's budget in seconds (0: its default),
    #: ``"quick"``: the quick pass (the default of ``check`` and ``ops``), or
    #: ``None``: off; it explores the first sample or input set only
    explore: float | str | None = None
    #: ``--jacobian``: gradcheck's ``jacobian=`` for every check (auto, dense, ...)
    jacobian: str = "auto"
    #: gradcheck's ``batching=`` for every check: Jacobians built in batches
    batching: bool = True

    def __post_init__(self):
        self.options()

    def options(self) -> Options:
        """The ``Options`` every check of the run starts from: each check's own
        keywords, seed and name go over them (``check_options``). Made once per
        policy (both are frozen; making them was a third of making a check's options)."""
        made = _MADE.get(self)
        if made is None:
            given = {"jacobian": self.jacobian, "batching": self.batching}
            if self.memory_budget is not None:
                given["memory_budget"] = self.memory_budget
            if self.explore and self.explore != "quick":
                given["explore_budget"] = self.explore
            made = _MADE[self] = Options(**given)
        return made


#: what the checks of a user's object (``adcheck check``, a harvested Function) do
#: beyond a registry op's, as ``gradcheck.check`` does: each input alone requiring
#: grad (``verdict.alone``; refengine's own ops' rules are one per input)
USERS = {"check_inputs_alone": True}

#: ``Policy.options()`` of each policy seen in this process
_MADE: dict = {}


def options(check: str, policy: Policy, tolerance=None, forward: bool = True,
            reference=None) -> dict:
    """The ``gradcheck.check`` keywords that say what a check name means (the
    run's own options are ``policy.options()``)."""
    tol = {} if tolerance is None else {"atol": tolerance.atol, "rtol": tolerance.rtol}
    return check_named(check).keywords(precise=policy.precise, has_forward=forward,
                                       reference=reference, **tol)


def check_options(subject, check: str, policy: Policy, call) -> Options:
    """The ``Options`` of one check of ``subject``, as the run gives it to
    gradcheck and ``runner.rebuild`` again: the run's (``policy.options()``),
    the check's own keywords over them (``subject.keywords``), exploring for the
    first sample when the policy explores, the check's seed and the subject's name."""
    keywords = {**subject.keywords(check, policy, call),
                **_explore_keywords(subject, policy, call), "name": subject.name}
    seed = subject.seed(policy.seed, check)
    # an mpmath reference is a new function for every sample: the options are derived
    # once with a stand-in in its place (no check of ``Options`` reads more of it
    # than that it is given) and copied with the sample's own
    functions = {k: keywords[k] for k in _FUNCTIONS if callable(keywords.get(k))}
    stood = {**keywords, **dict.fromkeys(functions, _stand_in)}
    key = _derived_key(policy, stood)
    if key is None:
        return policy.options().derive(**keywords, seed=seed)
    base = _DERIVED.get(key)
    if base is None:
        if len(_DERIVED) >= DERIVED_SIZE:
            _DERIVED.clear()
        base = _DERIVED[key] = policy.options().derive(**stood, seed=0)
    return _seeded(base, seed, functions)


#: ``check_options`` without the seed, by policy and plain keywords: the checks of a
#: sweep differ in their seed alone from sample to sample, and deriving (a frozen
#: dataclass of 35 fields, validated) was 1.5 % of a registry sweep's time
_DERIVED: dict = {}
DERIVED_SIZE = 512
_PLAIN = (bool, int, float, str, type(None))
#: the options made with no keyword while no caller gives defaults
_DEFAULT: dict = {}
#: the keywords that take a function (an mpmath reference), held by ``_stand_in`` in
#: the options kept in ``_DERIVED`` (deriving them afresh for every sample's
#: reference check and first sample was about 1 % of a registry sweep)
_FUNCTIONS = ("reference", "explore_reference", "same_as")


def _stand_in(*args):
    """What a kept ``Options`` holds in place of a sample's mpmath reference."""
    raise AssertionError("a stand-in for a sample's mpmath reference was called")


def _derived_key(policy: Policy, keywords: dict) -> tuple | None:
    """The key of ``keywords`` in ``_DERIVED``; ``None`` (derive afresh) for a value
    of no plain type (an mpmath reference) or while a caller gives defaults
    (``gradcheck.core.options.caller_defaults``: ``--timeout``'s time limit, asked
    anew per check), which the options made with no keyword then show."""
    if any(type(v) not in _PLAIN and v is not _stand_in for v in keywords.values()):
        return None
    plain = Options.from_keywords()
    if plain is not _DEFAULT.get("plain"):
        if plain.time_limit is not None or plain != Options():
            return None
        _DEFAULT["plain"] = plain   # (no caller's defaults: the same object until then)
    return (policy, *((k, type(v), v) for k, v in keywords.items()))


def _seeded(base: Options, seed: int, functions: dict | None = None) -> Options:
    """``base`` with another ``seed`` (and ``functions`` in place of ``_stand_in``):
    the fields copied, not validated again (a seed is an integer ``derive_seed``
    made, which no check of ``Options`` reads)."""
    made = object.__new__(Options)
    made.__dict__.update(base.__dict__)
    made.__dict__["seed"] = seed
    if functions:
        made.__dict__.update(functions)
    return made


def _explore_keywords(subject, policy: Policy, call=None) -> dict:
    """``explore`` for the first sample (or input set) of a subject when the
    policy explores (its budget is among the run's options), else nothing; with
    the op's mpmath reference, if any, to judge a failing explored point again
    (``gradcheck.explore.arbiter``)."""
    if policy.explore is None or subject.index != 0:
        return {}
    # with torch's tolerances too (--torch-tolerances): as check(precise=False), the
    # given inputs keep them, and every explored point is judged precisely
    found = {"explore": "quick" if policy.explore == "quick" else True}
    reference = getattr(call, "reference", None)
    if reference is not None:
        found["explore_reference"] = reference
    return found

"""The vocabulary of checks: one entry per check, read by everything that names one.

A *check* compares a Jacobian obtained by automatic differentiation with an
expected one. Each entry of ``CHECKS`` says what it builds (``ad``: the
reverse-mode or forward-mode Jacobian, or fast mode's projections of both),
what it compares against (``against``: finite differences or the op's mpmath
reference), at which order (1: the function; 2: its first derivative, as
``gradgradcheck`` does), which capability an operator must declare for it to
apply (``capability``), and under which name a declared known failure covers
it (``known_as``). The CLI's ``--check`` names, the registry's capability
flags and known failures, the reports and the tests all read this table.

``SOURCES`` names how each Jacobian was obtained (the ``mode`` label every
``Jacobian`` and ``Result`` carries). ``FAILURES`` says, for each thing a
``Result`` checks, what its failure means; ``failure_text`` words it for a
first- or second-order check (a second-order failure is named as such:
"reverse-over-reverse (second-order) Jacobian differs from numerical").

Example::

    from adcheck.gradcheck.core.modes import CHECKS
    CHECKS["gradgrad"].keywords(precise=True)   # {'order': 2, 'precise': True}
    CHECKS["gradgrad"].title                    # 'reverse over reverse'
"""
from __future__ import annotations

from dataclasses import dataclass

#: how a Jacobian was obtained: its ``mode`` label, and the words reports use
SOURCES = {
    "numerical": "finite differences",
    "reference": "the mpmath reference",
    "same_as": "the autograd derivatives of the function given as same_as",
    "reverse": "reverse-mode AD (one vjp per output coordinate)",
    "forward": "forward-mode AD (one jvp per input coordinate)",
    "fast-reverse": "fast mode's reverse projections v^T J u",
    "fast-forward": "fast mode's forward projections v^T J u",
}


#: what a failing ``Result`` of each ``check`` means. ``{ad}`` is the AD that ran
#: ("reverse-mode", or "reverse-over-reverse (second-order)"), ``{way}`` its
#: direction ("reverse", or "reverse-over-reverse (second-order)"), ``{against}``
#: the expected side's label, ``{source}`` the words for the mode (``SOURCES``)
FAILURES = {
    "reverse": "{ad} Jacobian differs from {against}",
    "forward": "{ad} Jacobian differs from {against}",
    "fast-reverse": "fast-mode {way} check (v^T J u) differs from {against}",
    "fast-forward": "fast-mode {way} check (v^T J u) differs from {against}",
    "adjoint": "forward and reverse mode disagree (<v, J_forward u> against "
               "<J_reverse^T v, u>, no finite differences involved)",
    "reentrant": "{ad} AD is not reentrant (the same input and grad_output twice "
                 "give different values)",
    "scaling": "{ad} AD is not linear in its grad_output/tangent",
    "undefined-grad": "backward mishandles undefined output gradients",
    "grad-dtype": "gradient has the wrong dtype",
    "batched-grad": "batched backward (is_grads_batched=True) differs from one vjp per entry",
    "batched-forward-grad": "batched forward AD (vmap) differs from one jvp per entry",
    "detached": "an output that does not require grad depends on an input",
    "vmap-rule": "its own vmap rule differs from one call per example",
    "alone": "an input's gradient differs when it alone requires grad",
    "input-mutation": "an input that requires grad was modified in place",
    "grad-output-mutation": "the backward modified its grad_output in place",
    "deterministic": "the function is nondeterministic (two evaluations at the same "
                     "inputs differ)",
    "nonfinite-output": "the function's output is NaN or inf at the given inputs",
    "nonfinite": "the Jacobian from {source} has NaN or inf entries",
    "double-backward": "{ad} Jacobian not built",
    "discontinuous": "the function is discontinuous or not differentiable where checked, "
                     "so finite differences are no evidence there",
}


#: how a failure names an expected side whose label alone would not say what it is
AGAINST = {"same_as": "the autograd Jacobian of same_as (the function it must equal)"}


def failure_text(check: str, mode: str, against: str, order: int = 1) -> str:
    """What a failing ``Result`` says it found, e.g. ``reverse-mode Jacobian
    differs from numerical``; at order 2 the AD is named "reverse-over-reverse
    (second-order)", and a check that names no AD ends "in the second-order check"."""
    template = FAILURES.get(check, check)
    way = mode.removeprefix("fast-")
    if order == 2:
        ad, way = f"{mode}-over-reverse (second-order)", f"{way}-over-reverse (second-order)"
    else:
        ad = f"{mode}-mode"
    against = AGAINST.get(against, against)
    text = template.format(ad=ad, way=way, against=against, source=SOURCES.get(mode, mode))
    if order == 2 and "{ad}" not in template and "{way}" not in template:
        text += " in the second-order check"
    return text


@dataclass(frozen=True)
class Check:
    """One check: its name and what it means (see the module docstring)."""

    name: str
    summary: str
    short: str
    ad: str             # "reverse", "forward" or "fast"
    against: str        # "numerical" or "reference"
    order: int          # 1 or 2
    capability: str     # the operator capability it needs
    known_as: str       # the known-failure name that covers it
    default: bool       # part of the default sweep

    @property
    def title(self) -> str:
        """How reports name it: ``reverse over reverse`` for a second-order check."""
        if self.order == 2:
            return f"{self.ad} over reverse"
        return self.ad if self.ad != "fast" else "fast mode"

    def keywords(self, *, precise: bool = True, atol: float | None = None,
                 rtol: float | None = None, has_forward: bool = True,
                 reference=None) -> dict:
        """The ``gradcheck.check`` keywords that run this check.

        ``precise`` chooses error-estimated tolerances, else ``atol``/``rtol``
        (left to ``check``'s defaults when ``None``); fast mode always uses
        ``atol``/``rtol``. ``has_forward``: the function has a forward-mode
        formula (fast mode and the reference check then check it too).
        ``reference``: the mpmath reference, for the reference check.
        """
        fixed = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
        tolerance = {"precise": True} if precise else fixed
        if self.ad == "fast":
            return dict(fixed, fast_mode=True, check_forward_ad=has_forward)
        keywords = dict(tolerance)
        if self.order == 2:
            keywords["order"] = 2
        if self.against == "reference":
            keywords.update(reference=reference, check_forward_ad=has_forward)
        elif self.ad == "forward":
            keywords.update(check_forward_ad=True, check_backward_ad=False)
        return keywords


CHECKS = {c.name: c for c in (
    Check("reverse", "vjp against finite differences", "rev", "reverse", "numerical", 1,
          "reverse", "reverse", True),
    Check("forward", "jvp against finite differences", "fwd", "forward", "numerical", 1,
          "forward", "forward", True),
    Check("fast", "one random projection each way (fast mode)", "fast", "fast", "numerical",
          1, "reverse", "reverse", False),
    Check("gradgrad", "reverse over reverse: the vjp's own vjp", "gg", "reverse",
          "numerical", 2, "gradgrad", "gradgrad", True),
    Check("fwgrad_bwgrad", "forward over reverse: the vjp's jvp", "fwbw", "forward",
          "numerical", 2, "fwgrad_bwgrad", "fwgrad_bwgrad", False),
    Check("reference", "against the op's mpmath reference instead of finite differences",
          "ref", "reverse", "reference", 1, "reverse", "reference", True),
)}

#: every check name, in the table's order
CHECK_NAMES = tuple(CHECKS)
#: the checks a sweep runs when none are named
DEFAULT_CHECKS = tuple(name for name, c in CHECKS.items() if c.default)
#: the capabilities an operator declares (each the name of the check that defines it)
CAPABILITIES = tuple(dict.fromkeys(c.capability for c in CHECKS.values()))
#: the names a known failure may cover
KNOWN_AS = tuple(dict.fromkeys(c.known_as for c in CHECKS.values()))


def check_named(name: str) -> Check:
    """The ``Check`` called ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in CHECKS:
        raise ValueError(f"unknown check {name!r}; choose from {', '.join(CHECK_NAMES)}")
    return CHECKS[name]

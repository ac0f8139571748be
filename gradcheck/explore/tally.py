"""What the explore search did, for ``Report.counts["explore"]`` and its message."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Tally:
    """What the search did, for ``Report.counts["explore"]``."""

    tried: int = 0
    passed: int = 0
    outside_domain: int = 0
    not_differentiable: int = 0
    kinks: int = 0
    unresolved: int = 0
    #: failing points cleared by the op's mpmath reference (``arbiter``): the formula
    #: agrees with it, finite differences do not (the forward loses precision there)
    forward_cancels: int = 0
    #: failing points of a second-order check whose failing rows of the first derivative
    #: are below the forward's rounding, where its second differences do not refute the
    #: formula (``forwardwitness``)
    below_rounding: int = 0
    #: failing points judged against the mpmath reference, and their seconds
    arbitrated: int = 0
    arbiter_seconds: float = 0.0
    timeouts: int = 0
    #: points where the process died in an earlier run (``watch``): failures
    crashes: int = 0
    seconds: float = 0.0
    budget: float = 0.0
    findings: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        # (the fields are numbers; ``asdict`` would deep-copy each finding's arrays and
        # results only for them to be replaced: 0.4 ms of every explored check)
        out = {f.name: getattr(self, f.name) for f in _TALLY_FIELDS}
        out["findings"] = [f.to_dict() for f in self.findings]
        return out

    def text(self) -> str:
        # the seconds only where a budget cut the search: the quick pass's text is the
        # same in every run (a verdict's message is compared across runs and --jobs)
        spent = f" in {self.seconds:.1f} s" if self.seconds >= self.budget > 0 else ""
        return (f"explored {self.tried} points{spent}: "
                f"{len(self.findings)} failing, {self.outside_domain} outside the domain, "
                f"{self.not_differentiable} not differentiable, {self.kinks} judged one-sided "
                f"(kinks, ties: the formula lies between the one-sided derivatives), "
                f"{self.unresolved} unresolved (the difference quotients depend on the "
                f"step there), {self.timeouts} timed out"
                + (f", {self.forward_cancels} where the forward loses precision (the mpmath "
                   f"reference agrees with the formula, finite differences do not)"
                   if self.forward_cancels else "")
                + (f", {self.below_rounding} where the first derivative is below the "
                   f"forward's rounding (the forward's second differences do not refute the "
                   f"second-order formula)" if self.below_rounding else "")
                + (f", {self.arbitrated} judged again by the mpmath reference"
                   if self.arbitrated else "")
                + (f", {self.crashes} crashed the process" if self.crashes else ""))


_TALLY_FIELDS = dataclasses.fields(Tally)

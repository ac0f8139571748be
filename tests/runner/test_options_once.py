"""``runner.policy.check_options`` derives a check's options once per kind of
check and copies them with each sample's seed: the result is the same as
deriving them afresh (``Options.derive``, the independent route), for every
field, and a caller's defaults (``--timeout``'s time limit) still reach it."""
from __future__ import annotations

import time

import mpmath
import numpy as np
import pytest

from adcheck.gradcheck.core.options import Options, caller_defaults
from adcheck.runner.policy import Policy, check_options


class _Subject:
    """What ``check_options`` asks of a subject: keywords, seed, name, index."""

    def __init__(self, keywords: dict, index: int = 1, name: str = "sin"):
        self.own, self.index, self.name = keywords, index, name

    def keywords(self, check, policy, call):
        return dict(self.own)

    def seed(self, base, check):
        return 1000 * base + 7 * self.index + len(check)


def _afresh(subject, check, policy):
    return policy.options().derive(**subject.keywords(check, policy, None),
                                   seed=subject.seed(policy.seed, check), name=subject.name)


@pytest.mark.parametrize("keywords", [{"precise": True}, {"precise": True, "order": 2},
                                      {"atol": 1e-7, "rtol": 1e-4, "check_forward_ad": True,
                                       "check_backward_ad": False}])
@pytest.mark.parametrize("policy", [Policy(), Policy(seed=3, jacobian="dense",
                                                     memory_budget=64 * 2**20)])
def test_the_same_options_as_derived_afresh(keywords, policy):
    made = []
    for index in (1, 2, 3, 1):
        subject = _Subject(keywords, index)
        chosen = check_options(subject, "gradgrad", policy, None)
        assert chosen == _afresh(subject, "gradgrad", policy)
        assert chosen.settings() == _afresh(subject, "gradgrad", policy).settings()
        made.append(chosen)
    # each its own seed, none changed by a later one
    assert [m.seed for m in made] == [_Subject(keywords, i).seed(policy.seed, "gradgrad")
                                      for i in (1, 2, 3, 1)]
    assert made[0] is not made[3] and made[0] == made[3]


def _sine():
    def reference(x):
        return np.vectorize(mpmath.sin, otypes=[object])(x)
    return reference


@pytest.mark.parametrize("keyword", ["reference", "explore_reference"])
def test_each_samples_reference_is_its_own(keyword):
    # every sample brings a new reference function: each check gets its own, and
    # every other field as deriving afresh with it gives (a reference also gives
    # the check its own Jacobian plan)
    made = []
    for index in (1, 2, 1):
        reference = _sine()
        subject = _Subject({"precise": True, keyword: reference, "check_forward_ad": True},
                           index)
        chosen = check_options(subject, "reference", Policy(jacobian="dense"), None)
        assert getattr(chosen, keyword) is reference
        assert chosen == _afresh(subject, "reference", Policy(jacobian="dense"))
        assert chosen.settings() == _afresh(subject, "reference",
                                            Policy(jacobian="dense")).settings()
        made.append(chosen)
    assert getattr(made[0], keyword) is not getattr(made[2], keyword)
    without = check_options(_Subject({"precise": True, "check_forward_ad": True}),
                            "reference", Policy(jacobian="dense"), None)
    assert getattr(without, keyword) is None
    assert (without.jacobian == made[0].jacobian) == (keyword != "reference")


def test_a_reference_with_an_asked_plan_is_refused_as_afresh():
    # validation still sees a reference: a probed plan with one is refused
    subject = _Subject({"precise": True, "reference": _sine(), "jacobian": "probed"})
    with pytest.raises(ValueError, match="mpmath reference"):
        _afresh(subject, "reference", Policy())
    with pytest.raises(ValueError, match="mpmath reference"):
        check_options(subject, "reference", Policy(), None)


def test_a_callers_time_limit_reaches_every_check():
    subject = _Subject({"precise": True})
    check_options(subject, "reverse", Policy(), None)     # kept without a time limit
    with caller_defaults(deadline=time.monotonic() + 50.0):
        inside = check_options(subject, "reverse", Policy(), None)
    after = check_options(subject, "reverse", Policy(), None)
    assert inside.time_limit is not None and 0 < inside.time_limit <= 50.0
    assert after.time_limit is None
    assert after == _afresh(subject, "reverse", Policy())


def test_the_copy_is_an_options_like_any_other():
    subject = _Subject({"precise": True, "order": 2})
    chosen = check_options(subject, "gradgrad", Policy(), None)
    assert type(chosen) is Options
    assert chosen.derive(order=1).order == 1 and chosen.order == 2
    with pytest.raises(AttributeError):   # (frozen, as a derived one)
        chosen.seed = 5

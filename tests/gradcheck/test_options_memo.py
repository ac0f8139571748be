"""Options made from the same plain keywords are shared (``options._MEMO``); what
validation refuses is still refused, whatever was built before."""
import pytest

from adcheck.gradcheck.core import options as options_module
from adcheck.gradcheck.core.options import Options, caller_defaults


def test_the_same_plain_keywords_give_one_frozen_options():
    a = Options.from_keywords(fast_mode=True, atol=1e-7)
    b = Options.from_keywords(fast_mode=True, atol=1e-7)
    assert a is b
    assert (a.fast_mode, a.atol, a.rtol) == (True, 1e-7, 1e-3)   # the given, then the defaults


def test_a_value_of_another_type_is_validated_anew():
    # 1 == True == 1.0 as keys of a dict: the memo keeps the type apart
    assert Options.from_keywords(probes=1).probes == 1
    with pytest.raises(ValueError, match="probes must be an integer"):
        Options.from_keywords(probes=True)
    with pytest.raises(ValueError, match="probes must be an integer"):
        Options.from_keywords(probes=1.0)


def test_unknown_keywords_raise_every_time():
    for _ in range(2):
        with pytest.raises(TypeError, match="unknown keyword"):
            Options.from_keywords(presice=True)


def test_caller_defaults_are_not_memoized():
    plain = Options.from_keywords(fast_mode=True)
    with caller_defaults(jacobian="dense"):
        inside = Options.from_keywords(fast_mode=True)
    assert inside.jacobian == "dense" and plain.jacobian == "auto"
    assert Options.from_keywords(fast_mode=True) is plain


def test_the_memo_is_bounded():
    options_module._MEMO.clear()
    for k in range(options_module.MEMO_SIZE + 5):
        Options.from_keywords(atol=float(k))
    assert len(options_module._MEMO) <= options_module.MEMO_SIZE


def test_settings_name_every_option_but_the_reference():
    # (the references and same_as are functions: a report's settings are data)
    o = Options.from_keywords(check_forward_ad=True, reference=lambda *a: None,
                              explore_reference=lambda *a: None, same_as=lambda *a: None)
    names = [f for f in options_module._names(Options)
             if f not in ("reference", "explore_reference", "same_as")]
    assert list(o.settings()) == names
    assert all(o.settings()[n] == getattr(o, n) for n in names)

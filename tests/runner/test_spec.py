"""The --inputs spec language: parsed by a tokenizer and a parser, never evaluated."""
import numpy as np
import pytest

from adcheck.runner.spec import SpecError, array_of, build, parse


def test_the_example_of_the_issue_parses_into_three_inputs():
    specs = parse("randn(3,4); rand(4)+0.1; randn(2) complex128")
    assert [(s.ctor, s.args, s.dtype) for s in specs] == [
        ("randn", (3, 4), "float64"), ("rand", (4,), "float64"), ("randn", (2,), "complex128")]
    assert specs[1].affine == [("+", 0.1)]


@pytest.mark.parametrize("text, expected", [
    ("ones(2) * 3 + 1", [4.0, 4.0]),
    ("zeros(2) - 2", [-2.0, -2.0]),
    ("full(2, 0.5)", [0.5, 0.5]),
    ("arange(3)", [0.0, 1.0, 2.0]),
    ("arange(1, 2, 0.5) / 2", [0.5, 0.75]),
    ("eye(2)", [[1.0, 0.0], [0.0, 1.0]]),
    ("ones() * -1.5e1", -15.0),
])
def test_constructors_and_affine_steps_give_these_values(text, expected):
    array = array_of(parse(text)[0], np.random.default_rng(0))
    np.testing.assert_array_equal(array, np.array(expected))


def test_dtype_word_and_nograd_reach_the_tensors():
    from adcheck import refengine
    x, y = build(parse("randn(2) complex128; ones(3) float32 nograd"), "refengine",
                 np.random.default_rng(0))
    assert x.dtype == refengine.complex128 and x.requires_grad
    assert y.dtype == refengine.float32 and not y.requires_grad


def test_the_same_generator_seed_gives_the_same_inputs():
    specs = parse("randn(3); rand(2) complex128")
    a = [t.detach().numpy() for t in build(specs, "refengine", np.random.default_rng(7))]
    b = [t.detach().numpy() for t in build(specs, "refengine", np.random.default_rng(7))]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("text, column, words", [
    ("randn(3,4; rand(4)", 10, "expected ','"),
    ("randn(3.5)", 7, "non-negative integer"),
    ("foo(3)", 1, "expected a constructor"),
    ("randn(3) float8", 10, "unknown word 'float8'"),
    ("randn(3) rand(2)", 10, "expected ';'"),
    ("randn(3) $", 10, "unexpected character '$'"),
    ("rand(3) / 0", 11, "division by zero"),
    ("", 1, "no input given"),
    ("randn(3) * 1j", 14, "complex constant needs a complex dtype"),
    ("eye(1, 2, 3)", 1, "eye takes n or n, m"),
    ("full()", 1, "full needs a shape and a value"),
    ("randn(100000, 100000)", 1, "at most"),
])
def test_a_bad_spec_names_the_column_and_the_problem(text, column, words):
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert caught.value.column == column
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text, meant, column, words", [
    ("randn(4, 3) float32 * 0.002", lambda x: x * 0.002, 13, "'float32' goes after the arithmetic"),
    ("rand(2) nograd + 1 * 3", lambda x: (x + 1) * 3, 9, "'nograd' goes after the arithmetic"),
    ("float32 randn(4, 3) - 1", lambda x: x - 1, 1, "'float32' goes after its input's"),
    ("randn(4, 3, float32)", lambda x: x, 13, "goes after the parentheses"),
    ("randn(4, 3, dtype=float32) / 2", lambda x: x / 2, 19, "goes after the parentheses"),
    ("0.002 * randn(4, 3) float32", lambda x: 0.002 * x, 1, "goes after the constructor"),
    ("-2 * randn(3) * 3", lambda x: -2 * x * 3, 1, "goes after the constructor"),
    ("2 - rand(3) + 1", lambda x: 2 - x + 1, 1, "goes after the constructor"),
    ("-rand(3)", lambda x: -x, 1, "goes after the constructor"),
])
def test_a_part_out_of_order_is_refused_with_the_input_spelled_in_order(text, meant, column,
                                                                         words):
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert caught.value.column == column and words in caught.value.reason
    fixed = caught.value.reason.split("write ")[1].strip("'")
    # the spelling given makes what the misplaced text means in Python's order
    spec, = parse(fixed)
    base = array_of(parse(fixed.split(")")[0] + ")")[0], np.random.default_rng(1))
    np.testing.assert_allclose(array_of(spec, np.random.default_rng(1)),
                               meant(base).astype(spec.dtype))
    assert spec.dtype == ("float32" if "float32" in text else "float64")
    assert spec.requires_grad == ("nograd" not in text)


@pytest.mark.parametrize("text, words", [
    ("2 / randn(3)", "a number divided by an input has no spelling"),
    ("2 + randn(3) * 3", "applied left to right: write it as steps after 'randn(3)'"),
    ("randn(3); rand(2) complex64; dtype=float32",
     "not a keyword: write 'randn(3) float32; rand(2) complex64'"),
    ("randn(3) torch.float32", "a dtype is a bare word after its input"),
])
def test_a_part_out_of_order_without_one_spelling_says_where_it_goes(text, words):
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert words in caught.value.reason


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "randn(3); exec(1)",
                                  "randn(len('abc'))"])
def test_python_code_is_rejected_not_run(text):
    with pytest.raises(SpecError):
        parse(text)


def test_keyword_arguments_follow_the_tensors_with_their_python_types():
    from adcheck.runner.spec import parse_call, parse_keywords
    specs, keywords = parse_call("randn(3, 4); dim=1, keepdim=True; dims=(0, -1); "
                                 "mode='sum'; eps=1e-5; p=2.0; out=None")
    assert [s.ctor for s in specs] == ["randn"]
    assert keywords == {"dim": 1, "keepdim": True, "dims": (0, -1), "mode": "sum",
                        "eps": 1e-5, "p": 2.0, "out": None}
    assert type(keywords["dim"]) is int and type(keywords["p"]) is float
    assert parse_keywords("dim=1, keepdim=False") == {"dim": 1, "keepdim": False}


@pytest.mark.parametrize("text, words", [
    ("dim=1; randn(3)", "the tensors come first"),
    ("randn(3); dim=1; dim=2", "given twice"),
    ("randn(3); dim=axis", "expected a value"),
    ("randn(3) int64", "randn draws real numbers"),
    ("randint(0, 3) int64", "randint takes high"),
])
def test_a_bad_keyword_or_integer_input_is_a_spec_error(text, words):
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert words in caught.value.reason


def test_an_integer_input_is_never_differentiated_and_stays_in_range():
    (idx,) = parse("randint(5, 100) int64")
    assert not idx.requires_grad
    (made,) = build([idx], "refengine", np.random.default_rng(0))
    values = made.numpy()
    assert values.dtype == np.int64 and values.min() >= 0 and values.max() <= 4
    assert set(values.tolist()) == set(range(5))    # 100 draws from 5 values: every one


def test_dtypes_an_engine_lacks_are_named():
    from adcheck.runner.spec import unsupported
    assert unsupported(parse("randn(3) float16"), "refengine").startswith("float16 exist on")
    assert unsupported(parse("randn(3) float16; arange(3) int64"), "torch") is None

"""A function whose output is NaN at every input: nothing about its derivatives
can be judged, and `adcheck check nanfunc.py:f --engine torch` exits 3 (docs/cli.md)."""


def f(x):
    return x * float("nan")

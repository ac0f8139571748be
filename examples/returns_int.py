"""A function whose derivative cannot be checked: it returns a Python int, so no
output depends on its input. ``adcheck check returns_int.py:f`` exits 3."""


def f(x):
    return 3

"""What reading a double-precision output's grid costs every check.

    python bench/grid_detection.py            # sizes 12, 1e4, 1e6; best of 7

``Problem.epsilon`` asks ``gradcheck.core.grids.narrow_grid`` once per
double-precision output whether its values all lie on a narrower dtype's
grid (the function computes in it inside). A double-precision output leaves
at its first values (``GLANCE``); an output that begins with exact zeros or
whole numbers (a relu, a sign) is read whole; one that lies on the grid is
read whole and its significands counted. Each is timed against one
``np.tanh`` of the same array: a floor under what one evaluation of the
function costs, of which a check makes tens to thousands.
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

from adcheck.gradcheck.core.grids import narrow_grid


def _outputs(size: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(size)
    relu = np.maximum(x, 0.0)
    relu[: min(size, 100)] = 0.0   # (begins with zeros: the glance cannot decide)
    return {"float64 values": x, "relu (zeros first)": relu,
            "float32 values": x.astype(np.float32).astype(np.float64)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timings per case; the best counts")
    args = parser.parse_args()
    print(f"{'size':>9}  {'output':<20} {'narrow_grid':>12} {'np.tanh':>10} {'ratio':>7}  found")
    for size in (12, 10_000, 1_000_000):
        for name, values in _outputs(size).items():
            grid = min(timeit.repeat(lambda: narrow_grid(values), number=1, repeat=args.repeats))
            tanh = min(timeit.repeat(lambda: np.tanh(values), number=1, repeat=args.repeats))
            print(f"{size:>9}  {name:<20} {grid * 1e6:>10.1f}us {tanh * 1e6:>8.1f}us "
                  f"{grid / tanh:>7.2f}  {narrow_grid(values)}")


if __name__ == "__main__":
    main()

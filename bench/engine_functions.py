"""torch's and refengine's own functions checked by name, as a newcomer first tries adcheck:

    python bench/engine_functions.py                  # all 163, two at a time
    python bench/engine_functions.py torch:polar      # some

``adcheck check MODULE:NAME --check reverse,forward -q --no-explore`` with no
other option, in a scratch folder; prints the exit status of each command
that does not exit 0 with the first lines of its output, and the counts. A
benchmark of verdicts and messages: it asserts nothing. bench/explore.md
quotes runs.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

#: by module, the functions a newcomer names first
NAMES = {
    "torch": (
        "sin", "exp", "log", "sqrt", "abs", "sigmoid", "tanh", "relu", "erf", "lgamma", "digamma",
        "atan2", "hypot", "maximum", "minimum", "pow", "mul", "div", "sub", "add", "matmul", "mm",
        "bmm", "dot", "outer", "kron", "sum", "mean", "prod", "std", "var", "norm", "logsumexp",
        "softmax", "log_softmax", "cumsum", "cumprod", "amax", "max", "min", "sort", "topk",
        "trace", "tril", "triu", "diag", "flip", "roll", "clamp", "where", "lerp", "addmm",
        "einsum", "cdist", "cross", "det", "inverse", "logdet", "sinc", "xlogy", "frac", "sign",
        "round", "floor", "square", "rsqrt", "reciprocal", "expm1", "log1p", "cosh", "asinh",
        "atanh", "polar", "angle", "real", "view_as_real", "fmod", "remainder", "logaddexp",
        "copysign", "nan_to_num", "cov", "corrcoef", "diff", "trapezoid", "cummax", "logcumsumexp",
        "renorm", "dist",
    ),
    "torch.linalg": (
        "det", "inv", "svd", "svdvals", "qr", "eig", "eigvals", "eigh", "solve", "norm",
        "vector_norm", "matrix_norm", "pinv", "matrix_exp", "slogdet", "lstsq", "cholesky",
        "lu_factor", "cross",
    ),
    "torch.special": (
        "erfcx", "i0", "xlog1py", "ndtr", "log_ndtr", "entr", "logit", "sinc",
    ),
    "torch.nn.functional": (
        "gelu", "silu", "mish", "elu", "selu", "softplus", "leaky_relu", "hardswish", "softmax",
        "log_softmax", "normalize", "linear", "bilinear", "conv1d", "layer_norm", "mse_loss",
        "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "kl_div",
        "binary_cross_entropy_with_logits", "cosine_similarity", "pairwise_distance", "glu",
        "logsigmoid", "softsign", "tanhshrink", "pad", "dropout", "scaled_dot_product_attention",
        "embedding", "one_hot", "gumbel_softmax",
    ),    "adcheck.refengine": ("sin", "log", "atanh", "cumsum", "softmax", "matmul", "where"),
    "adcheck.refengine.linalg": ("det", "inv", "eigh", "svd", "qr", "cholesky"),
}


def _run(spec: str, folder: str) -> tuple:
    done = subprocess.run(["adcheck", "check", spec, "--check", "reverse,forward", "-q",
                           "--no-explore"], cwd=folder, capture_output=True, text=True)
    return spec, done.returncode, (done.stdout + done.stderr).strip()


def main(argv: list) -> int:
    chosen = argv or [f"{module}:{name}" for module, names in NAMES.items() for name in names]
    start, statuses = time.perf_counter(), {}
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(2) as pool:
        for spec, status, text in pool.map(lambda s: _run(s, folder), chosen):
            statuses.setdefault(status, []).append(spec)
            if status != 0:
                print(f"=== {spec}: exit status {status}")
                print("\n".join(line[:300] for line in text.splitlines()[:4]))
    print(f"{len(chosen)} commands in {time.perf_counter() - start:.0f} s: " + ", ".join(
        f"{len(specs)} exit {status}" for status, specs in sorted(statuses.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Options shared by ``adcheck ops`` and ``adcheck check``, and their parsing.

Each decorator adds a group of options with their help text; the parsers
turn raw values into what the library takes, raising ``InputError`` (exit
status 2, one line) for a bad value. Nothing heavy is imported here.
"""
from __future__ import annotations

import importlib.util

import click

from adcheck.cli.errors import InputError
from adcheck.runner.registry import DTYPE_NAMES, REGISTRY_NAMES

#: the checks as --check's help lists them (gradcheck.core.modes holds the vocabulary, but
#: importing it would import NumPy before --help; a test keeps the two in step)
CHECK_HELP = ("reverse (vjp against finite differences), forward (jvp against finite "
              "differences), fast (one random projection each way (fast mode)), gradgrad "
              "(reverse over reverse: the vjp's own vjp), fwgrad_bwgrad (forward over "
              "reverse: the vjp's jvp), reference (against the op's mpmath reference "
              "instead of finite differences)")

ENGINES = ("refengine", "torch")


def _apply(options):
    def decorate(func):
        for option in reversed(options):
            func = option(func)
        return func
    return decorate


#: --memory-budget's default, in MiB (gradcheck.core.options.DEFAULT_MEMORY_BUDGET)
MEMORY_BUDGET_MIB = 512


def check_options(default_checks: str, engines: tuple = ENGINES):
    """--check, --engine, --precise/--torch-tolerances, --seed, --timeout,
    --memory-budget."""
    return _apply([
        click.option("--check", "checks", default=default_checks, show_default=True,
                     metavar="LIST", help="Comma-separated checks: " + CHECK_HELP + "."),
        click.option("--engine", type=click.Choice(engines), default="refengine",
                     show_default=True,
                     help="Whose formulas to check: refengine's, or torch's own for every "
                          "op that names a torch op (needs PyTorch)." if "jax" not in engines
                     else "The engine of a plain function: refengine, torch or jax (needs "
                          "PyTorch or JAX). Functions, custom_vjp/custom_jvp and jit objects "
                          "say their own engine, and so do torch's, JAX's and refengine's "
                          "own functions (torch:sin), and a plain function checked at its "
                          "file's example_inputs() takes their tensors' engine."),
        click.option("--precise/--torch-tolerances", default=True, show_default=True,
                     help="Precise: tolerances from an error estimate of the numerical "
                          "Jacobian (Richardson extrapolation). Torch tolerances: the "
                          "fixed atol/rtol per dtype that torch.autograd.gradcheck uses."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Base seed of the random probes; each (op, dtype, sample, check) "
                          "derives its own from it, so results do not depend on --jobs."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300,
                     show_default=True, metavar="SECONDS",
                     help="Report an op (one dtype) that runs longer as an error and go on."),
        click.option("--memory-budget", "memory_budget", type=click.IntRange(min=1),
                     default=MEMORY_BUDGET_MIB, show_default=True, metavar="MIB",
                     help="Memory each check may hold in arrays, in MiB: evaluations run in "
                          "batches and Jacobians are built and compared in chunks within it."),
    ])


class FormatChoice(click.Choice):
    """``--format``'s choices; ``html`` points to ``--html PATH`` (an HTML report
    is a file written beside the stdout format, not a stdout format)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.lower() == "html":
            self.fail("'html' is not a format of standard output: write an HTML report "
                      "with --html PATH (beside --format table or json)", param, ctx)
        return super().convert(value, param, ctx)


def report_options(func):
    """--format, --junit-xml, --baseline, --write-baseline, --fail-fast, -v/-q."""
    return _apply([
        click.option("--format", "fmt", type=FormatChoice(["table", "json"]), default="table",
                     show_default=True,
                     help="Results on stdout: a table for people, or JSON (schema "
                          "adcheck-report v1) for programs."),
        click.option("--junit-xml", type=click.Path(dir_okay=False, writable=True),
                     metavar="PATH",
                     help="Also write JUnit XML: one test case per op, sample and check."),
        click.option("--baseline", type=click.Path(dir_okay=False), metavar="FILE",
                     help="Accepted failures: exit 1 only for failures not in FILE, and "
                          "report the entries of FILE that now pass."),
        click.option("--write-baseline", type=click.Path(dir_okay=False, writable=True),
                     metavar="FILE",
                     help="Write this run's failures to FILE as the accepted baseline."),
        click.option("--fail-fast", is_flag=True, help="Stop at the first failing op."),
        click.option("-v", "--verbose", is_flag=True,
                     help="Also list skipped checks and known failures, with reasons."),
        click.option("-q", "--quiet", is_flag=True,
                     help="No progress bar and no summary table: failures and totals only."),
    ])(func)


def html_option(func):
    """--html PATH (``ops``, ``op`` and ``check``): the self-contained HTML report."""
    return click.option(
        "--html", type=click.Path(dir_okay=False, writable=True), metavar="PATH",
        help="Also write an HTML report to PATH: the summary table and, for each failure, "
             "its diagnosis, the numerical and analytical Jacobians as heatmaps with the "
             "differing entries outlined, and a snippet that reproduces it. One "
             "self-contained file: viewing it needs no network. Written even when the run "
             "is interrupted (then partial).")(func)


#: the exit statuses every checking command's --help lists (``runner.results.ExitCode``)
EXIT_STATUSES = ("Exit status: 0 every op or target had its checks judged and none failed "
                 "(failures in --baseline accepted); 1 a check failed or errored; 2 a usage "
                 "or input error; 3 nothing failed but some op or target had every check "
                 "skipped (nothing was checked; the reasons are printed; --allow-empty makes "
                 "it 0); 129, 130, 143 stopped by SIGHUP, SIGINT (Ctrl-C), SIGTERM.")


def allow_empty_option(func):
    """--allow-empty (``ops``, ``op``, ``check``): exit 0 when nothing was judged."""
    return click.option(
        "--allow-empty", is_flag=True,
        help="Exit 0 (not 3) when some op or target had every check skipped; they are "
             "still listed, with the reasons.")(func)


#: gradcheck's default explore budget (``gradcheck.core.options.DEFAULT_EXPLORE_BUDGET``),
#: written here so that --help imports nothing of gradcheck; a test keeps the two equal
DEFAULT_EXPLORE_BUDGET = 20.0


def explore_options(func):
    """--explore/--no-explore and --explore-budget (``check``, ``ops``): search
    inputs beyond the given ones (``gradcheck.explore``); the budget is the
    explore mode's per check, a bad one one line and exit 2."""

    def seconds(ctx, param, value):
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not 0 < number < float("inf"):
            from adcheck.cli.errors import InputError
            raise InputError(f"--explore-budget must be a number of seconds > 0, not "
                             f"{value!r}; for example --explore-budget 20")
        return number
    func = click.option(
        "--explore-budget", "explore_budget", callback=seconds, metavar="SECONDS",
        help=f"Seconds --explore may spend per check (default {DEFAULT_EXPLORE_BUDGET:g}; "
             "with ops: per op, dtype and check, on the first sample).")(func)
    return click.option(
        "--explore/--no-explore", default=None,
        help="Also search for inputs where a derivative is wrong: exact zeros, ties, tiny "
             "and huge magnitudes, integers, repeated eigenvalues, complex axes; kinks and "
             "ties judged by one-sided derivatives; a failing point shown with a "
             "reproducer (docs/explore.md). Neither: a quick pass (exact zeros, ties, three "
             "magnitudes, on the first sample) runs by default; --no-explore turns it "
             "off.")(func)


#: --jacobian's choices: gradcheck.check's jacobian= (gradcheck.core.options.JACOBIAN_KINDS;
#: importing it would import NumPy before --help; a test keeps the two in step)
JACOBIAN_CHOICES = ("auto", "dense", "compressed", "probed")


def jacobian_option(func):
    """--jacobian (``ops``, ``op``, ``check``): how each check builds its Jacobians."""
    return click.option(
        "--jacobian", type=click.Choice(JACOBIAN_CHOICES), default="auto", show_default=True,
        help="How Jacobians are built: dense (every entry; in chunks beyond "
             "--memory-budget), compressed (groups of columns that share no row of the "
             "formula's pattern; every entry compared), probed (J U along 8 random "
             "directions: seconds at any size, the odds that a wrong entry escapes "
             "stated), or auto: dense or compressed when every entry is estimated to fit "
             "in half the time --timeout leaves, else probed.")(func)


def registry_option(func):
    """--registry (``ops``, ``op``, ``list``): where the ops come from."""
    return click.option(
        "--registry", "registry_name", type=click.Choice(REGISTRY_NAMES), default="opinfo",
        show_default=True,
        help="Where the ops come from: adcheck's own registry (opinfo), or PyTorch's op_db "
             "(torch; needs pip install \"adcheck[torch]\"), whose ops are checked on torch "
             "in every dtype torch supports backward for on CPU, the first 2 samples of "
             "each, with the checks PyTorch's gradient tests run (reverse, forward, "
             "gradgrad, fwgrad_bwgrad) and op_db's skips and expected failures as known "
             "failures.")(func)


def parse_checks(text: str) -> tuple:
    from adcheck.gradcheck.core.modes import CHECK_NAMES
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in CHECK_NAMES]
    if unknown or not names:
        raise InputError(f"unknown check {', '.join(map(repr, unknown)) or '(none given)'} in "
                         f"--check; choose from {', '.join(CHECK_NAMES)} (comma-separated)")
    return tuple(dict.fromkeys(names))


def parse_dtypes(values: tuple, known: tuple = DTYPE_NAMES) -> list | None:
    """The --dtype names, each one of ``known`` (the registry's dtypes)."""
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"unknown dtype {', '.join(map(repr, unknown))} in --dtype; "
                         f"choose from {', '.join(known)}")
    return names or None


def require_engine(engine: str) -> None:
    """Exit 2 with what to do when ``--engine torch`` is asked for without torch."""
    if engine == "torch" and importlib.util.find_spec("torch") is None:
        raise InputError("--engine torch needs PyTorch, which is not installed; install it "
                         "with 'pip install torch' (or 'pip install adcheck[torch]')")
    if engine == "jax" and importlib.util.find_spec("jax") is None:
        raise InputError("--engine jax needs JAX, which is not installed; install it with "
                         "'pip install adcheck[jax]'")


def verbosity(verbose: bool, quiet: bool) -> int:
    if verbose and quiet:
        raise InputError("-v and -q contradict each other; pass one of them")
    return 1 if verbose else -1 if quiet else 0

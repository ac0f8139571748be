"""Re-run the examples of the README and docs/*.md; report those whose output differs.

    python scripts/readme_examples.py                  # every example, README.md and docs/*.md
    python scripts/readme_examples.py --list           # what it found, where
    python scripts/readme_examples.py -k 'adcheck ops' README.md
    python scripts/readme_examples.py --diff           # also print each difference in full
    python scripts/readme_examples.py --write docs/check.md   # put the new outputs in the file

An example is a line ``$ adcheck ...`` inside a fenced block, followed by the
output the documentation shows, up to the next ``$`` line or the end of the
block; a last line ``[exit status N]`` is the status it shows (none shown: 0
is expected). Each is run as written, in a shell, from a copy of
``examples/`` in a temporary folder (the documentation's runs are made in
``examples/``; the files they write, reports and baselines, then stay out of
the checkout; ``--cwd`` to copy another folder; a ``$ cd DIR``
line moves the rest of its file's examples there), and another ``$`` line
that runs adcheck (a loop making the shards a later ``adcheck merge`` reads)
is run first, as setup, its output not compared (paths inside the copy are
shown relative to it); with a plain
80-column terminal and no colour, and compared line by line with what the
documentation shows, after the same normalisation on both sides:

- timings are not compared: a number with a unit of time (``0.19 s``,
  ``41.5s``, ``12 ms``, ``3 min``) becomes ``<time>``, and a list of timed
  items (``slowest: exp 0.3s, log 0.2s``) is not compared, since which items
  are slowest, and in which order, is the timings';
- trailing spaces, and the box-drawing characters of rich's tables and
  panels, are dropped (a table's widths follow the terminal, its cells do not);
- a line ``...`` in the documentation stands for any number of lines.

Counts, messages and exit statuses must match. Exit status 0 when every example
matches, 1 when one differs (each is listed, with the first differing line), 2
for a usage error. This is not a unit test: examples take minutes, and their
timings vary; run it before a release and after any change the documentation
shows.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROMPT = "$ "
EXIT_LINE = re.compile(r"^\[exit status (\d+)\]\s*$")
#: a number with a unit of time, or a clock time
TIME = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:ms|µs|us|ns|s|sec|secs|seconds?|min|minutes?|h)\b"
                  r"|\b\d{1,2}:\d{2}(?::\d{2})?\b")
#: a shell line that runs the adcheck command (``for ...; do adcheck ...; done``)
RUNS_ADCHECK = re.compile(r"(?:^|[;&|]\s*|\bdo\s+)adcheck\s")
#: rich's box drawing (tables, panels) and the progress bar's blocks
BOX = re.compile(r"[\u2500-\u257f\u2580-\u259f]")


@dataclass
class Example:
    """One ``$ command`` of a documentation file and the output shown after it."""
    path: Path
    line: int
    command: str
    shown: list = field(default_factory=list)
    status: int = 0
    #: run for what it leaves behind (files, a directory), its output not compared
    setup: bool = False
    #: the file's last line of the example (its command's when it shows no output),
    #: and whether it shows its exit status
    end: int = 0
    shows_status: bool = False
    #: the file's line after which the output starts (the command's last line)
    first_output: int = 0


def examples_in(path: Path) -> list:
    """The examples of one Markdown file, in order."""
    found, current, fenced, continued = [], None, False, False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced, current, continued = not fenced, None, False
            continue
        if not fenced:
            continue
        if continued and current is not None:   # the command goes on (a trailing backslash)
            current.command = current.command[:-1].rstrip() + " " + line.strip()
            current.end, continued = number, line.rstrip().endswith("\\")
            current.first_output = number
            continue
        if line.startswith(PROMPT + "adcheck"):
            current = Example(path, number, line[len(PROMPT):].strip(), end=number,
                              first_output=number)
            found.append(current)
            continued = line.rstrip().endswith("\\")
        elif line.startswith(PROMPT):
            command = line[len(PROMPT):].strip()
            current = None          # another program's example: not ours to compare
            if RUNS_ADCHECK.search(command) or command.startswith("cd "):
                found.append(Example(path, number, command, setup=True))
        elif current is not None:
            status = EXIT_LINE.match(line)
            if status:
                current.status, current.shows_status = int(status.group(1)), True
            else:
                current.shown.append(line)
            current.end = number
    return found


def normalise(lines: list) -> list:
    """The lines as compared: timings, box drawing, surrounding blanks removed."""
    out = []
    for line in lines:
        line = BOX.sub(" ", TIME.sub("<time>", line))
        line = re.sub(r"\s+", " ", line).strip()
        head, colon, items = line.partition(": ")
        if colon and items.count("<time>") > 1:
            line = f"{head}: <timed items>"   # which items are slowest is the timings' too
        if line:
            out.append(line)
    return out


def _matches(shown: list, got: list) -> bool:
    """Whether ``got`` is ``shown``, a ``...`` in ``shown`` standing for any lines
    (line by line: a regular expression over the text backtracks for minutes)."""
    if not shown:
        return not got
    if shown[0] == "...":
        return any(_matches(shown[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and got[0] == shown[0] and _matches(shown[1:], got[1:])


def first_difference(shown: list, got: list) -> str | None:
    """Where ``got`` departs from ``shown`` (``...`` in ``shown``: any lines), or None."""
    if _matches(shown, got):
        return None
    for k, expected in enumerate(shown):
        if expected == "...":
            return f"after an elided part, expected {shown[k + 1:k + 2] or 'the end'}"
        if k >= len(got):
            return f"line {k + 1}: expected {expected!r}, the output ended"
        if got[k] != expected:
            return f"line {k + 1}: expected {expected!r}, got {got[k]!r}"
    return f"line {len(shown) + 1}: the output goes on: {got[len(shown)]!r}"


def run(example: Example, cwd: Path, timeout: float) -> tuple:
    """``(exit status, output lines, seconds)``; stdout and stderr as a terminal shows them."""
    env = dict(os.environ, COLUMNS="80", LINES="40", NO_COLOR="1", TERM="dumb",
               PYTHONWARNINGS="ignore")
    start = time.perf_counter()
    try:
        done = subprocess.run(example.command, shell=True, cwd=cwd, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, [f"(timed out after {timeout:g} s)"], time.perf_counter() - start
    # paths inside the temporary copy are shown relative to it, as run in examples/
    text = done.stdout.replace(str(cwd) + os.sep, "")
    return done.returncode, text.splitlines(), time.perf_counter() - start


def _shown(path: Path) -> str:
    """``path`` as printed: from the checkout's root where it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _files(args) -> list:
    if args.files:
        return [Path(f).resolve() for f in args.files]
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Re-run the documentation's '$ adcheck ...' examples and report any "
                    "whose counts, messages or exit status differ (timings excluded).")
    parser.add_argument("files", nargs="*", help="Markdown files (default: README.md, docs/*.md)")
    parser.add_argument("-k", dest="select", action="append", default=[], metavar="PATTERN",
                        help="only examples whose command matches (shell wildcards, or a "
                             "substring); repeatable")
    parser.add_argument("--cwd", default=str(ROOT / "examples"),
                        help="the folder whose copy the commands run in (default: examples/)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before an example is abandoned (default 900)")
    parser.add_argument("--list", action="store_true", help="list the examples and exit")
    parser.add_argument("--diff", action="store_true",
                        help="print the whole output of each example that differs")
    parser.add_argument("--write", action="store_true",
                        help="replace, in the files, the output of each example that differs "
                             "with the new one (not those that elide lines with '...': "
                             "those are listed to edit by hand)")
    return parser


def _selected(example: Example, patterns: list) -> bool:
    return not patterns or any(p in example.command or fnmatch.fnmatchcase(example.command, p)
                               for p in patterns)


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    files = _files(args)
    missing = [str(f) for f in files if not f.is_file()]
    if not Path(args.cwd).is_dir():
        parser.error(f"no such folder: {args.cwd}")
    if missing:
        parser.error(f"no such file: {missing[0]}")
    for f in files:
        _READ[f] = examples_in(f)
    examples = [e for f in files for e in _READ[f] if e.setup or _selected(e, args.select)]
    if args.list:
        for e in examples:
            print(f"{_shown(e.path)}:{e.line}: {e.command}  " + (
                "(setup)" if e.setup else f"({len(e.shown)} lines, exit status {e.status})"))
        print(f"{sum(not e.setup for e in examples)} examples")
        return 0
    with tempfile.TemporaryDirectory(prefix="readme-examples-") as tmp:
        args.cwd = str(shutil.copytree(args.cwd, Path(tmp) / Path(args.cwd).name))
        return _compare(examples, args)


def _compare(examples: list, args) -> int:
    """Run each example (and setup line) in order; print what differs."""
    differ, cwd, path = 0, Path(args.cwd), None
    examples_run = [e for e in examples if not e.setup]
    for e in examples:
        if e.path != path:
            cwd, path = Path(args.cwd), e.path
        where = f"{_shown(e.path)}:{e.line}"
        if e.setup:
            if e.command.startswith("cd "):
                # (relative to where the last command ran, or else to the checkout)
                target = e.command[3:].strip()
                cwd = (cwd / target if (cwd / target).is_dir() else ROOT / target).resolve()
            else:
                status, _, seconds = run(e, cwd, args.timeout)
                print(f"setup   {where}: {e.command[:60]} (exit status {status}, {seconds:.1f} s)")
            continue
        status, output, seconds = run(e, cwd, args.timeout)
        problems = []
        if status != e.status:
            problems.append(f"exit status {status}, the documentation shows {e.status}")
        gap = first_difference(normalise(e.shown), normalise(output))
        if gap:
            problems.append(gap)
        print(f"{'DIFFERS' if problems else 'same   '} {where}: {e.command} ({seconds:.1f} s)")
        for p in problems:
            print(f"          {p}")
        if problems and args.diff:
            print("\n".join(f"          | {line}" for line in output))
        if problems and args.write:
            written = _rewrite(e, status, output)
            print(f"          {'written' if written else 'not written: it elides lines (...), '}"
                  f"{'' if written else 'or is a usage error the file does not show'}")
        differ += bool(problems)
    print(f"\n{len(examples_run) - differ} of {len(examples_run)} examples as the documentation "
          f"shows them; {differ} differ")
    return 1 if differ else 0


def _rewrite(example: Example, status, output: list) -> bool:
    """Put ``output`` (and ``status``) in place of what ``example`` shows in its
    file; ``False``, and nothing written, when it elides lines with ``...``
    (which lines to keep is the writer's choice). Examples are rewritten in
    the order they run, so the lines of those below move by the difference:
    ``_shift`` keeps their positions true."""
    if any(line.strip() == "..." for line in example.shown) or status is None:
        return False
    if status == 2 and example.status != 2:   # a usage error: the example itself is broken
        return False
    lines = example.path.read_text(encoding="utf-8").splitlines()
    new = [line.rstrip() for line in output]
    if example.shows_status or status != 0:
        new.append(f"[exit status {status}]")
    start = example.first_output   # the output starts below the command (0-based index)
    lines[start:example.end] = new
    example.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _shift(example, len(new) - (example.end - start))
    return True


#: every example read, by file, for ``_shift``
_READ: dict = {}


def _shift(example: Example, by: int) -> None:
    """Move the line numbers of the examples below ``example`` in its file by ``by``."""
    for other in _READ.get(example.path, ()):
        if other.line > example.line:
            other.line += by
            other.end += by
            other.first_output += by
    example.end += by


if __name__ == "__main__":
    sys.exit(main())

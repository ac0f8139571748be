"""Every option of every command is documented, and every command's help
lists the exit statuses it can end with.

The commands are walked as Click builds them (``cli.list_commands``), so a
new command or option is covered the day it is added. An option counts as
documented when a paragraph of the user documentation (README.md and
docs/*.md: text between blank lines, or one fenced block) names both the
command (``adcheck <command>``, in the paragraph or the heading of its
section) and the option. The exit statuses a command
can end with are stated below from the code that ends it, each with where it
comes from, and compared with the numbers its ``--help`` gives after "Exit
status".
"""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from adcheck.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]

#: every command: 2 (click's usage errors, ``InputError``), and 129, 130, 143
#: (``LazyGroup.invoke`` turns SIGHUP, SIGINT, SIGTERM into them for any command)
EVERY = {0, 2, 129, 130, 143}
#: the statuses beyond ``EVERY`` each command can end with, and from where
STATUSES = {
    # cli.reporting.finish: the run's ExitCode (FAILED, EMPTY)
    "ops": EVERY | {1, 3},
    "op": EVERY | {1, 3},
    "check": EVERY | {1, 3},
    # cli.commands.merge -> cli.reporting.finish: the unsharded run's status
    "merge": EVERY | {1, 3},
    # cli.commands.conformance: ExitCode.FAILED when a case fails or errors
    "conformance": EVERY | {1},
    # cli.commands.listing and cli.commands.baseline end with 0 or an InputError
    "list": EVERY,
    "baseline": EVERY,
}
#: options every command has, documented once for all (docs/commands.md)
COMMON = {"--help", "-h"}


def _commands() -> list:
    ctx = click.Context(cli)
    return [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]


def _help(name: str, command: click.Command) -> str:
    with click.Context(command, info_name=f"adcheck {name}", parent=click.Context(cli)) as ctx:
        return command.get_help(ctx)


def _paragraphs() -> list:
    """The documentation's paragraphs: text between blank lines, a fenced block
    whole, each with the heading of its section on its first line (a section
    headed "adcheck ops" is about that command throughout)."""
    paragraphs = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        heading, current, fenced = "", [], False
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fenced = not fenced
            if not fenced and line.startswith("#"):
                heading = line
            if not line.strip() and not fenced:
                paragraphs.append("\n".join([heading, *current]))
                current = []
            else:
                current.append(line)
        paragraphs.append("\n".join([heading, *current]))
    return paragraphs


def _names(name: str) -> re.Pattern:
    """What names the command in a paragraph: ``adcheck <name>``, not a longer name."""
    return re.compile(rf"adcheck {re.escape(name)}(?![\w-])")


@pytest.fixture(scope="module")
def paragraphs():
    return _paragraphs()


def test_every_command_is_in_the_table_of_statuses():
    assert sorted(name for name, _ in _commands()) == sorted(STATUSES)


@pytest.mark.parametrize("name", sorted(STATUSES))
def test_the_help_of_each_command_lists_its_exit_statuses(name):
    command = dict(_commands())[name]
    text = " ".join(_help(name, command).split())
    found = re.search(r"Exit status(.*)", text, re.IGNORECASE | re.DOTALL)
    assert found, f"adcheck {name} --help says nothing of its exit status"
    listed = {int(n) for n in re.findall(r"(?<![\w.-])(\d{1,3})(?!\w|\.\d)", found.group(1))
              if int(n) in {0, 1, 2, 3, 129, 130, 143}}
    assert listed == STATUSES[name], (
        f"adcheck {name} --help lists exit statuses {sorted(listed)}; it can end with "
        f"{sorted(STATUSES[name])}")



def test_the_commands_own_help_lists_every_status_a_command_ends_with():
    """``adcheck --help`` is where a newcomer reads first: it lists the union
    of the commands' statuses (it left out 3, the run that judged nothing)."""
    with click.Context(cli, info_name="adcheck") as ctx:
        text = " ".join(cli.get_help(ctx).split())
    found = re.search(r"Exit status(.*)", text, re.IGNORECASE | re.DOTALL)
    assert found, "adcheck --help says nothing of its exit status"
    listed = {int(n) for n in re.findall(r"(?<![\w.-])(\d{1,3})(?!\w|\.\d)", found.group(1))
              if int(n) in {0, 1, 2, 3, 129, 130, 143}}
    assert listed == set().union(*STATUSES.values())

def _undocumented(name: str, command: click.Command, paragraphs: list) -> list:
    mention = _names(name)
    about = [p for p in paragraphs if mention.search(p)]
    missing = []
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        flags = [f for f in param.opts + param.secondary_opts if f not in COMMON]
        if not flags:
            continue
        pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(f)}(?![\w-])" for f in flags))
        if not any(pattern.search(p) for p in about):
            missing.append("/".join(flags))
    return missing


@pytest.mark.parametrize("name", sorted(STATUSES))
def test_every_option_is_documented_beside_its_command(name, paragraphs):
    command = dict(_commands())[name]
    missing = _undocumented(name, command, paragraphs)
    assert not missing, (f"options of 'adcheck {name}' no paragraph of README.md or docs/*.md "
                         f"names beside 'adcheck {name}': {', '.join(missing)}")


def test_an_option_named_only_beside_another_command_is_not_documented():
    # the rule itself: '--format' beside 'adcheck ops' does not document 'adcheck op --format'
    command = dict(_commands())["op"]
    paragraphs = ["$ adcheck ops --format json", "## adcheck opx\n`--format json`"]
    assert "--format" in _undocumented("op", command, paragraphs)
    assert "--format" not in _undocumented("op", command, ["`adcheck op sin --format json`"])
    assert "--format" not in _undocumented("op", command, ["## adcheck op\n| `--format` |"])

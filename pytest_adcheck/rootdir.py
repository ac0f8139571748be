"""``--adcheck-plugin FILE`` with a space, without moving pytest's rootdir.

pytest chooses its rootdir and its ini file from the command line's path
arguments *before* it loads plugins from entry points, so before it knows
that ``--adcheck-plugin`` takes a value: at that moment ``FILE`` looks like
a test path, and a file outside the project moves the rootdir to a common
ancestor (and loses the project's ini file: its markers, addopts,
testpaths). ``--adcheck-plugin=FILE`` is one argument and never had the
problem. No option type or callback can run earlier than the rootdir choice,
so ``correct`` runs in the first hook that follows plugin loading
(``pytest_load_initial_conftests``), before conftests, collection and the
ini file are read: it makes the choice again with the option known (so the
value is consumed as the option's, not as a path) and, when the answer
differs, puts the right rootdir, ini file and addopts in place.

It leans on pytest's own ``determine_setup`` and on attributes of
``Config`` that pytest does not document; if they are not what it expects
it leaves the choice as it was and warns once, naming
``--adcheck-plugin=FILE`` as the way out. Options that act before plugins
load (``-p`` in the ini file's addopts, ``required_plugins``,
``minversion``) were read from the first choice's ini file.
"""
from __future__ import annotations

import inspect
import warnings

OPTION = "--adcheck-plugin"


def _spaced_values(args: list) -> list:
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == OPTION]


def _setup(config, namespace) -> tuple:
    """``(rootpath, inipath, inicfg, rest)`` as pytest chooses them for ``namespace``."""
    from _pytest.config.findpaths import determine_setup
    offered = {"inifile": namespace.inifilename, "args": namespace.file_or_dir,
               "override_ini": getattr(namespace, "override_ini", None),
               "rootdir_cmd_arg": getattr(namespace, "rootdir", None) or None,
               "invocation_dir": config.invocation_params.dir, "config": config}
    accepted = inspect.signature(determine_setup).parameters
    rootpath, inipath, inicfg, *rest = determine_setup(
        **{k: v for k, v in offered.items() if k in accepted})
    return rootpath, inipath, inicfg, rest


def _install(config, parser, args: list, chosen: tuple, namespace) -> None:
    rootpath, inipath, inicfg, rest = chosen
    stale_addopts = list(config.getini("addopts"))
    cfg_name = "_inicfg" if hasattr(config, "_inicfg") else "inicfg"
    for name in ("_rootpath", "_inipath", cfg_name):
        if not hasattr(config, name):
            raise AttributeError(name)
    config._rootpath, config._inipath = rootpath, inipath
    setattr(config, cfg_name, inicfg)
    if rest and hasattr(config, "_ignored_config_files"):
        config._ignored_config_files = rest[0]
    getattr(config, "_inicache", {}).clear()
    parser.extra_info["rootdir"], parser.extra_info["inifile"] = str(rootpath), str(inipath)
    if getattr(namespace, "confcutdir", None) is None:
        config.known_args_namespace.confcutdir = str(inipath.parent if inipath else rootpath)
    if stale_addopts and args[:len(stale_addopts)] == stale_addopts:
        del args[:len(stale_addopts)]
    args[:0] = list(config.getini("addopts"))


def correct(config, parser, args: list) -> None:
    """Choose the rootdir and ini file again with ``--adcheck-plugin``'s values
    consumed as values; install the choice when it differs from pytest's."""
    if not _spaced_values(args):
        return
    try:
        namespace = parser.parse_known_args(list(args))
        chosen = _setup(config, namespace)
        if (chosen[0], chosen[1]) == (config.rootpath, config.inipath):
            return
        _install(config, parser, args, chosen, namespace)
    except (AttributeError, ImportError, TypeError, ValueError) as exc:
        warnings.warn(f"adcheck: pytest took the file after {OPTION} for a test path when it "
                      f"chose its rootdir ({config.rootpath}), and adcheck could not correct "
                      f"that on this pytest ({type(exc).__name__}: {exc}); write "
                      f"{OPTION}=FILE instead", stacklevel=2)

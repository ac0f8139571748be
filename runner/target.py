"""``MODULE:OBJECT`` for ``adcheck check``: find the user's object and say what it is.

The object may be a ``refengine.autograd.Function`` subclass, a
``torch.autograd.Function`` subclass (checked on torch), a JAX function
object (``jax.custom_vjp``, ``jax.custom_jvp`` or ``jax.jit``; checked on
JAX), a plain function of tensors (checked on the ``--engine`` given,
``"jax"`` for a plain function of JAX arrays; torch's, JAX's and refengine's
own functions, ``torch:sin``, on their own engine), or a torch or refengine
``nn.Module``: an instance, a class built with no argument, or a factory
(a function of no argument that returns one), checked in its inputs and
its parameters (``gradcheck.core.modules``). A module is built after seeding
its engine's generator with ``seed``, so its initial weights are the same
in every process. ``MODULE`` is a
dotted module name importable from the current directory, or the path of a
``.py`` file. Every mistake raises ``TargetError`` with one line saying
what to do.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from adcheck.runner.errors import RunnerError

#: what building a user's module may raise (see runner.checks.FAULTS)
FAULTS = (Exception, SystemExit)


class TargetError(RunnerError):
    """The target cannot be imported or is not something we can check."""


@dataclass
class Target:
    """A resolved target: ``func`` is what gradcheck calls."""

    spec: str
    name: str
    func: object
    kind: str            # "refengine Function", "torch Function", "jax custom_vjp",
    #                      "jax custom_jvp", "jax function", "function",
    #                      "torch Module" or "refengine Module"
    engine: str          # "refengine", "torch" or "jax"
    has_jvp: bool
    arity: int | None    # positional inputs, when the signature tells
    #: the names of those inputs (a keyword argument given by name takes one)
    params: tuple = ()


def _import(module: str):
    if module.endswith(".py") or os.sep in module or "/" in module:
        path = Path(module)
        if not path.is_file():
            raise TargetError(f"no such file {module!r}; give MODULE:OBJECT with an importable "
                              "module or a path to a .py file")
        resolved = path.resolve()
        folder = str(resolved.parent)
        if folder not in sys.path:     # its neighbours import as they would from a script
            sys.path.insert(0, folder)
        return _import_file(resolved)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(module)


#: resolved path -> (the file's mtime and size when imported, its module)
_IMPORTED: dict = {}


def _import_file(path: Path):
    """The module of the file at ``path``, executed once per process (a second
    execution would make new classes, and run the user's module-level code
    again), unless the file changed since."""
    stamp = (path.stat().st_mtime_ns, path.stat().st_size)
    known = _IMPORTED.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    spec = importlib.util.spec_from_file_location(f"adcheck_target_{path.stem}", path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded
    spec.loader.exec_module(loaded)
    _IMPORTED[path] = (stamp, loaded)
    return loaded


def load_object(text: str):
    if text.count(":") != 1 or not all(text.split(":")):
        raise TargetError(f"expected MODULE:OBJECT (for example mypkg.ops:MyExp or "
                          f"ops.py:MyExp), got {text!r}")
    module_name, attribute = text.split(":")
    try:
        module = _import(module_name)
    except TargetError:
        raise
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        if missing and module_name.removesuffix(".py") != missing and not \
                module_name.startswith(missing + "."):
            raise TargetError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}; "
                              f"the module's own import of {missing!r} failed: install it, or "
                              "put it beside the module") from None
        raise TargetError(f"cannot import {module_name!r} ({type(exc).__name__}: {exc}); run "
                          "adcheck from the directory that contains it, or pass a path "
                          "such as path/to/ops.py:OBJECT") from None
    except (Exception, SystemExit) as exc:  # the user's module failed while importing
        raise TargetError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}; "
                          "fix the module so that it imports") from None
    obj = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(module) if not n.startswith("_")]
            raise TargetError(f"{module_name!r} has no attribute {attribute!r}; it defines: "
                              f"{', '.join(names[:12]) or 'nothing public'}")
        obj = getattr(obj, part)
    return obj


def _function_base(obj):
    """The autograd Function base class ``obj`` derives from, and its engine."""
    from adcheck.refengine.autograd import Function
    if issubclass(obj, Function):
        return Function, "refengine"
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(obj, torch.autograd.Function):
        return torch.autograd.Function, "torch"
    return None, None


def _jax_kind(obj) -> tuple[str, bool] | None:
    """``(kind, has_jvp)`` for a JAX function object, else ``None`` (jax is not
    imported for that: such an object's type comes from a loaded jax module)."""
    if type(obj).__module__.partition(".")[0] not in ("jax", "jaxlib") or not callable(obj):
        return None
    jax = sys.modules["jax"]
    if isinstance(obj, jax.custom_vjp):
        return "jax custom_vjp", False     # JAX cannot take a jvp through a custom_vjp
    if isinstance(obj, jax.custom_jvp):
        return "jax custom_jvp", True
    return "jax function", True


def _required(func, skip_ctx: bool) -> tuple | None:
    """The names of ``func``'s required positional parameters (without ``ctx``),
    or ``None`` when neither its signature nor its documented one tells."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = _documented(func)
        if params is None:
            return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    return tuple(positional[1:] if skip_ctx else positional)


def _documented(func) -> list | None:
    """The parameters of a compiled function (torch's ``sin``, ``gelu``, which
    have no signature Python can read) as the first line of its docstring
    writes them, ``gelu(input, approximate = 'none') -> Tensor``, when that line
    names the function; else ``None``."""
    line = (getattr(func, "__doc__", None) or "").strip().partition("\n")[0]
    name, paren, rest = line.partition("(")
    own = getattr(func, "__name__", None)
    if not paren or not own or not name.strip() or \
            not own.endswith(name.strip().rpartition(".")[2]):
        return None
    depth = 0
    for end, char in enumerate(rest):   # (the closing parenthesis of the parameters)
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if depth < 0:
            break
    else:
        return None
    try:
        tree = ast.parse(f"def f({rest[:end]}): pass")
    except SyntaxError:
        return None
    arguments = tree.body[0].args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    if hasattr(func, "__objclass__"):   # a method of a class (``Tensor.sin``): ``sin() -> Tensor``
        positional, first_default = ["self", *positional], first_default + 1
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [inspect.Parameter(a, kind) if k < first_default else
            inspect.Parameter(a, kind, default=None) for k, a in enumerate(positional)]


def own_engine(obj) -> str | None:
    """The engine a function belongs to by where it is defined (torch's own
    ``sin`` or ``nn.functional.gelu``: torch; ``jax.nn.gelu``: jax;
    refengine's: refengine), which no other engine's tensors run through;
    ``None`` for a function of the user's."""
    module = getattr(obj, "__module__", None) or \
        getattr(getattr(obj, "__objclass__", None), "__module__", None) or ""
    if module.startswith("adcheck.refengine"):
        return "refengine"
    package = module.partition(".")[0]
    return "torch" if package == "torch" else "jax" if package in ("jax", "jaxlib") else None


def _arity(func, skip_ctx: bool) -> int | None:
    names = _required(func, skip_ctx)
    return None if names is None else len(names)


#: the top-level packages whose tensors each engine checks
_ENGINE_PACKAGES = {"jax": "jax", "jaxlib": "jax", "torch": "torch", "adcheck": "refengine"}


def engines_used(func, _seen: set | None = None) -> set:
    """The engines whose modules or functions ``func``'s own code names (``jnp.sin``:
    jax; ``torch.exp``: torch; ``adcheck.refengine``: refengine), also through
    the classes it names (a ``torch.autograd.Function`` or ``nn.Module``
    subclass of the user's: its bases) and the functions of its own module it
    calls (a helper beside it), and in the code nested in it (a lambda)."""
    code, names = getattr(func, "__code__", None), getattr(func, "__globals__", None)
    if code is None or names is None:
        return set()
    seen = _seen if _seen is not None else set()
    seen.add(id(func))
    used = set()
    for name in _names(code):
        value = names.get(name)
        if inspect.isfunction(value) and value.__module__ == func.__module__:
            if id(value) not in seen:
                used |= engines_used(value, seen)
            continue
        classes = value.__mro__ if inspect.isclass(value) else (value,)
        for each in classes:
            module = each.__name__ if inspect.ismodule(each) else getattr(each, "__module__", None)
            package = (module or "").partition(".")[0]
            if package == "adcheck" and not (module or "").startswith("adcheck.refengine"):
                continue
            if package in _ENGINE_PACKAGES:
                used.add(_ENGINE_PACKAGES[package])
    return used


def _names(code) -> set:
    """The global names ``code`` and the code nested in it read."""
    found = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            found |= _names(const)
    return found


def engine_hint(target: "Target", engine: str) -> str | None:
    """Why a plain function looks written for another engine than ``engine``
    (its code names that engine's modules only), with the option to give; else
    ``None``."""
    if target.kind != "function" or own_engine(target.func) is not None:
        return None
    used = engines_used(target.func)
    if len(used) != 1 or engine in used:
        return None
    (other,) = used
    return (f"{target.spec} calls {other} functions, but plain functions are checked on "
            f"--engine {engine} unless told; add --engine {other}")


#: the words of a torch operation that has no forward-mode formula (the CPU kernel
#: of scaled_dot_product_attention on 4-d inputs): no jvp the user can add
NO_BUILT_IN_RULE = "Trying to use forward AD with"
#: how each engine says that a Function, or a JAX custom_vjp, has no forward-mode
#: rule, or that one of its own operations has none
NO_FORWARD_RULE = ("You must implement the jvp function",
                   "can't apply forward-mode autodiff (jvp) to a custom_vjp function",
                   NO_BUILT_IN_RULE)


def no_forward_rule(exc: BaseException) -> str | None:
    """The engine's words when ``exc`` (or what caused it) says that code under
    check has no forward-mode rule (a Function without jvp, a custom_vjp, a
    jvp of the user's that raises NotImplementedError, as torch's default
    one does), else ``None``. Asked of a forward-mode check's error only."""
    while exc is not None:
        text = " ".join(str(exc).split())
        if isinstance(exc, NotImplementedError) and not text:
            return "NotImplementedError, raised by a jvp not written yet"
        if isinstance(exc, NotImplementedError) or (isinstance(exc, TypeError) and any(
                words in text for words in NO_FORWARD_RULE)):
            return f"{type(exc).__name__}: {text}"
        exc = exc.__cause__
    return None


def _module_kind(obj) -> str | None:
    from adcheck.gradcheck.core.modules import module_kind
    return module_kind(obj)


def _is_module_class(obj) -> bool:
    from adcheck.refengine import nn
    torch = sys.modules.get("torch")
    return issubclass(obj, nn.Module) or (
        torch is not None and issubclass(obj, torch.nn.Module))


def seed_engines(seed: int) -> None:
    """Seed the generators a module's initial weights come from (torch's if loaded)."""
    from adcheck import refengine
    refengine.manual_seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def _built(obj, text: str, seed: int):
    """The module ``obj`` (a module class, or a factory) builds; ``None`` when
    ``obj`` is a function that takes arguments (a function to check)."""
    if not isinstance(obj, type) and _arity(obj, skip_ctx=False) != 0:
        return None
    seed_engines(seed)
    try:
        built = obj()
    except FAULTS as exc:
        what = "constructing" if isinstance(obj, type) else "calling"
        hint = (" it needs constructor arguments: point MODULE:OBJECT at a function of no "
                "argument that builds it (def make(): return MyLayer(3, 4))"
                if isinstance(obj, type) and isinstance(exc, TypeError) else
                " fix it so that it builds the module")
        raise TargetError(f"{what} {text.split(':')[1]}() raised {type(exc).__name__}: "
                          f"{exc};{hint}") from None
    if _module_kind(built) is None:
        raise TargetError(f"{text} takes no argument, so there is nothing to differentiate; a "
                          f"function of no argument must return an nn.Module (it returned "
                          f"a {type(built).__name__})")
    return built


def _module_target(text: str, module) -> Target:
    kind = _module_kind(module)
    return Target(text, type(module).__name__, module, f"{kind} Module", kind, True,
                  _arity(module.forward, skip_ctx=False),
                  _required(module.forward, skip_ctx=False) or ())


def resolve(text: str, engine: str = "refengine", seed: int = 0) -> Target:
    """Import ``MODULE:OBJECT`` and classify it; ``engine`` is that of a plain
    function ("refengine", "torch" or "jax"); ``seed`` seeds the engines before
    a module is built."""
    obj = load_object(text)
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str) or name.startswith("<"):
        # (a lambda, or jax.jit of one, kept under a name: named as asked, not "<lambda>")
        name = text.split(":")[1].rpartition(".")[2]
    if _module_kind(obj) is not None:
        return _module_target(text, obj)
    if (isinstance(obj, type) and _is_module_class(obj)) or (
            callable(obj) and not isinstance(obj, type) and _jax_kind(obj) is None):
        module = _built(obj, text, seed)
        if module is not None:
            return _module_target(text, module)
    if isinstance(obj, type):
        base, fn_engine = _function_base(obj)
        if base is None:
            raise TargetError(f"{text} is a class but not an autograd Function nor an "
                              "nn.Module; give a refengine or torch autograd.Function or "
                              "nn.Module subclass, or a function")
        has_jvp = obj.jvp is not base.jvp
        uses_ctx = obj.setup_context is base.setup_context
        return Target(text, name, obj.apply, f"{fn_engine} Function", fn_engine, has_jvp,
                      _arity(obj.forward, skip_ctx=uses_ctx),
                      _required(obj.forward, skip_ctx=uses_ctx) or ())
    jax_kind = _jax_kind(obj)
    if jax_kind is not None:
        kind, has_jvp = jax_kind
        return Target(text, name, obj, kind, "jax", has_jvp, _arity(obj, skip_ctx=False),
                      _required(obj, skip_ctx=False) or ())
    if not callable(obj):
        raise TargetError(f"{text} is a {type(obj).__name__}, not a function or an autograd "
                          "Function; point MODULE:OBJECT at one")
    own = own_engine(obj)
    # (named as asked: torch.linalg.det's compiled function calls itself linalg_det)
    if own in ("torch", "jax"):
        name = text.split(":")[1].rpartition(".")[2]
    return Target(text, name, obj, "function", own or engine, True,
                  _arity(obj, skip_ctx=False), _required(obj, skip_ctx=False) or ())


def source_module(text: str):
    """The module ``MODULE:OBJECT`` is found in (a file already loaded by
    ``resolve`` is not run again: ``_import_file`` keeps it by its path, where
    a lookup by its name would find another file of the same name loaded in
    this process), e.g. for its ``example_inputs()``."""
    return _import(text.split(":")[0])
"""Recording the custom Functions a model applies during one forward.

``Recorder`` is a context manager: while it is open, every application of a
user's ``torch.autograd.Function``, ``torch.library`` custom op or refengine
``Function`` is recorded as an ``Application``: copies of its arguments taken
before the call (so a Function that mutates its inputs is recorded at the
inputs it was given), which of them required grad, which are the model's
parameters (by name), whether grad mode was on, how deeply it was nested in
another recorded Function, and the dotted module path of the submodule whose
``forward`` applied it. It patches ``Function.apply`` of each engine that is
imported and wraps the ``forward`` of each submodule of the model (an
instance attribute, removed on exit), so the model's classes are never
touched and everything is as it was once the block ends.

``ModelState`` takes and puts back what a forward may change in a model: its
parameters and their ``.grad``, its buffers (a BatchNorm's running
statistics), its training flags and the engines' random generators.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field

import numpy as np

from adcheck.gradcheck.harvest import aliases
from adcheck.gradcheck.harvest.closures import closed_over

#: the module path of the model itself (its own ``forward``), as names show it
ROOT = "(root)"


def namespace(value):
    """The engine module of a tensor (torch or refengine), else ``None``."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return torch
    E = sys.modules.get("adcheck.refengine")
    if E is not None and isinstance(value, E.Tensor):
        return E
    return None


def fresh(value):
    """``value`` with its dicts, lists, sets and tuples copied, at every level, their
    contents shared: a Function's options as the model passed them, each call
    its own. xitorch's solvers ``pop`` their ``method`` from the options dict
    they are handed, so the dict recorded by reference was empty by the
    check's first call (``KeyError``: none of them could be checked)."""
    if type(value) is dict:
        return {k: fresh(v) for k, v in value.items()}
    if type(value) in (list, set, tuple):
        return type(value)(fresh(v) for v in value)
    return value


def _bases() -> list:
    """``[(engine name, Function base class)]`` of the engines imported."""
    found = []
    torch = sys.modules.get("torch")
    if torch is not None:
        found.append(("torch", torch.autograd.Function))
    if "adcheck.refengine" in sys.modules:
        from adcheck.refengine.autograd import Function
        found.append(("refengine", Function))
    return found


def _own(cls) -> bool:
    """Whether ``cls`` is the user's Function, not one the engines use inside."""
    module = getattr(cls, "__module__", "") or ""
    return not module.startswith(("torch.", "adcheck.refengine", "functorch"))


def _reentrant_checkpoint(cls) -> bool:
    """Whether ``cls`` is ``torch.utils.checkpoint(..., use_reentrant=True)``'s Function."""
    return (getattr(cls, "__name__", "") == "CheckpointFunction"
            and getattr(cls, "__module__", "") == "torch.utils.checkpoint")


def _outside_transforms(t):
    """``t`` as a plain tensor where torch.func transforms wrap it (``vmap``, ``grad``,
    ``jvp``): under vmap its first example, whose values a check can use after the
    transform ends (the wrappers are dead then, and have no storage to copy). Call
    it within ``_no_transforms()``: an op on a plain tensor in a transform is
    wrapped again."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(t, torch.Tensor):
        return t
    F = torch._C._functorch
    while F.is_functorch_wrapped_tensor(t):
        bdim = F.maybe_get_bdim(t) if F.is_batchedtensor(t) else -1
        t = F.get_unwrapped(t)
        if bdim >= 0:
            t = t.select(bdim, 0)
    return t


def _no_transforms():
    """A block in which torch's operations see no torch.func transform."""
    torch = sys.modules.get("torch")
    return contextlib.nullcontext() if torch is None else torch._C._DisableFuncTorch()


def _transformed(args) -> bool:
    """Whether any of ``args`` is a tensor wrapped by a torch.func transform."""
    torch = sys.modules.get("torch")
    return torch is not None and any(isinstance(a, torch.Tensor) and
                                     torch._C._functorch.is_functorch_wrapped_tensor(a)
                                     for a in args)


def _array(t):
    """A tensor's values as a NumPy array (torch's half types widened first)."""
    t = t.detach()
    if hasattr(t, "cpu"):
        t = t.cpu()
    if str(getattr(t, "layout", "torch.strided")) != "torch.strided":
        t = t.to_dense()   # (a sparse adjacency a graph layer's Function takes)
    if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
        t = t.float()
    return np.asarray(t.numpy())


def _changed(before, after) -> bool:
    """Whether a tensor's values differ from its copy (NaN equal to NaN)."""
    a, b = _array(before), _array(after)
    inexact = np.issubdtype(a.dtype, np.inexact)
    return a.shape != b.shape or not np.array_equal(a, b, equal_nan=inexact)


@dataclass
class Application:
    """One call of a custom Function inside the model (see the module docstring).

    ``args``/``kwargs`` hold detached copies of the tensors, taken before the
    call, and the other arguments as given; ``requires_grad[i]`` is None for
    an argument that is not a tensor; ``params[i]`` names the model's
    parameter (or buffer) passed as argument ``i``; ``depth`` is 0 for a
    Function the model applied, more for one applied inside another's
    forward; ``mutated`` lists the arguments the call changed in place;
    ``extra_outputs`` the positions of outputs that are not tensors."""

    path: str
    cls: object
    kind: str
    engine: str
    args: tuple
    kwargs: dict
    requires_grad: tuple
    params: dict
    grad_enabled: bool
    depth: int
    mutated: tuple = ()
    #: the arguments that are the model's constants: its buffers, its frozen parameters
    constants: tuple = ()
    extra_outputs: tuple = ()
    outputs: int = 0
    out_nodes: list = field(default_factory=list, repr=False)
    output_requires_grad: bool = False
    #: the model, where an argument is one of its parameters (``calls.AsParameters``)
    model: object = field(default=None, repr=False)
    #: applied in a reentrant checkpoint's forward, which runs under no_grad and
    #: is run again with grad by its backward: the gradient flows through it there
    checkpointed: bool = False
    #: applied inside a torch.func transform (``vmap``, ``grad``): recorded at the
    #: values of its first example, outside the transform
    transformed: bool = False
    #: callable arguments that hold tensor arguments themselves, ``{callable
    #: position: {id(tensor): tensor position}}`` (``closures.closed_over``)
    closed: dict = field(default_factory=dict, repr=False)

    @property
    def class_name(self) -> str:
        return getattr(self.cls, "__name__", str(self.cls))

    @property
    def name(self) -> str:
        """``PATH:Class``, as every report names this Function."""
        return f"{self.path}:{self.class_name}"

    def shapes(self) -> tuple:
        """The shapes of its tensor arguments: samples of one op differ in them."""
        return tuple(tuple(a.shape) for a in self.args
                     if namespace(a) is not None or is_jax_array(a))


class ForwardError(Exception):
    """The model's forward raised; ``path`` is the submodule it raised in."""

    def __init__(self, exc: BaseException, path: str):
        super().__init__(f"the model's forward raised {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())} (in {path})")
        self.cause, self.path = exc, path


class Recorder:
    """Record the custom Functions applied while the block runs (module docstring).

    ``model``: the nn.Module whose submodules name the paths (``None`` for a
    plain function, whose applications are at ``root``)."""

    def __init__(self, model=None, root: str = ROOT):
        self.model, self.root = model, root
        self.applications: list = []
        self.stack: list = []
        self.depth = 0
        #: how many reentrant checkpoints' forwards are running (``Application.checkpointed``)
        self.checkpointed = 0
        self.raised_at: str | None = None
        self._patched: list = []
        self._wrapped: list = []
        #: ``F.apply`` aliases rebound while recording (``aliases.rebind``)
        self._aliases: list = []
        self._mode = None
        self._params = {}
        #: the ids of the model's constants: its buffers (state, filters, masks) and
        #: the parameters it freezes (requires_grad=False)
        self._constants: set = set()
        if model is not None:
            self._params = {id(t): n for n, t in model.named_buffers()}
            parameters = list(model.named_parameters())
            self._params.update({id(t): n for n, t in parameters})
            self._constants = ({id(t) for _, t in model.named_buffers()}
                               | {id(t) for _, t in parameters if not t.requires_grad}) \
                - {id(t) for _, t in parameters if t.requires_grad}

    @property
    def path(self) -> str:
        return self.stack[-1] if self.stack else self.root

    def __enter__(self):
        originals = []
        for engine, base in _bases():
            original = base.__dict__["apply"]
            base.apply = classmethod(self._apply_wrapper(original.__func__, engine))
            self._patched.append((base, "apply", original))
            originals.append(original.__func__)
        # (F.apply taken before the patch, as my_op = F.apply: recorded too)
        self._aliases = aliases.rebind(tuple(originals), _own, self.model)
        self._patched += _jax_patches(self)
        self._mode = _custom_op_mode(self)
        if self._mode is not None:
            self._mode.__enter__()
        if self.model is not None:
            for name, module in self.model.named_modules():
                self._wrap_forward(module, name or self.root)
        return self

    def __exit__(self, *exc_info):
        aliases.restore(self._aliases)
        self._aliases = []
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        for owner, attribute, original in self._patched:
            setattr(owner, attribute, original)
        for module, own in self._wrapped:
            if own is None:
                del module.forward
            else:
                module.forward = own
        self._patched, self._wrapped = [], []
        return False

    def _wrap_forward(self, module, path: str) -> None:
        own = module.__dict__.get("forward")
        forward = module.forward
        recorder = self

        def recorded_forward(*args, **kwargs):
            recorder.stack.append(path)
            try:
                return forward(*args, **kwargs)
            except BaseException:
                if recorder.raised_at is None:     # the innermost module sees it first
                    recorder.raised_at = path
                raise
            finally:
                recorder.stack.pop()
        self._wrapped.append((module, own))
        module.forward = recorded_forward

    def _apply_wrapper(self, original, engine: str):
        recorder = self

        def apply(cls, *args, **kwargs):
            if not _own(cls):
                if not _reentrant_checkpoint(cls):
                    return original(cls, *args, **kwargs)
                recorder.checkpointed += 1
                try:
                    return original(cls, *args, **kwargs)
                finally:
                    recorder.checkpointed -= 1
            return recorder.record_call(cls, engine, f"{engine} Function",
                                        lambda: original(cls, *args, **kwargs), args, kwargs)
        return apply

    def record_call(self, cls, engine: str, kind: str, call, args, kwargs):
        """``call()``, recorded as an application of ``cls`` to ``args``."""
        entry = self._before(cls, engine, kind, args, kwargs)
        self.depth += 1
        try:
            out = call()
        finally:
            self.depth -= 1
        self._after(entry, args, out)
        return out

    def _before(self, cls, engine: str, kind: str, args, kwargs) -> Application:
        E = next((namespace(a) for a in args if namespace(a) is not None), None)
        with _no_transforms():
            copies = tuple(_outside_transforms(a).detach().clone()
                           if namespace(a) is not None else fresh(a) for a in args)
        grads = tuple(bool(a.requires_grad) if namespace(a) is not None else None for a in args)
        params = {i: self._params[id(a)] for i, a in enumerate(args) if id(a) in self._params}
        enabled = True if E is None else bool(E.is_grad_enabled())
        checkpointed = not enabled and self.checkpointed > 0
        entry = Application(self.path, cls, kind, engine, copies, fresh(dict(kwargs)), grads,
                            params, enabled or checkpointed, self.depth,
                            constants=tuple(i for i, a in enumerate(args)
                                            if id(a) in self._constants),
                            model=self.model if params else None, checkpointed=checkpointed,
                            transformed=_transformed(args),
                            closed=closed_over(args, lambda a: namespace(a) is not None))
        self.applications.append(entry)
        return entry

    def _after(self, entry: Application, args, out) -> None:
        with _no_transforms():
            entry.mutated = tuple(i for i, (a, c) in enumerate(zip(args, entry.args))
                                  if namespace(a) is not None
                                  and _changed(_outside_transforms(a).detach(), c))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        entry.extra_outputs = tuple(i for i, o in enumerate(outs)
                                    if namespace(o) is None and not is_jax_array(o))
        entry.outputs = len(outs)
        entry.out_nodes = [o.grad_fn for o in outs
                           if namespace(o) is not None and o.grad_fn is not None]
        entry.output_requires_grad = any(namespace(o) is not None and o.requires_grad
                                         for o in outs)


#: one stand-in class per torch.library custom op (``custom_op_class``)
_OP_CLASSES: dict = {}


def custom_op_class(func):
    """A stand-in Function class for a ``torch.library.custom_op`` with a
    registered autograd formula (``apply`` calls the op, ``forward`` has its
    signature), or ``None`` for any other op."""
    torch = sys.modules["torch"]
    if isinstance(func, torch._ops.OpOverloadPacket):
        func = getattr(func, "default", None)
    if not isinstance(func, torch._ops.OpOverload):
        return None
    qualname = func._schema.name
    opdef = torch._library.custom_ops.OPDEFS.get(qualname)
    if opdef is None or opdef._backward_fn is None:
        return None
    if qualname not in _OP_CLASSES:
        _OP_CLASSES[qualname] = type(qualname.replace("::", "."), (), {
            "apply": staticmethod(func), "forward": staticmethod(opdef._init_fn),
            "custom_op": func,
            "__module__": "torch.library custom op", "__doc__": f"the custom op {qualname}"})
    return _OP_CLASSES[qualname]


def _custom_op_mode(recorder):
    """A ``TorchFunctionMode`` recording the custom ops called (``None`` without torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    from torch.overrides import TorchFunctionMode

    class CustomOps(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            cls = custom_op_class(func)
            if cls is None:
                return func(*args, **kwargs)
            return recorder.record_call(cls, "torch", "torch custom op",
                                        lambda: func(*args, **kwargs), args, kwargs)
    return CustomOps()


def is_jax_array(value) -> bool:
    """Whether ``value`` is a JAX array (or a tracer of one)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(value, (jax.Array, jax.core.Tracer))


#: one stand-in class per JAX custom_vjp / custom_jvp object (``jax_function_class``)
_JAX_CLASSES: dict = {}


def jax_function_class(function, kind: str):
    """A stand-in Function class for a ``jax.custom_vjp``/``custom_jvp`` object:
    ``apply`` calls it, ``forward`` has its signature, ``_harvest_jvp`` says
    whether forward mode can be checked (a custom_jvp)."""
    key = id(function)
    if key not in _JAX_CLASSES:
        fun = getattr(function, "fun", function)
        _JAX_CLASSES[key] = (function, type(getattr(fun, "__name__", "custom"), (), {
            "apply": staticmethod(function), "forward": staticmethod(fun),
            "__module__": kind, "_harvest_jvp": kind.endswith("custom_jvp")}))
    return _JAX_CLASSES[key][1]


def _jax_patches(recorder) -> list:
    """Patch the calls of JAX's custom_vjp and custom_jvp objects (when JAX is
    imported) to record them; ``[(owner, attribute, original)]``."""
    jax = sys.modules.get("jax")
    if jax is None:
        return []
    patched = []
    for kind, owner in (("jax custom_vjp", jax.custom_vjp), ("jax custom_jvp", jax.custom_jvp)):
        original = owner.__dict__["__call__"]

        def call(self, *args, _original=original, _kind=kind, **kwargs):
            return recorder.record_call(jax_function_class(self, _kind), "jax", _kind,
                                        lambda: _original(self, *args, **kwargs), args, kwargs)
        owner.__call__ = call
        patched.append((owner, "__call__", original))
    return patched


def reachable(outputs) -> set:
    """The ids of the autograd nodes the outputs' gradients flow through."""
    seen: set = set()
    todo = [o.grad_fn for o in outputs if namespace(o) is not None and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        todo.extend(child for child, _ in getattr(node, "next_functions", ()))
    return seen


class ModelState:
    """What a forward may change in a model, taken now and put back by ``restore``."""

    def __init__(self, model):
        self.model = model
        self.tensors, self.grads, self.modes = [], [], []
        if model is not None:
            for _, t in list(model.named_parameters()) + list(model.named_buffers()):
                self.tensors.append((t, t.detach().clone()))
                grad = getattr(t, "grad", None)
                self.grads.append((t, None if grad is None else grad.detach().clone()))
            self.modes = [(m, m.training) for m in model.modules()]
        self.rng = _rng_states()

    def restore(self) -> None:
        for tensor, saved in self.tensors:
            E = namespace(tensor)
            with E.no_grad():
                if _changed(tensor.detach(), saved):
                    tensor.copy_(saved)
        for tensor, grad in self.grads:
            tensor.grad = grad
        for module, mode in self.modes:
            module.training = mode
        _set_rng_states(self.rng)


def _rng_states() -> dict:
    states = {}
    torch = sys.modules.get("torch")
    if torch is not None:
        states["torch"] = torch.get_rng_state()
    return states


def _set_rng_states(states: dict) -> None:
    if "torch" in states:
        sys.modules["torch"].set_rng_state(states["torch"])

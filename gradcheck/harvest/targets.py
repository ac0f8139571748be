"""Recorded applications as checks: one ``HarvestedOp`` per ``PATH:Class``.

Each op holds up to ``max_shapes`` samples, one per distinct set of input
shapes seen at that path (the first call of each). A ``Sample`` is what
``check`` takes: a function of the tensors to differentiate (the others, and
the non-tensor arguments, held as the model passed them), those tensors, a
name per input (the model's parameter name where the model passed one of
its parameters, else the argument's name in ``forward``) and notes. The
tensors are double-precision copies (float64, complex128) when the Function
runs in double precision, else copies in the dtype the model used (the check
then applies its low-precision rules, and the notes say so).

Differentiated: the floating point tensors that required grad when the
model applied the Function, or every floating point tensor when none did (a
Function applied to constants, or inside another Function's forward).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from adcheck.gradcheck.harvest.calls import Sample, _argument_names, _function, _notes
from adcheck.gradcheck.harvest.recording import Application, namespace

#: how many distinct input shapes of one op are checked, by default
MAX_SHAPES = 2


@dataclass
class HarvestedOp:
    """A Function applied at one module path: ``name`` is ``PATH:Class``;
    ``calls`` counts its applications; ``samples`` one per distinct shape set."""

    name: str
    path: str
    cls: object
    kind: str
    engine: str
    has_jvp: bool
    calls: int = 0
    samples: list = field(default_factory=list)
    applications: list = field(default_factory=list, repr=False)


def has_jvp(cls) -> bool:
    """Whether a Function class overrides ``jvp`` (forward mode can be checked)."""
    if hasattr(cls, "_harvest_jvp"):     # a JAX custom_jvp / custom_vjp stand-in
        return cls._harvest_jvp
    for base in cls.__mro__[1:]:
        if "jvp" in base.__dict__ and base.__module__.startswith(("torch", "adcheck")):
            return cls.jvp is not base.jvp
    return False


def group(applications: list, max_shapes: int = MAX_SHAPES) -> list:
    """The ``HarvestedOp``s of the applications, in the order first applied."""
    ops: dict = {}
    for app in applications:
        op = ops.get(app.name)
        if op is None:
            op = ops[app.name] = HarvestedOp(app.name, app.path, app.cls, app.kind, app.engine,
                                             has_jvp(app.cls))
        op.calls += 1
        kept = [a.shapes() for a in op.applications]
        if app.shapes() in kept:
            i = kept.index(app.shapes())
            if unchecked(op.applications[i]) and not unchecked(app):
                # a call the gradient flows through is the sample to check
                op.applications[i], op.samples[i] = app, sample(app)
        elif len(op.applications) < max_shapes:
            op.applications.append(app)
            op.samples.append(sample(app))
    return list(ops.values())


def unchecked(app: Application) -> bool:
    """Whether the model applied it under no_grad (such a call is not checked)."""
    return not app.grad_enabled and app.depth == 0


def _widen(t):
    E = namespace(t)
    if t.is_complex():
        return t.to(E.complex128)
    if t.is_floating_point():
        return t.to(E.float64)
    return t


def _positions(app: Application) -> list:
    """The arguments differentiated: those that required grad in the model; where
    none did (a model run on inputs that do not), its floating point ones but the
    model's constants (buffers and frozen parameters: a wavelet's filters, a
    running mean, whose gradient a Function rightly leaves None), unless every
    floating point one is such a constant. In a reentrant checkpoint's forward,
    where only the model's parameters still require grad (under no_grad), the
    rule of none: its backward runs it again on inputs that do."""
    floating = [i for i, a in enumerate(app.args)
                if namespace(a) is not None and (a.is_floating_point() or a.is_complex())]
    wanted = [] if app.checkpointed else [i for i in floating if app.requires_grad[i]]
    return wanted or [i for i in floating if i not in app.constants] or floating


def _runs_double(func, inputs) -> str | None:
    """``None`` when ``func`` runs at the double-precision ``inputs`` and answers
    in double precision, else why not."""
    try:
        out = func(*inputs)
    except Exception as exc:  # noqa: BLE001 - the user's code: any error says it does not
        return f"it raises {type(exc).__name__} in double precision ({exc})"
    outs = out if isinstance(out, (tuple, list)) else (out,)
    narrow = [str(o.dtype) for o in outs if namespace(o) is not None
              and (o.is_floating_point() or o.is_complex())
              and o.dtype not in (namespace(o).float64, namespace(o).complex128)]
    return f"given double-precision inputs it answers in {narrow[0]}" if narrow else None


def sample(app: Application) -> Sample:
    """The ``Sample`` of one application (see the module docstring)."""
    if app.engine == "jax":
        from adcheck.gradcheck.harvest.jaxsample import jax_sample
        return jax_sample(app)
    positions = _positions(app)
    tensors = _tensor_arguments(app, positions)
    arg_names = _argument_names(app.cls, len(app.args))
    names = tuple(app.params.get(i, arg_names[i]) for i in tensors)
    shapes = ", ".join(str(tuple(app.args[i].shape)) for i in positions)
    notes = _notes(app)
    skip = _skip_reason(app, positions)
    if skip is not None:
        return Sample(None, (), names, shapes, "", notes, skip)
    copy_inputs = bool(app.mutated)
    wide = [_widen(a) if namespace(a) is not None else a for a in app.args]
    func = _function(app, wide, tensors, copy_inputs, swapped=positions)
    inputs = _inputs(wide, tensors, positions, clone=False)
    # (one that raises on inputs already double raises whatever their dtype: its
    # check says so, not that it "does not run in double precision")
    why = _runs_double(func, inputs) if any(w is not a for w, a in zip(wide, app.args)) else None
    if why is not None:
        narrow = list(app.args)
        func = _function(app, narrow, tensors, copy_inputs, swapped=positions)
        inputs = _inputs(narrow, tensors, positions, clone=True)
        notes.append(f"does not run in double precision ({why}): checked in "
                     f"{narrow[positions[0]].dtype} with the low-precision rules")
    dtype = "+".join(dict.fromkeys(str(inputs[tensors.index(i)].dtype).replace("torch.", "")
                                   .rsplit(".", 1)[-1] for i in positions))
    return Sample(func, inputs, names, shapes, dtype, notes, narrow=why is not None)


def _tensor_arguments(app: Application, positions: list) -> list:
    """The positions of the arguments that are the check's inputs: every tensor
    argument, those not differentiated without requires_grad, so that a
    failure's "input k" is the k-th tensor the Function takes, as its signature
    and the whole model's check count them. Only ``positions`` where a tensor
    not differentiated is one the check could not copy through NumPy (sparse,
    nested, a subclass, off the CPU): it is then held as the model passed it."""
    tensors = [i for i, a in enumerate(app.args) if namespace(a) is not None]
    if all(i in positions or _plain(app.args[i]) for i in tensors):
        return tensors
    return list(positions)


def _plain(t) -> bool:
    """A dense CPU tensor of the engine's own class (a torch ``Parameter`` too)."""
    E = namespace(t)
    if E.__name__ != "torch":
        return type(t) is E.Tensor
    return type(t) in (E.Tensor, E.nn.Parameter) and t.layout == E.strided and \
        t.device.type == "cpu" and not t.is_nested and not t.is_quantized


def _inputs(args: list, tensors: list, positions: list, clone: bool) -> tuple:
    """The check's inputs: the tensor arguments, detached (cloned with
    ``clone``), those at ``positions`` requiring grad."""
    found = []
    for i in tensors:
        t = args[i].detach()
        t = t.clone() if clone else t
        found.append(t.requires_grad_(True) if i in positions else t)
    return tuple(found)


def _skip_reason(app: Application, positions: list) -> str | None:
    if unchecked(app):
        where = f" in {app.path}" if app.path else ""
        return (f"applied under no_grad{where}: no gradient flows through it, so it is "
                "not checked")
    if not positions:
        return "it takes no floating point tensor, so there is nothing to differentiate"
    if len(app.extra_outputs) == app.outputs:
        return "it returns no tensor, so there is nothing to differentiate"
    return None

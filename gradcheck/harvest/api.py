"""``harvest(model_or_fn, inputs, **check_options)``: each custom Function of a
model checked at the inputs the model feeds it.

One forward of the model runs under a ``Recorder``; each application is
grouped into a ``HarvestedOp`` named ``PATH:Class`` (``targets``); each
sample is checked with ``check`` (reverse mode, forward mode too where the
Function has a jvp, ``order=2`` where asked); the model's own state is put
back afterwards. Then the whole model is checked (probed: ``MODEL_CHECK``), and when it
fails the ``Harvest`` says which Functions fail on their own or, when none
does, what in their composition may be wrong (``localise``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from adcheck.gradcheck.api import check
from adcheck.gradcheck.core.modules import module_function, module_kind
from adcheck.gradcheck.errors import GradcheckError, SteppedOffError, UncheckableError
from adcheck.gradcheck.harvest.recording import (
    ROOT,
    ForwardError,
    ModelState,
    Recorder,
    is_jax_array,
    namespace,
    reachable,
)
from adcheck.gradcheck.harvest.calls import settle
from adcheck.gradcheck.harvest.targets import MAX_SHAPES, group


class NothingHarvested(ValueError):
    """The model's forward applied no custom Function."""


@dataclass
class Recording:
    """What one forward applied (``applications``) and what it returned."""

    applications: list
    outputs: tuple
    ops: list = field(default_factory=list)


def _as_tuple(inputs) -> tuple:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def record(model_or_fn, inputs, max_shapes: int = MAX_SHAPES) -> Recording:
    """Run ``model_or_fn(*inputs)`` once, recording its custom Functions; the
    model's parameters, buffers, gradients and training flags are as they were
    afterwards. Raises ``ForwardError`` naming the submodule where it raised."""
    is_module = module_kind(model_or_fn) is not None
    model = model_or_fn if is_module else None
    root = ROOT if is_module else getattr(model_or_fn, "__name__", ROOT)
    state = ModelState(model)
    recorder = Recorder(model, root)
    try:
        with recorder:
            out = model_or_fn(*_as_tuple(inputs))
    except Exception as exc:  # noqa: BLE001 - the user's model: any error is reported
        raise ForwardError(exc, recorder.raised_at or root) from exc
    finally:
        state.restore()
    outputs = out if isinstance(out, (tuple, list)) else (out,)
    found = Recording(recorder.applications, tuple(outputs))
    found.ops = group(recorder.applications, max_shapes)
    return found


@dataclass
class Harvest:
    """The harvested Functions and their checks.

    ``reports[name]``: one ``Report`` per checked sample of op ``name``
    (``PATH:Class``); ``skipped[name]``: why an op or a sample was not checked;
    ``errors[name]``: what a check raised; ``notes[name]``: what else to know
    (low precision, in-place writes, nesting); ``model``: the whole model's
    ``Report`` (probed, with its escape odds) (``None`` when not checked); ``localisation``: what the
    whole model's failure comes from."""

    ops: list
    reports: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    model: object = None
    localisation: str | None = None
    composition: list = field(default_factory=list)

    def failing(self, order: int | None = None) -> list:
        """The names of the ops whose check failed or raised (``order``: whose
        check of that order failed; one that raised counts at every order)."""
        bad = [n for n, reports in self.reports.items()
               if any(not r.passed and order in (None, r.order) for r in reports)]
        return bad + [n for n in self.errors if n not in bad]

    @property
    def passed(self) -> bool:
        return not self.failing()

    def message(self) -> str:
        """One line per op (its verdict), the failures' reports, the localisation."""
        lines = []
        for op in self.ops:
            name = op.name
            verdict = ("FAILED" if name in self.failing() else
                       "passed" if self.reports.get(name) else "skipped")
            lines.append(f"{verdict:8}{name}  ({op.calls} call{'s' if op.calls > 1 else ''})")
            lines += [f"        note: {n}" for n in self.notes.get(name, [])]
            if name in self.skipped:
                lines.append(f"        not checked: {self.skipped[name]}")
            if name in self.errors:
                lines.append(f"        error: {self.errors[name]}")
            lines += ["        " + line for r in self.reports.get(name, []) if not r.passed
                      for line in r.message().splitlines()]
        if self.localisation:
            lines.append(self.localisation)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.message()


def harvest(model_or_fn, inputs, *, max_shapes: int = MAX_SHAPES, model_check: bool = True,
            **check_options) -> Harvest:
    """Check each custom Function ``model_or_fn(*inputs)`` applies, at the inputs
    it applies it to; returns a ``Harvest`` (one ``Report`` per Function and
    input shape, ``Harvest.reports``).

    ``model_or_fn``: a torch or refengine ``nn.Module`` (Functions named by the
    module path of the submodule that applied them, ``blocks.1.mlp.act:GeluFn``;
    ``(root)`` for the model's own forward) or a function (named by the
    function's name). ``max_shapes``: how many distinct input shapes of one op
    are checked. ``model_check``: also check the whole model (probed) and
    localise its failure. ``check_options`` go to every ``check``; by default
    ``precise=True`` and ``check_forward_ad`` where the Function has a jvp.
    Raises ``ForwardError`` when the model's forward raises and
    ``NothingHarvested`` when it applies no custom Function."""
    recording = record(model_or_fn, inputs, max_shapes)
    if not recording.ops:
        raise NothingHarvested(
            f"{getattr(model_or_fn, '__name__', type(model_or_fn).__name__)} applied no custom "
            "Function (torch.autograd.Function, torch.library custom op with autograd, "
            "refengine Function) in its forward: there is nothing to harvest; check the "
            "whole model with check() instead")
    found = Harvest(recording.ops)
    for op in recording.ops:
        _check_op(found, op, check_options)
    found.composition = composition(recording)
    if model_check:
        found.model, problem = whole_model(model_or_fn, inputs, check_options.get("seed"),
                                           all_double(recording.ops))
        passed = None if found.model is None else found.model.passed
        first = found.failing(order=1)
        second = [n for n in found.failing() if n not in first]
        if check_options.get("order", 1) == 2 and passed is False:
            # (the Functions' first order was not checked: none can be cleared or blamed)
            found.localisation = (
                "the whole model fails its (first-order) check; its Functions were checked "
                "at second order only (order=2): harvest without order=2 to find which fails "
                "on its own" + (f"; failing at second order: {', '.join(second)}"
                                if second else ""))
        else:
            raised = [n for n in first if n in found.errors and
                      all(r.passed for r in found.reports.get(n, []))]
            found.localisation = localise(passed, first, found.composition, problem, second,
                                          raised)
    return found


def _check_op(found: Harvest, op, check_options: dict) -> None:
    for sample in op.samples:
        if sample.notes:
            found.notes.setdefault(op.name, []).extend(
                n for n in sample.notes if n not in found.notes.get(op.name, []))
        if sample.skip is not None:
            found.skipped[op.name] = sample.skip
            continue
        try:
            report = check_sample(op.name, sample, op.has_jvp, **check_options)
        except UncheckableError as exc:
            found.skipped[op.name] = " ".join(str(exc).split())
            continue
        except GradcheckError as exc:
            found.errors[op.name] = " ".join(str(exc).split())
            continue
        found.reports.setdefault(op.name, []).append(report)


def check_sample(name: str, sample, has_jvp: bool, **check_options):
    """``check`` of one harvested sample, named ``name``: precise by default, and
    forward mode too when the Function has a jvp (``check_options`` override)."""
    keywords = {"precise": True, "check_forward_ad": has_jvp, **check_options}
    try:
        return check(sample.func, sample.inputs, input_names=list(sample.names), name=name,
                     **keywords)
    finally:
        settle()   # (a backward that raised left the model's parameters swapped)


def composition(recording: Recording) -> list:
    """What in how the Functions are put together keeps gradients from the
    model's output: an output that does not require grad, a Function applied
    under no_grad, a Function whose output does not reach the model's output."""
    found = []
    tensors = [o for o in recording.outputs if namespace(o) is not None]
    if tensors and not any(o.requires_grad for o in tensors):
        found.append("the model's output does not require grad: no gradient flows back")
    nodes = reachable(tensors)
    for app in recording.applications:
        if app.depth:
            continue
        if not app.grad_enabled:
            found.append(f"{app.name} is applied under no_grad")
        elif app.output_requires_grad and not any(id(n) in nodes for n in app.out_nodes):
            found.append(f"the output of {app.name} does not reach the model's output "
                         "(a detached path after it, or an unused result)")
    return list(dict.fromkeys(found))


def all_double(ops) -> bool:
    """Whether every harvested Function runs in double precision (else the
    whole model is checked in its own dtypes, with the low-precision rules)."""
    return not any(s.func is not None and s.narrow for op in ops for s in op.samples)


def model_call(model_or_fn, inputs, double: bool = True) -> tuple:
    """``(func, inputs, names)``: the whole model as a function of its inputs and
    parameters, on copies, in double precision with ``double`` (names: ``None``
    for a function)."""
    copies = tuple(_copy(x, double) for x in _as_tuple(inputs))
    if module_kind(model_or_fn) is not None:
        flat = module_function(model_or_fn, copies, double=double)
        return flat.func, flat.inputs, list(flat.names)
    return model_or_fn, copies, None


#: how the whole model is checked: J U for random directions U, the odds that
#: a wrong entry escapes stated (its Jacobian can be large; the Functions'
#: own checks are the precise ones)
#: (each input alone: the model's parameters get their gradients when its data
#: batch does not require grad, as in training: ``verdict.alone``)
MODEL_CHECK = {"jacobian": "probed", "precise": False, "check_inputs_alone": True}


#: the whole model's check again where a step of its probed one left the domain
#: (``SteppedOffError``): a constrained parameter (a validated distribution's
#: Cholesky factor), whose probed directions move every coordinate off it; a
#: dense precise check leaves out the coordinates no step stays in
#: (``verdict.offdomain``) and judges the others
STEPPED_OFF = {"precise": True, "jacobian": "auto"}


def judged_again(report, func, args) -> bool:
    """Whether a failed double-precision check of the whole model is judged
    again precisely: where its outputs are narrower or lie on float32's grid (POT's
    emd2 returns its value in the default dtype, so the double copy's value
    passes through float32), fixed steps and tolerances cannot judge it and
    precise mode judges at the precision the values carry. Not otherwise: a
    failure there is the fixed tolerances' to say (a precise check of a whole
    model costs several times the probed one)."""
    if report.passed:
        return False
    from adcheck.gradcheck.core.grids import narrow_grid
    from adcheck.gradcheck.engines import engine_for
    E = engine_for(args)
    with E.no_grad():
        outs = _as_tuple(func(*args))
    return any(E.is_tensor(o) and E.is_differentiable_dtype(o) and (
        E.epsilon(o) > 1e-15 or narrow_grid(E.to_numpy(o)) is not None) for o in outs)


def model_keywords(double: bool) -> dict:
    """``MODEL_CHECK``, precise when the model is checked in a low-precision
    dtype (its low-precision rules are precise mode's)."""
    return {**MODEL_CHECK, "precise": not double}


def whole_model(model_or_fn, inputs, seed=None, double: bool = True) -> tuple:
    """``(Report or None, problem)``: the whole model checked with ``MODEL_CHECK``
    (its inputs and parameters; in double precision with ``double``), or why
    it could not be."""
    if not any(namespace(x) is not None or is_jax_array(x) for x in _as_tuple(inputs)):
        return None, "the model's inputs hold no tensor"
    func, args, names = model_call(model_or_fn, inputs, double)
    # functional_call runs the model's own integer buffers (a BatchNorm's count)
    state = ModelState(model_or_fn if module_kind(model_or_fn) is not None else None)
    try:
        try:
            report = check(func, args, input_names=names, seed=seed, name="the whole model",
                           **model_keywords(double))
        except SteppedOffError:
            report = check(func, args, input_names=names, seed=seed, name="the whole model",
                           **{**model_keywords(double), **STEPPED_OFF})
            return report, None
        if double and judged_again(report, func, args):
            report = check(func, args, input_names=names, seed=seed, name="the whole model",
                           **{**model_keywords(double), "precise": True})
        return report, None
    except (GradcheckError, ValueError) as exc:
        return None, " ".join(str(exc).split())
    finally:
        state.restore()


def _copy(x, double: bool):
    if is_jax_array(x):
        from adcheck.gradcheck.harvest.jaxsample import _wide
        return _wide(x, double)
    if namespace(x) is None or not (x.is_floating_point() or x.is_complex()):
        return x
    E = namespace(x)
    if not double:
        return x.detach().clone().requires_grad_(True)
    return x.detach().to(E.complex128 if x.is_complex() else E.float64).requires_grad_(True)


#: the words of ``localise`` that make a passing model's sentence worth showing
#: (``model_worth_showing``): Functions that fail on their own, or were not judged
FAIL_ON_THEIR_OWN = "yet these Functions fail on their own"
NOT_JUDGED = "not judged on their own"


def model_worth_showing(message: str) -> bool:
    """Whether a passing model's sentence (``localise``'s) names Functions that
    fail on their own or were not judged, which a passing row does not show."""
    return FAIL_ON_THEIR_OWN in message or NOT_JUDGED in message


def localise(model_passed: bool | None, failing: list, composition: list,
             problem: str | None = None, second: list = (), raised: list = ()) -> str:
    """One sentence: the whole model's verdict (``None``: not checked, because of
    ``problem``) and, when it fails, where: the ``failing`` Functions (at first
    order, as the whole model is checked), else the ``composition`` findings.
    ``second``: the Functions failing at second order only, which cannot
    explain a first-order failure; ``raised``: those of ``failing`` whose
    check raised or timed out with no failure found, which were not judged
    (they were named "at fault" and "failing on their own")."""
    if model_passed is None:
        return f"the whole model was not checked: {problem}"
    judged = [name for name in failing if name not in raised]
    unjudged = [name for name in failing if name in raised]
    named = judged + [f"{name} (at second order)" for name in second]
    unchecked = (f"; {NOT_JUDGED} (their checks raised or timed out): "
                 f"{', '.join(unjudged)}" if unjudged else "")
    if model_passed:
        if named:
            return (f"the whole model passes its check, {FAIL_ON_THEIR_OWN} at the inputs "
                    f"it feeds them: {', '.join(named)}" + unchecked)
        return "the whole model passes its check" + unchecked
    if judged:
        return f"the whole model fails; at fault on their own: {', '.join(judged)}" + unchecked
    where = "; ".join(composition) or ("no detached path and no Function under no_grad "
                                       "was seen: look at the code between them")
    if unjudged:
        return ("the whole model fails, and no harvested Function that was judged fails on "
                f"its own{unchecked}; else the fault is in how they are composed: {where}")
    return ("the whole model fails, but no harvested Function fails on its own: the fault is "
            f"in how they are composed: {where}")

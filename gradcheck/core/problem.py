"""A function and its inputs, prepared for checking.

``Problem`` validates the inputs, runs the function once with grad enabled
(the graph every vjp reuses), classifies its outputs, and records the
``Layout`` of the checked inputs and outputs. It holds the evaluation counts
and how the evaluations were batched; the evaluations themselves are
``gradcheck.core.evaluation``'s.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from adcheck.gradcheck.core import grids
from adcheck.gradcheck.core.measured import first_evaluation
from adcheck.gradcheck.engines import Engine, engine_for, foreign_fix
from adcheck.gradcheck.errors import (GradcheckError, NoDoubleBackward, SteppedOffError,
                                      UncheckableError, known_fix)
from adcheck.gradcheck.core.jacobian import Layout

_DOUBLE = float(np.finfo(np.float64).eps)


def function_name(func) -> str:
    """A readable name: ``MyFn`` for ``MyFn.apply``, else ``__name__``."""
    owner = getattr(func, "__self__", None)
    if isinstance(owner, type):
        return owner.__name__
    return getattr(func, "__name__", type(func).__name__)


def as_tuple(value) -> tuple:
    """A function's result or inputs as a tuple (a list counts as a sequence)."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def _listed(indices: list) -> str:
    """``[0, 1, 2, 3]`` as "0 to 3", ``[0, 2, 5]`` as "0, 2 and 5"."""
    if indices == list(range(indices[0], indices[-1] + 1)) and len(indices) > 2:
        return f"{indices[0]} to {indices[-1]}"
    return ", ".join(str(i) for i in indices[:-1]) + f" and {indices[-1]}"


def _user_level() -> int:
    """``warnings.warn``'s ``stacklevel``, called from the function that warns,
    naming the first frame outside adcheck (the user's call of ``check``, at
    whatever depth the checks built this problem)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("adcheck."):
        frame, level = frame.f_back, level + 1
    return level


#: what to do when the function runs at the given inputs but raises at a point
#: finite differences moved them to
_MOVED_FIX = ("it runs at the given inputs but not at a point a step of finite differences "
              "moved them to: the step left its domain (a constraint, such as a "
              "distribution's validated parameter, or an edge of the domain within a step); "
              "a precise check (precise=True; the command line's default) leaves out "
              "coordinates the function is defined at but not beside and shortens steps "
              "near an edge, or check it at inputs farther from the edge")


class Problem:
    """``func`` at ``inputs``: validated, evaluated once, ready for checks."""

    #: whether the function raises under no_grad where it runs with grad
    #: (``for_values``): ``None`` until a call under no_grad answers
    refuses_no_grad: bool | None = None
    #: what the function raised at a step of a tolerant evaluation (the first), said
    #: where differences are NaN there (``faults``); ``None`` when nothing raised
    raised_nearby: str | None = None

    def __init__(self, func, inputs, name: str | None = None, engine: Engine | None = None,
                 order: int = 1, warn_precision: bool = True, measure: bool = True):
        """``order=2``: ``func`` is the first derivative of the function ``name``
        names (see ``gradcheck.core.secondorder``); messages say so.
        ``warn_precision``: warn that inputs narrower than double precision will
        likely fail finite differences at a fixed step (``precise=True`` judges
        them in their own precision instead, see ``gradcheck.lowprec.lowprecision``).
        ``measure``: measure what the first evaluation holds (``evaluation_bytes``,
        which the budget counts); ``False`` for a problem no batch is sized by
        (the function under a first derivative, whose own problem measures it)."""
        self.inputs = as_tuple(inputs)
        self.name = name or function_name(func)
        self.order = order
        #: the function calls autograd itself (a first derivative): evaluate it on
        #: leaves that require grad, with grad enabled; otherwise under no_grad
        self.differentiates_inside = order == 2
        #: how messages name the function, and what its backward belongs to
        self.subject = "the first derivative" if order == 2 else "the function"
        self.of = " of the first derivative" if order == 2 else ""
        self.engine = engine or engine_for(self.inputs)
        #: the function as given (``func`` is what the checks call)
        self.source = func
        self.func = self.engine.wrap_function(func, self.differentiates_inside)
        self.counts = {"function": 0, "vjp": 0, "jvp": 0}
        #: how the Jacobians were built: batched calls made, the reason the
        #: loop was used instead (if it was), ops that looped inside vmap
        self.batching = {"batched_calls": 0, "fallback": None, "looped_ops": {}}
        #: the first in-place change of each input that requires grad, by index:
        #: (who made it, while doing what, the largest change, where)
        self.mutations: dict = {}
        #: grad_outputs a backward changed in place, by ``out_idx``: ``(what,
        #: largest change, where)`` (see ``check_grad_outputs``)
        self.grad_output_changes: dict = {}
        self._validate_inputs(warn_precision)
        self.arrays = {i: self.engine.to_numpy(x) for i, x in enumerate(self.inputs)
                       if self.engine.is_tensor(x)}
        #: the engine's dtype of each tensor input (NumPy may hold it in a wider one)
        self.in_dtypes = {i: self.inputs[i].dtype for i in self.arrays}
        def first():
            return self.call(self.inputs, "evaluating it at the given inputs", self.arrays)
        with self.engine.enable_grad():
            self.outputs, measured = first_evaluation(first, func, self.inputs, self.engine) \
                if measure else (first(), 0)
        #: bytes this first evaluation held at its peak, its outputs and graph
        #: included (0: not measurable here); the budget counts it per evaluation
        self.evaluation_bytes = measured or 0
        #: machine epsilon by ("in", index) or ("out", index), looked up once
        self._epsilons: dict = {}
        #: by output, the narrower dtype a double-precision output's values come
        #: through (see ``epsilon``)
        self.computed_in: dict = {}
        self._on_a_grid: bool | None = None
        self._moved: tuple | None = None
        self._example_size: int | None = None
        self._classify_outputs()
        self.layout = Layout(
            {i: self.arrays[i].shape for i in self.diff_in},
            {i: self.arrays[i].dtype.kind == "c" for i in self.diff_in},   # (np.iscomplexobj's
            {o: self.out_arrays[o].shape for o in self.float_out},          # answer for arrays)
            {o: self.out_arrays[o].dtype.kind == "c" for o in self.float_out})

    @property
    def values_func(self):
        """The function's values without the graph of them, where it offers that
        (``secondorder.first_derivative``'s ``without_graph``), else ``None``: for
        calls whose values alone are read."""
        return getattr(self.source, "without_graph", None) if self.func is self.source else None

    def _separate_aliases(self, inputs: tuple) -> tuple:
        """``inputs`` with each tensor that is the same object as an earlier one
        (``f(x, x, x)``: self-attention's query, key and value) replaced by a
        copy, warned about. The finite differences move each argument on its
        own, so the AD side must differentiate each on its own too: through one
        tensor it gave the sum of every use's derivative, and a correct
        function failed. (torch.autograd.gradcheck moves the shared tensor, and
        checks that sum.)"""
        E, seen, copied, out = self.engine, {}, [], list(inputs)
        for i, x in enumerate(inputs):
            if not E.is_tensor(x):
                continue
            if id(x) not in seen:
                seen[id(x)] = i
                continue
            out[i] = E.from_numpy_like(E.to_numpy(x), x, requires_grad=E.requires_grad(x))
            copied.append((seen[id(x)], i))
        if copied:
            pairs = ", ".join(f"{j} is input {i}" for i, j in copied)
            warnings.warn(
                f"{self.name}: the same tensor is passed more than once (input {pairs}); "
                "each is checked as a copy of its own, so the derivative of each argument is "
                "checked separately (torch.autograd.gradcheck checks their sum): pass "
                "separate tensors to silence this, or check a function of one input to check "
                "the sum", UserWarning, stacklevel=_user_level())
        return tuple(out)

    def _validate_inputs(self, warn_precision: bool):
        E = self.engine
        self.inputs = self._separate_aliases(self.inputs)
        self.diff_in = [i for i, x in enumerate(self.inputs) if E.is_tensor(x) and E.requires_grad(x)]
        for i, x in enumerate(self.inputs):
            if isinstance(x, np.ndarray):
                raise UncheckableError(
                    f"{self.name}: input {i} is a NumPy array; gradcheck needs {E.name} tensors: "
                    f"convert it with {E.convert_hint} to check it")
            if E.is_tensor(x) and E.layout_of(x) is not None:
                raise UncheckableError(
                    f"{self.name}: input {i} is a sparse tensor ({E.layout_of(x)}); gradcheck "
                    "checks dense (strided) tensors only: pass x.to_dense(), and convert it "
                    "back inside the function if the function needs a sparse input")
        for i in self.diff_in:
            if not E.is_differentiable_dtype(self.inputs[i]):
                raise UncheckableError(
                    f"{self.name}: input {i} requires grad but has dtype {self.inputs[i].dtype}; "
                    "only floating point and complex inputs can be differentiated: "
                    "convert it with .double() (or pass it without requires_grad)")
        if not self.diff_in:
            integers = [f"input {i} has dtype {x.dtype}" for i, x in enumerate(self.inputs)
                        if E.is_tensor(x) and not E.is_differentiable_dtype(x)]
            hint = ("; " + ", ".join(integers) + ", and integer tensors cannot require grad: "
                    "convert them with .double() first") if integers else ""
            raise UncheckableError(
                f"{self.name}: no input requires grad, so there is nothing to check; "
                f"{E.requires_grad_hint}{hint}")
        narrow: dict = {}   # dtype -> the inputs of it (one warning, not one per input:
        #                     a module's parameters are inputs too, a float32 model's all)
        for i in self.diff_in if warn_precision else ():
            dtype = str(self.inputs[i].dtype)
            if not ("float64" in dtype or "complex128" in dtype):
                narrow.setdefault(dtype, []).append(i)
        for dtype, which in narrow.items():
            inputs = f"input {which[0]} requires" if len(which) == 1 else \
                f"inputs {_listed(which)} require"
            warnings.warn(
                f"{self.name}: {inputs} grad and {'has' if len(which) == 1 else 'have'} dtype "
                f"{dtype}, not double precision; finite differences at eps=1e-6 will likely "
                "fail. Use float64 or complex128 inputs (a module's parameters are then "
                "checked in double precision too), or pass precise=True to judge the formula "
                "in its own precision.", UserWarning, stacklevel=_user_level())

    def _classify_outputs(self):
        E = self.engine
        self.out_arrays, self.out_dtypes = {}, {}
        self.float_out, self.diff_out = [], []
        for o, out in enumerate(self.outputs):
            if E.is_tensor(out) and E.layout_of(out) is not None:
                raise UncheckableError(
                    f"{self.name}: output {o} is a sparse tensor ({E.layout_of(out)}); "
                    "gradcheck checks dense outputs only: return out.to_dense() (PyTorch's "
                    "gradcheck asks the same, as to_dense(masked_grad=...))")
            if not E.is_tensor(out) or not E.is_differentiable_dtype(out):
                continue
            self.out_arrays[o] = E.to_numpy(out)
            self.out_dtypes[o] = out.dtype
            self.float_out.append(o)
            if E.requires_grad(out):
                self.diff_out.append(o)

    def call(self, args, what: str, sources: dict | None = None,
             values_only: bool = False) -> tuple:
        """Run the function on ``args``; wrap any exception it raises.
        ``sources``: the arrays the tensor ``args`` were made from (by index),
        to see whether the call changed them (``check_unchanged``);
        ``values_only``: only the outputs' values are read (``values_func``)."""
        self.counts["function"] += 1
        func = (values_only and self.values_func) or self.func
        try:
            outputs = as_tuple(func(*args))
        except GradcheckError:
            raise
        except NoDoubleBackward as exc:   # (no input would make it run: said as it is)
            raise GradcheckError(
                f"{self.name}: {exc}; a second-order check does not apply to it (order=1 "
                "checks its first derivative)") from exc
        except Exception as exc:  # the user's function: name it and what we did
            moved = "finite differences" in what   # (at a point a step moved the inputs to)
            raise (SteppedOffError if moved else GradcheckError)(
                f"{self.name}: {self.subject} raised {type(exc).__name__} ({exc}) while "
                f"{what}; " + (foreign_fix(exc, self.engine.name) or known_fix(
                    exc, _MOVED_FIX if moved else f"make it run on {self.engine.name} "
                    "tensors of these shapes and dtypes"))) from exc
        if sources is not None:
            self.check_unchanged(args, sources, self.subject, what)
        return outputs

    def check_unchanged(self, args, sources: dict, who: str, what: str) -> None:
        """Record in ``mutations`` an input that requires grad whose tensor in
        ``args`` (or its values, an array) no longer holds ``sources[i]``: ``who``
        changed it while ``what``.

        Inputs that do not require grad may change (a buffer the function
        updates, like batch norm's running statistics): every evaluation gets
        fresh copies, and no derivative is taken at them.
        """
        for i in self.diff_in:
            if i in self.mutations or i not in sources:
                continue
            now = np.asarray(args[i]) if isinstance(args[i], (np.ndarray, np.generic)) else \
                self.engine.to_numpy(args[i], copy=False)
            before = sources[i]
            if type(before) is not np.ndarray:   # (an array as it is: asarray's call spared)
                before = np.asarray(before)
            if unchanged(now, before):
                continue
            self.mutations[i] = (who, what, *_largest_change(now, before))

    def check_grad_outputs(self, keys, tensors, before, what: str, batched: bool = False):
        """Record in ``grad_output_changes`` a grad_output (``tensors[k]``, of
        output ``keys[k]``; ``batched``: a batch of them, the batch first) that
        no longer holds ``before[k]``: the backward wrote into the gradient it
        was handed, which autograd may share with other Functions of the graph."""
        for o, tensor, old in zip(keys, tensors, before):
            if o in self.grad_output_changes:
                continue
            now = self.engine.to_numpy(tensor, copy=False)
            if not unchanged(now, old):
                change, where = _largest_change(now, old)
                self.grad_output_changes[o] = (what, change, where[1:] if batched else where)

    def for_values(self, compute, probe: bool = True):
        """``compute(grad)``, an evaluation whose values alone are read: under
        no_grad (``grad`` False), or with grad enabled on leaves that require grad
        (``grad`` True; ``fresh_inputs(..., grad)``) for a function that
        differentiates inside or refuses no_grad.

        A function may call autograd inside (torch-struct's partition functions
        do) and raise under no_grad; torch.autograd.gradcheck never turns grad
        off, so it checks them. The first call under no_grad that succeeds says
        the function runs there; the first that raises before that asks once
        (``_refuses``; ``probe=False``: not on this call, a batch that may have
        raised for vmap's sake) whether it raises under no_grad at the given
        inputs. If it does, this call is made again with grad, and every later
        one is made with grad at once (no raise paid per call)."""
        E = self.engine
        grad = self.differentiates_inside or bool(self.refuses_no_grad)
        try:
            with E.enable_grad() if grad else E.no_grad():
                result = compute(grad)
        except Exception:
            if grad or not probe or not self._refuses():
                raise
        else:
            # (None: nothing was called, a batch the engine cannot make)
            if self.refuses_no_grad is None and not grad and result is not None:
                self.refuses_no_grad = False
            return result
        with E.enable_grad():
            return compute(True)

    def _refuses(self) -> bool:
        """``refuses_no_grad``, decided by one call under no_grad at the given
        inputs where it is not known: it raising there, where the first
        evaluation ran with grad, says the function needs grad."""
        if self.refuses_no_grad is None:
            try:
                with self.engine.no_grad():
                    self.call(self.fresh_inputs({}), "evaluating it under no_grad")
                self.refuses_no_grad = False
            except Exception:  # noqa: BLE001 - any refusal: the same call with grad decides
                self.refuses_no_grad = True
        return self.refuses_no_grad

    def fresh_inputs(self, overrides: dict, grad: bool | None = None) -> list:
        """New leaf tensors for the tensor inputs (``overrides`` by index); those
        that require grad are leaves that require it where ``grad`` (default:
        the function differentiates inside)."""
        args = list(self.inputs)
        grad = self.differentiates_inside if grad is None else grad
        for i in self.arrays:
            grad_i = grad and i in self.diff_in
            args[i] = self.engine.from_numpy_like(overrides.get(i, self.arrays[i]),
                                                  self.inputs[i], requires_grad=grad_i)
        return args

    def like_input(self, in_idx: int, array, requires_grad: bool = False, copy: bool = True):
        """``array`` as a tensor of input ``in_idx``'s engine dtype (a tangent, a
        perturbed input, or a stack of them; ``copy``: as ``Engine.from_numpy``)."""
        return self.engine.from_numpy(array, requires_grad, dtype=self.in_dtypes[in_idx],
                                      copy=copy)

    def like_output(self, out_idx: int, array):
        """``array`` as a tensor of output ``out_idx``'s engine dtype (a grad_output)."""
        return self.engine.from_numpy(array, dtype=self.out_dtypes[out_idx])

    @property
    def example_size(self) -> int:
        """Real coordinates of every input and output (one example of a batch)."""
        if self._example_size is None:   # (asked before every batch; the arrays stay)
            self._example_size = sum(a.size * (2 if a.dtype.kind == "c" else 1)
                                     for a in (*self.arrays.values(), *self.out_arrays.values()))
        return self._example_size

    def epsilon(self, in_idx: int | None = None, out_idx: int | None = None) -> float:
        """Machine epsilon of input ``in_idx``'s or output ``out_idx``'s engine dtype;
        for a double-precision output whose values all lie on a narrower dtype's
        grid (still, with the inputs moved off it when they lie on it too), that
        dtype's: the function computes in it inside (``x.float()`` and back), and
        its rounding is that dtype's
        (``computed_in`` names it; at an explored point, the given inputs'
        finding: ``gradcheck.core.grids.known``)."""
        key = ("in", in_idx) if out_idx is None else ("out", out_idx)
        found = self._epsilons.get(key)
        if found is None:
            tensor = self.inputs[in_idx] if out_idx is None else self.outputs[out_idx]
            found = self.engine.epsilon(tensor)
            # (a narrower input makes the check a low-precision one already)
            if out_idx is not None and found == _DOUBLE and \
                    all(self.epsilon(in_idx=i) == _DOUBLE for i in self.diff_in):
                narrow = grids.known_dtype(self.order, out_idx)
                if narrow is None:
                    narrow = grids.narrow_grid(self.out_arrays[out_idx])
                    if narrow is not None and self.inputs_on_a_grid() and \
                            not self._stays_on(out_idx, narrow):
                        narrow = None
                if narrow is not None:
                    self.computed_in[out_idx] = narrow
                    found = grids.epsilon_of(narrow)
            self._epsilons[key] = found
        return found

    def inputs_on_a_grid(self) -> bool:
        """Whether an input that requires grad lies on a narrower dtype's grid
        (data cast up from float32): then values and derivatives on that grid
        say nothing of a cast inside the function. Looked up once."""
        if self._on_a_grid is None:
            self._on_a_grid = any(grids.on_a_grid(self.arrays[i]) for i in self.diff_in)
        return self._on_a_grid

    def _stays_on(self, out_idx: int, narrow: str) -> bool:
        """Whether output ``out_idx`` moves, and stays on ``narrow``'s grid, when
        every input that requires grad moves off every grid (by 2**-6 of itself,
        which survives rounding to bfloat16, plus 2**-40, which leaves its grid).
        Inputs on a grid (data cast up from float32) put the outputs of ``x * 2``
        on it too, and those leave it; a function computing in float32 inside
        keeps its outputs there wherever its inputs are. One evaluation."""
        if self._moved is None:
            self._moved = ()
            if not self.differentiates_inside:
                moved = {i: self.arrays[i] * (1 + 2.0 ** -6 + 2.0 ** -40) for i in self.diff_in}
                try:
                    outs = self.for_values(lambda grad: self.call(
                        self.fresh_inputs(moved, grad), "moving its inputs off float32's grid"))
                    self._moved = tuple(self.engine.to_numpy(o) if self.engine.is_tensor(o)
                                        else None for o in outs)
                except Exception:   # (whatever it raises there, the checks will meet)
                    pass
        there = self._moved[out_idx] if out_idx < len(self._moved) else None
        if there is None or np.shape(there) != self.out_arrays[out_idx].shape:
            return False
        with np.errstate(invalid="ignore"):
            moved = bool(np.any(there != self.out_arrays[out_idx]))
        return moved and grids.narrow_grid(there) == narrow

    def computed_inside(self) -> dict:
        """``computed_in`` of every floating output, each one's grid read now if
        it was not yet (``epsilon``)."""
        for o in self.float_out:
            self.epsilon(out_idx=o)
        return dict(self.computed_in)

    def output_dtype(self, out_idx: int) -> str:
        """The dtype output ``out_idx`` is computed in: its engine dtype's name, or
        the narrower one its double-precision values come through (``epsilon``)."""
        self.epsilon(out_idx=out_idx)
        return self.computed_in.get(out_idx) or self.engine.dtype_name(self.outputs[out_idx])

    def least_epsilon(self) -> float:
        """Machine epsilon of the least precise checked tensor (inputs that
        require grad, float outputs), looked up once."""
        found = self._epsilons.get("least")
        if found is None:
            found = self._epsilons["least"] = max(
                [self.epsilon(in_idx=i) for i in self.diff_in] +
                [self.epsilon(out_idx=o) for o in self.float_out])
        return found

    def check_shape(self, array, shape, who: str, mode: str):
        """``array`` if it has ``shape``; else a ``GradcheckError`` saying the
        ``mode`` ("vjp", "jvp") returned the wrong shape for ``who``."""
        if array is not None and array.shape != tuple(shape):
            raise GradcheckError(
                f"{self.name}: the {mode} returned a result of shape {tuple(array.shape)} for "
                f"{who}, which has shape {tuple(shape)}; the {mode} must return one value "
                f"per element of {who}")
        return array


#: arrays up to this many bytes are compared as bytes (a microsecond); larger
#: ones through a byte view of each, without copies
SMALL_BYTES = 1 << 16


def unchanged(now: np.ndarray, before: np.ndarray) -> bool:
    """Whether ``now`` holds ``before``'s values (``array_equal`` with NaN equal
    to NaN). Asked after every evaluation, so equal bits answer first, a
    microsecond; only arrays whose bits differ (a NaN's payload, -0.0 for 0.0)
    are compared by value."""
    if now.shape != before.shape:
        return False
    if now.dtype == before.dtype and same_bits(now, before):
        return True
    return bool(np.array_equal(now, before, equal_nan=True))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b``, of one dtype and shape, hold the same bits."""
    # (a small array's bytes compare in a microsecond; a large one's without copies)
    if a.nbytes > SMALL_BYTES and a.flags.c_contiguous and b.flags.c_contiguous:
        return bool(np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))
    return a.tobytes() == b.tobytes()


def _largest_change(now: np.ndarray, before: np.ndarray) -> tuple:
    """``(largest absolute change, where)`` from ``before`` to ``now`` (a NaN
    that appeared counts as infinite; a new shape: ``(inf, ())``)."""
    if now.shape != before.shape:
        return np.inf, ()
    with np.errstate(invalid="ignore"):
        change = np.abs(now - before).astype(np.float64)
    change[np.isnan(change)] = np.inf
    where = np.unravel_index(int(np.argmax(change)), change.shape)
    return float(change[where]), tuple(int(k) for k in where)

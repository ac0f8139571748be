"""Grad and inference mode as read by new tensors, ``numpy()`` and a batched
backward: each compared with what PyTorch does in the same mode."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as E  # noqa: E402


@pytest.mark.parametrize("make", ["from_numpy", "tensor", "op result"])
@pytest.mark.parametrize("inference", [False, True])
def test_new_tensor_is_inference_as_in_torch(make, inference):
    a = np.arange(6.0).reshape(2, 3)

    def build(lib):
        if make == "from_numpy":
            return lib.from_numpy(a.copy())
        if make == "tensor":
            return lib.tensor(a.tolist())
        return lib.exp(lib.tensor(a.tolist()))

    with E.inference_mode(inference), torch.inference_mode(inference):
        ours, theirs = build(E), build(torch)
    assert ours.is_inference() == theirs.is_inference() == inference


@pytest.mark.parametrize("grad_on", [False, True])
def test_numpy_of_requires_grad_refused_only_with_grad_on(grad_on):
    ours, theirs = E.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    with E.set_grad_enabled(grad_on), torch.set_grad_enabled(grad_on):
        outcomes = []
        for t in (ours, theirs):
            try:
                t.numpy()
                outcomes.append("ok")
            except RuntimeError:
                outcomes.append("refused")
    assert outcomes[0] == outcomes[1] == ("refused" if grad_on else "ok")
    np.testing.assert_array_equal(ours.numpy(force=True), np.ones(3))


def test_batched_grad_unreached_input_and_zero_dim_grad_output():
    x = E.tensor([1.0, 2.0], dtype=E.float64, requires_grad=True)
    w = E.tensor([3.0, 4.0], dtype=E.float64, requires_grad=True)
    y = E.exp(x)
    v = np.array([[1.0, 0.0], [0.5, 2.0]])
    gx, gw = E.autograd.grad(y, [x, w], E.tensor(v, dtype=E.float64), is_grads_batched=True,
                             retain_graph=True, allow_unused=True)
    # w is not below exp's node: no gradient; x's rows are v * exp(x), by hand
    assert gw is None
    np.testing.assert_allclose(gx.numpy(), v * np.exp([1.0, 2.0]), rtol=1e-15)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    raised = []
    for lib, t in ((E, x), (torch, tx)):   # a 0-dim grad_output has no batch dimension
        with pytest.raises(Exception) as info:
            lib.autograd.grad(lib.exp(t).sum(), [t], lib.tensor(1.0, dtype=lib.float64),
                              is_grads_batched=True)
        raised.append(info.type)
    assert raised[0] is raised[1]

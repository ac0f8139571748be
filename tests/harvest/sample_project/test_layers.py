"""Ordinary tests of the project: values, not gradients."""
import torch

from layers import Cube, Gate, Softplus


def test_softplus_is_positive():
    assert (Softplus.apply(torch.randn(5)) > 0).all()


def test_cube_of_two():
    assert Cube.apply(torch.tensor([2.0])).item() == 8.0


def test_gate_keeps_the_shape():
    assert Gate()(torch.randn(3, 4)).shape == (3, 4)


def test_inference_under_no_grad():
    with torch.no_grad():
        assert Softplus.apply(torch.zeros(2, 2)).shape == (2, 2)

"""Harvest: each custom Function inside a real model, checked at the inputs the
model really feeds it, and named by the module path that applied it.

Owns recording the applications of custom Functions during one forward
(``recording``: torch ``autograd.Function``s, ``torch.library`` custom ops
with autograd, refengine ``Function``s, JAX ``custom_vjp``/``custom_jvp``),
grouping them into ops named ``PATH:Class`` with their samples (``calls``,
``targets``, ``jaxsample``), and checking each with ``check`` and localising
a whole model's failure (``api``)::

    from adcheck import gradcheck
    found = gradcheck.harvest(model, (x,))
    found.failing()          # ["norm_f:ScaleNormFn", "temp:TemperatureFn"]
    print(found.message())

May import: every room of ``gradcheck`` below it and ``gradcheck.api``.
"""
from adcheck.gradcheck.harvest.api import Harvest, NothingHarvested, harvest, record
from adcheck.gradcheck.harvest.recording import ForwardError

__all__ = ["ForwardError", "Harvest", "NothingHarvested", "harvest", "record"]

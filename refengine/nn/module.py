"""``Module``: the base class of layers; it registers parameters and submodules."""
from __future__ import annotations

from collections import OrderedDict

from ..autograd.hooks import RemovableHandle
from ..tensor import Tensor
from .backward_hook import BackwardHook
from .parameter import Parameter

_global_backward_hooks: dict = OrderedDict()
_global_backward_pre_hooks: dict = OrderedDict()


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` for every module, before its own hooks.

    >>> handle = register_module_full_backward_hook(lambda m, gi, go: print(type(m).__name__))
    >>> handle.remove()
    """
    return RemovableHandle.add(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` for every module before its gradients are computed."""
    return RemovableHandle.add(_global_backward_pre_hooks, hook)


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


class Module:
    """Base class of layers. Attributes that are ``Parameter`` or ``Module`` are registered.

    >>> class Affine(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = Parameter(refengine.ones(2))
    ...     def forward(self, x):
    ...         return x * self.w
    >>> [name for name, _ in Affine().named_parameters()]
    ['w']
    """

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    # ----- registration ------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(refengine.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif name in self.__dict__.get("_modules", {}):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (refengine.nn.Module or None expected)")
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", {}):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(refengine.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)

    def __getattr__(self, name: str):
        for store in ("_parameters", "_buffers", "_modules"):
            values = self.__dict__.get(store)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f'parameter name must be a non-empty string without ".", got {name!r}')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (refengine.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None) -> None:
        """Add a tensor that is state but not a parameter (it is not trained)."""
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (the name may be "0", "1", ...)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    # ----- traversal -----------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """Yield ``(name, module)`` for this module and its descendants, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from child.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """This module and every descendant, each once.

        >>> [type(m).__name__ for m in Sequential(Linear(1, 1)).modules()]
        ['Sequential', 'Linear']
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Yield ``(name, child)`` for the direct children, each once."""
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        """The direct children (not their descendants).

        >>> len(list(Sequential(Linear(1, 1), Sequential(Linear(1, 1))).children()))
        2
        """
        for _, child in self.named_children():
            yield child

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """Yield ``(name, parameter)``, own parameters first, then each child's ("0.weight").

        >>> [n for n, _ in Sequential(Linear(2, 2)).named_parameters()]
        ['0.weight', '0.bias']
        """
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """The parameters, in ``named_parameters()`` order.

        >>> [tuple(p.shape) for p in Linear(3, 2).parameters()]
        [(2, 3), (2,)]
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield ``(name, buffer)`` like ``named_parameters``."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """The buffers, in ``named_buffers()`` order."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    # ----- modes and gradients --------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and its descendants (``eval()`` is ``train(False)``).

        >>> Sequential(Dropout()).train(False)[0].training
        False
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004 (torch's type)
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``. It does not disable gradient recording.

        >>> Dropout().eval().training
        False
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter (to freeze or unfreeze them).

        >>> Linear(2, 1).requires_grad_(False).weight.requires_grad
        False
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` to None (or, with ``set_to_none=False``, to zeros).

        >>> lin = Linear(2, 1); lin(refengine.ones(2)).sum().backward(); lin.zero_grad()
        >>> lin.weight.grad is None
        True
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                p.grad.zero_()

    # ----- calling and hooks -------------------------------------------------
    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` once per backward through the module.

        ``grad_input`` has one entry per positional argument (None for a
        non-tensor); ``grad_output`` one per output. A returned tuple replaces
        ``grad_input``.

        >>> lin = Linear(2, 1)
        >>> h = lin.register_full_backward_hook(lambda m, gi, go: print(go))
        >>> lin(refengine.ones(2, requires_grad=True)).sum().backward()
        (tensor([1.]),)
        """
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` before the module's input gradients are computed."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    @staticmethod
    def _add_hook(hooks: dict, hook, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle.add(hooks, hook)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args, **kwargs):
        hooks = list(_global_backward_hooks.values()) + list(self._backward_hooks.values())
        pre = list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())
        if not (hooks or pre):
            return self.forward(*args, **kwargs)
        bw = BackwardHook(self, hooks, pre)
        args = bw.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        return bw.setup_output_hook(result)

    # ----- printing -------------------------------------------------------
    def extra_repr(self) -> str:
        """What goes between the parentheses of this module's repr."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr().split("\n") if self.extra_repr() else []
        children = [f"({name}): " + _addindent(repr(child), 2)
                    for name, child in self._modules.items()]
        head = type(self).__name__ + "("
        if len(extra) == 1 and not children:
            return head + extra[0] + ")"
        if not extra and not children:
            return head + ")"
        return head + "\n  " + "\n  ".join(extra + children) + "\n)"

"""Imported once by the worker processes' fork server when a run uses PyTorch's
op_db (``TorchRegistry.preload``): op_db is imported and its entries built
here (about 10 to 15 s), and every worker forked afterwards inherits them.

Forking after importing torch is safe as long as this process has run no
parallel torch computation (whose thread pool a fork would leave broken in the
child): building the entries runs none, and nothing else runs here.
"""
from adcheck.opinfo import torchdb

if torchdb.available():
    try:
        import adcheck.gradcheck.engines.torch  # noqa: F401 - the adapter every check uses
        torchdb.entries(inplace=True)
    except Exception:  # noqa: BLE001 - a fork server that dies starts no worker at all;
        pass           # a worker that meets the same failure reports it as its task's error

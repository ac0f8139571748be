"""Large Jacobians: blocks beyond what the memory budget holds whole.

Owns the seeds ``S`` of ``J S`` (``seeds``), sparsity patterns (``structure``,
``listed``), the cells of ``J S`` (``cells``), compressed blocks
(``compressed``, ``decompress``), probed blocks and their escape odds
(``probed``, ``probestream``, ``lowprobed``), dense blocks a chunk of columns
at a time (``streamed``) and a failure found in cells located (``window``).

May import: ``gradcheck.core``, ``gradcheck.numerics``, ``gradcheck.lowprec``,
``gradcheck.verdict``.
"""

"""`hloscan confirm`: a second opinion from the real TPU compiler (libtpu's compile-only client, no TPU).

Pure Python: this package imports no jax. Each module is compiled by `worker.py` in its own process (the
only code that imports jax, run with the python that has the tpu extra), so a compiler crash or hang costs
one result, and hloscan without the extra keeps its start-up time. Nothing is ever executed.

    module.py   confirm_module: one module compiled and compared      scan.py     confirm_paths: PATH...
    runner.py   the worker process: python, request, timeout          worker.py   the compile (jax)
    verdict.py  the compiler's error text classified                  compare.py  static vs compiler
    exact.py    each tpu_custom_call alone (`vmem --exact`)           topology.py which slice to compile for
    readback.py the compiler's figures read from its dump folder (hloscan's readers, in this process)
    placement.py where a kernel's operands live, whole program against alone (`--exact`)

This file imports nothing, so `from hloscan.confirm.runner import ...` stays cheap.
"""

"""hloscan.check() on jax Lowered/Compiled objects (issue 11, item 4). jax is optional: skipped without it.

Run with a jax environment, e.g. `JAX_PLATFORMS=cpu PYTHONPATH=. /work/oracle-venv/bin/python -m pytest
tests/test_api_jax.py` (the CPU backend has the pinned_host memory kind)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import hloscan  # noqa: E402
from hloscan.hlo.jax_input import is_jax_stage, program_of  # noqa: E402


def _shardings():
    from jax.sharding import SingleDeviceSharding

    device = jax.devices()[0]
    kinds = {m.kind for m in device.addressable_memories()}
    if "pinned_host" not in kinds:
        pytest.skip(f"this jax backend has no pinned_host memory ({sorted(kinds)})")
    return SingleDeviceSharding(device, memory_kind="device"), SingleDeviceSharding(device, memory_kind="pinned_host")


def _offload(x):
    _, host = _shardings()
    return x * 2, {"h": jax.device_put(jnp.sin(x), host), "g": x + 1}


@pytest.fixture(scope="module")
def lowered():
    device, host = _shardings()
    # flat outputs in jax's order: 0 = x*2, 1 = ["g"] (device), 2 = ["h"] (pinned_host)
    return jax.jit(_offload, out_shardings=(device, {"h": host, "g": device})).lower(jnp.ones((8, 128), jnp.float32))


def test_lowered_text_is_stablehlo_and_is_rejected_with_advice(lowered):
    findings = hloscan.check(lowered.as_text())
    assert [f.code for f in findings] == ["HLO001"]
    assert 'as_text(dialect="hlo")' in findings[0].message and "--xla_dump_to" in findings[0].message
    assert (findings[0].span.line, findings[0].span.col) == (1, 1)


def test_lowered_object_reads_hlo_text_and_host_outputs(lowered):
    assert is_jax_stage(lowered)
    program = program_of(lowered)
    assert program.text.startswith("HloModule ")
    assert program.host_outputs == (2,)
    # Without the memory kinds, the HLO text alone declares output 2 in device memory: a false HLO101.
    text_only = hloscan.check(program.text)
    assert [f.code for f in text_only] == ["HLO101"] and "output {2}" in text_only[0].message
    assert list(hloscan.check(lowered)) == []
    assert list(hloscan.check(program.text, host_outputs=[2])) == []
    # An explicit host_outputs still wins over jax's memory kinds.
    assert [f.code for f in hloscan.check(lowered, host_outputs=[0])] == ["HLO101"]


def test_compiled_object(lowered):
    compiled = lowered.compile()
    assert is_jax_stage(compiled)
    program = program_of(compiled)
    assert program.host_outputs == (2,)
    assert program.label.startswith("<jax Compiled ")
    findings = hloscan.check(compiled)
    assert findings.ok and [f.code for f in findings if f.code.startswith("HLO1")] == []
    assert hloscan.load(compiled)[0].name == hloscan.load(program.text)[0].name


def test_lowered_without_memory_kinds_passes_none():
    lowered = jax.jit(lambda x: x + 1).lower(jnp.ones((4,), jnp.float32))
    program = program_of(lowered)
    # CPU gives every output the `device` kind: known, none on host.
    assert program.host_outputs in ((), None)
    assert hloscan.check(lowered).ok


def test_import_hloscan_does_not_import_jax():
    code = "import sys, hloscan, hloscan.api, hloscan.cli; hloscan.check('HloModule m\\nENTRY e { ROOT p = f32[] parameter(0) }'); print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

"""The one module of hloscan that imports jax: compile one HLO module with libtpu's compile-only client.

Run as `python -m hloscan.confirm.worker` by hloscan.confirm, never imported by the rest of hloscan (the
layering test holds that). It reads ONE JSON request on stdin and writes ONE JSON result on stdout, so a
compiler crash or hang costs the parent one result (it kills this process on its --timeout), not the scan.
The program is compiled, never executed: compile-only devices cannot run anything.

It only compiles: the compiler's dump files go to the folder the parent names (and owns, so a killed worker
leaves nothing behind), and the parent reads them with hloscan's own readers (confirm/readback.py).

Request: {"hlo_text": str, "topology": "v5e:2x2" | "tpu7x:2x2x1" | ... (as libtpu spells it),
          "num_partitions": int, "host_params": [int], "host_results": [int], "dump_to": str | None}
          host_*: flat @main argument / result numbers in pinned_host
Result:  {"status": "compiled" | "compile_error" | "unsupported" | "convert_error", "error": str | None,
          "versions": {...}, "memory_analysis": {...}, "compile_s": float, "device_kind": str,
          "device_count": int, "topology": str}   (device_count: the devices compiled for)
"""

from __future__ import annotations

import json
import os
import sys
import time

# Set before libtpu loads: no metadata-server query (there is no TPU VM), and several processes may load it.
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

# The jax releases whose private conversion API (xc.hlo / xla_computation_to_mlir_module) this worker was
# written and tested against; others are refused with a message instead of failing obscurely.
SUPPORTED_JAX = ("0.10.",)

_MEMORY_ANALYSIS_FIELDS = (
    "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
    "generated_code_size_in_bytes", "host_argument_size_in_bytes", "host_output_size_in_bytes",
    "host_alias_size_in_bytes", "host_temp_size_in_bytes", "host_generated_code_size_in_bytes")


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("jax", "jaxlib", "libtpu"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = ""
    return out


def unsupported(found: dict[str, str]) -> str | None:
    if not found["jax"]:
        return "jax is not installed in this python"
    if not found["libtpu"]:
        return "libtpu is not installed in this python (pip install 'hloscan[tpu]')"
    if not found["jax"].startswith(SUPPORTED_JAX):
        return (f"jax {found['jax']} is not supported by hloscan confirm (supported: "
                f"{', '.join(v + 'x' for v in SUPPORTED_JAX)})")
    return None


# ---------------------------------------------------------------------------------------------- compile


def _devices(topology: str, count: int):
    from jax.experimental import topologies

    desc = topologies.get_topology_desc(platform="tpu", topology_name=topology)
    devices = list(desc.devices)
    if count > len(devices):
        raise ValueError(f"the module has {count} partitions but topology {topology} has "
                         f"{len(devices)} devices; give a larger --topology (e.g. v5e:4x4)")
    return devices[:count]


def _to_mlir(hlo_text: str, host_params: list[int], host_results: list[int]):
    """HLO text -> an ir.Module in the current context, with the host memory spaces (S(5)) the conversion
    drops put back as `mhlo.memory_kind = "pinned_host"` (without them host-offload programs fail E1200)."""
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir

    module = xc.hlo.hlo_module_from_text(hlo_text)
    computation = xc.XlaComputation(module.as_serialized_hlo_module_proto())
    mlir = xc._xla.mlir.xla_computation_to_mlir_module(computation)
    parsed = ir.Module.parse(mlir)
    if host_params or host_results:
        _mark_host(parsed, host_params, host_results)
    return parsed


def _mark_host(module, host_params: list[int], host_results: list[int]) -> None:
    from jax._src.lib.mlir import ir

    main = next(op for op in module.body.operations if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    signature = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    kind = ir.StringAttr.get("pinned_host")
    for attr_name, wanted, count in (("arg_attrs", host_params, len(signature.inputs)),
                                     ("res_attrs", host_results, len(signature.results))):
        if not wanted:
            continue
        old = list(main.attributes[attr_name]) if attr_name in main.attributes else [ir.DictAttr.get({})] * count
        new = []
        for number, entry in enumerate(old):
            fields = {named.name: named.attr for named in ir.DictAttr(entry)}
            if number in wanted:
                fields["mhlo.memory_kind"] = kind
            new.append(ir.DictAttr.get(fields))
        main.attributes[attr_name] = ir.ArrayAttr.get(new)


def compile_request(request: dict) -> dict:
    found = versions()
    result: dict = {"versions": found, "status": "unsupported", "error": None, "memory_analysis": {},
                    "compile_s": 0.0, "device_kind": "", "device_count": 0, "topology": request.get("topology")}
    problem = unsupported(found)
    if problem:
        result["error"] = problem
        return result
    from jax._src.interpreters import mlir as jm
    from jax._src.lib import xla_client as xc

    partitions = max(1, int(request.get("num_partitions") or 1))
    try:
        devices = _devices(request["topology"], partitions)
    except Exception as exc:  # an unknown topology name: libtpu's own words
        result["status"], result["error"] = "unsupported", f"topology {request['topology']!r}: {exc}"
        return result
    result["device_kind"], result["device_count"] = devices[0].device_kind, len(devices)
    with jm.make_ir_context():
        try:
            module = _to_mlir(request["hlo_text"], request.get("host_params") or [],
                              request.get("host_results") or [])
        except Exception as exc:
            result["status"], result["error"] = "convert_error", f"{type(exc).__name__}: {exc}"
            return result
        options = _options(request.get("dump_to"), partitions, xc)
        start = time.perf_counter()
        try:
            exe = devices[0].client.compile(module, executable_devices=xc.DeviceList(tuple(devices)),
                                            compile_options=options)
        except Exception as exc:
            result["status"], result["error"] = "compile_error", f"{type(exc).__name__}: {exc}"
            exe = None
        result["compile_s"] = round(time.perf_counter() - start, 2)
    if exe is not None:
        result["status"] = "compiled"
        result["memory_analysis"] = _memory_analysis(exe)
    return result


def _options(dump_to: str | None, partitions: int, xc):
    options = xc.CompileOptions()
    if dump_to:  # the parent's folder: it reads after_codegen and the memory-usage report from there
        options.env_option_overrides = [("xla_dump_to", dump_to), ("xla_dump_hlo_as_text", True)]
    if partitions > 1:
        options.num_partitions = partitions
        options.executable_build_options.num_partitions = partitions
        options.executable_build_options.use_spmd_partitioning = True
    return options


def _memory_analysis(exe) -> dict[str, int]:
    try:
        stats = exe.get_compiled_memory_stats()
    except Exception:  # not every client reports it; the figure is then absent, not invented
        return {}
    return {f: int(getattr(stats, f)) for f in _MEMORY_ANALYSIS_FIELDS if hasattr(stats, f)}


def main() -> int:
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as exc:
        json.dump({"status": "convert_error", "error": f"bad request: {exc}"}, sys.stdout)
        return 0
    # libtpu and jax write progress and warnings on stdout/stderr; keep stdout for the one JSON result.
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        result = compile_request(request)
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Mosaic kernels written as MLIR text (real TPU dumps carry them): decoded like bytecode, estimated exactly."""

from __future__ import annotations

import base64

import pytest

from corpus import corpus_dir
from hloscan.hlo.loader import load
from hloscan.analyses.vmem.mosaic import read_kernel
from hloscan.analyses.vmem.mosaic.bytecode import BytecodeError
from hloscan.analyses.vmem.estimate import estimate_kernel, parse_backend_config

KERNEL = """module attributes {stable_mosaic.version = 3 : i64} {
  func.func @main(%arg0: i32, %arg1: i32, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<16x256xbf16, #tpu.memory_space<vmem>>, %arg4: memref<1x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 4, 2>, scratch_operands = 1 : i64, window_params = [{transform_indices = @in_fn, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @out_fn, window_bounds = array<i64: 16, 256>}]} {
    %c0 = arith.constant 0 : index
    %0 = vector.load %arg2[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    return
  }
  func.func @in_fn(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    return %arg0, %c0_i32 : i32, i32
  }
  func.func @out_fn(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg1, %arg0 : i32, i32
  }
}
"""


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_text_kernel_fields():
    k = read_kernel(b64(KERNEL))
    assert k.name == "main" and k.grid == (4, 2) and k.producer == "mlir-text" and k.mosaic_version == 3
    assert k.dimension_semantics == ("parallel", "arbitrary")
    assert k.scratch_operands == 1
    assert [t.text for t in k.operand_types] == ["memref<8x128xf32, #tpu.memory_space<vmem>>",
                                                 "memref<16x256xbf16, #tpu.memory_space<vmem>>"]
    assert [t.space for t in k.scratch_types] == ["vmem"]
    first, second = k.window_params
    assert first.window_bounds == (8, 128) and first.index_map == ("g0", 0) and first.buffer_count is None
    assert second.pipeline_mode == "synchronous" and second.buffer_count == 1 and second.index_map == ("g1", "g0")
    assert "vector.load" in k.op_names and "arith.constant" in k.op_names
    assert k.grid_indices_read == ()  # the body reads neither grid index (%arg1 is not %arg10)


def test_text_kernel_grid_indices_read_by_the_body():
    body = KERNEL.replace("    return\n  }\n  func.func @in_fn",
                          "    %1 = arith.cmpi eq, %arg1, %c0_i32 : i32\n    return\n  }\n  func.func @in_fn", 1)
    assert read_kernel(b64(body)).grid_indices_read == (1,)


@pytest.mark.parametrize("text", ["func.func @main(%arg0: memref<8x", "module { func.func @f( ) attributes {x = [} }",
                                  "module {}\n" + "(" * 5000])
def test_malformed_text_is_a_bytecode_error(text):
    with pytest.raises(BytecodeError):
        read_kernel(b64(text))


def test_real_v5e_dump_text_kernels_estimate_exactly_what_xla_measured():
    path = corpus_dir("big") / "gpt16-tpu-v5e.after_optimizations.hlo.txt.xz"
    (module,) = load(path)
    kernels = [(c, i) for c, i in module.instructions() if i.custom_call_target == "tpu_custom_call"]
    assert len(kernels) == 16
    for comp, inst in kernels:
        config = parse_backend_config(inst.attr("backend_config"))
        assert read_kernel(config["custom_call_config"]["body"]).grid == (4, 4, 1, 1)
        operands = [op.shape or comp.by_name[op.name].shape for op in inst.operands]
        est = estimate_kernel(inst.attr("backend_config"), operands, inst.shape, tpu="v5e", instruction_name=inst.name)
        assert est.decode_error is None
        assert est.kind == "measured" and est.measured_bytes == est.predicted_bytes == 131072

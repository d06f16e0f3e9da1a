"""StableHLO / MLIR text given to hloscan: an HLO001 error at the module start that says what to do
(issue 11, item 4). Before: `HLO001 expected one of '#', '(', ... found '@jit_f'`."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hloscan.cli import main
from hloscan.hlo.mlir_input import mlir_dialect
from hloscan.hlo.parser import HloSyntaxError, parse_text

STABLEHLO = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
WITH_LOCATIONS = '// leading comment\n\n#loc1 = loc("x")\n' + STABLEHLO
MHLO_FUNC = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = mhlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"


@pytest.mark.parametrize("text, line, dialect", [(STABLEHLO, 1, "StableHLO MLIR"), (WITH_LOCATIONS, 3, "StableHLO MLIR"),
                                                 (MHLO_FUNC, 1, "MHLO MLIR")])
def test_mlir_is_rejected_with_advice(text, line, dialect):
    with pytest.raises(HloSyntaxError) as info:
        parse_text(text, "f.mlir.txt")
    err = info.value
    assert (err.code, err.line, err.col) == ("HLO001", line, 1)
    assert dialect in err.message and 'as_text(dialect="hlo")' in err.message and "--xla_dump_to" in err.message
    assert err.format().startswith(f"f.mlir.txt:{line}:1: HLO001 this is {dialect} text")


def test_lit_split_offsets_lines():
    text = "HloModule a\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n// -----\n" + STABLEHLO
    with pytest.raises(HloSyntaxError) as info:
        parse_text(text, "x.txt")
    assert info.value.line == 6 and "StableHLO" in info.value.message


def test_hlo_mentioning_stablehlo_is_not_mlir():
    hlo = ('HloModule module_with_attrs, frontend_attributes={mhlo.frontend="stablehlo.add tensor<4xf32>"}\n\n'
           'ENTRY main {\n  ROOT p = f32[4]{0} parameter(0), metadata={op_name="stablehlo.add"}\n}\n')
    assert parse_text(hlo)[0].name == "module_with_attrs"
    assert mlir_dialect(hlo) is None
    # A broken HLO module keeps the grammar's own message.
    with pytest.raises(HloSyntaxError) as info:
        parse_text("HloModule m\nENTRY main {\n  ROOT p = f32[4]{0} parameter(0\n}\n")
    assert "MLIR" not in info.value.message


def test_cli_exit_2_with_position(tmp_path):
    path = tmp_path / "lowered.txt"
    path.write_text(STABLEHLO)
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 2
    assert f"{path}:1:1: HLO001 this is StableHLO MLIR text, not HLO text" in result.output
    assert "Traceback" not in result.output

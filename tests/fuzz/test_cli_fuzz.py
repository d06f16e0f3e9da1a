"""The CLI end to end on mutated and generated inputs: every command present, every format, no traceback."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, Phase, given, settings

from . import cli_driver, mutators
from .generate import modules
from .seeds import BUILTIN, seed_or_builtin


def _assert_runs_clean(paths: list[str]) -> None:
    problems = [p for run in cli_driver.run_all_commands(paths)
                if not cli_driver.is_known_open(run) and (p := run.problem() or cli_driver.json_problem(run))]
    assert not problems, "\n\n".join(problems)


def test_cli_on_mutated_inputs(tmp_path):
    rng = random.Random(1234)
    good = cli_driver.write_input(str(tmp_path), "good.hlo", BUILTIN)
    for i in range(6):
        data = mutators.mutate(seed_or_builtin(rng.randrange(10**6)), rng, allow_big=False)
        _assert_runs_clean([cli_driver.write_input(str(tmp_path), f"m{i}.hlo", data), good])


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
          phases=[Phase.generate])  # no shrinking: each CLI pass is ~0.3 s
@given(modules())
def test_cli_on_generated_modules(tmp_path_factory, module):
    folder = str(tmp_path_factory.mktemp("gen"))
    _assert_runs_clean([cli_driver.write_input(folder, "gen.hlo", module.to_text().encode("utf-8"))])


def test_bad_file_is_exit_2_and_others_still_reported(tmp_path):
    good = cli_driver.write_input(str(tmp_path), "good.hlo", BUILTIN)
    bad = cli_driver.write_input(str(tmp_path), "bad.hlo", BUILTIN[:700])
    binary = cli_driver.write_input(str(tmp_path), "bin.hlo", b"HloModule x\n\xff\x00")
    good2 = cli_driver.write_input(str(tmp_path), "good2.hlo", BUILTIN)
    run = cli_driver.invoke(["check", good, bad, binary, good2, "--format", "json"])
    assert run.crash is None and run.exit_code == 2, run.crash or run.output
    files = {f["path"]: f for f in json.loads(run.output)["files"]}
    assert [files[p]["ok"] for p in (good, bad, binary, good2)] == [True, False, False, True]
    for p in (bad, binary):
        assert files[p]["error"]["line"] >= 1 and files[p]["error"]["col"] >= 1
    text = cli_driver.invoke(["check", good, bad, good2])
    assert text.exit_code == 2
    parse = cli_driver.invoke(["parse", bad, good])
    assert parse.exit_code == 2 and parse.crash is None

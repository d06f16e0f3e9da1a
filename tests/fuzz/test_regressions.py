"""Every input a fuzz campaign ever broke hloscan with (fixtures/fuzz/*.hlo) must now pass every stage."""

from __future__ import annotations

import pytest

from corpus import FIXTURES as FIXTURES_ROOT

from .oracle import run_input

FIXTURES = FIXTURES_ROOT / "fuzz"
CASES = sorted(FIXTURES.glob("*.hlo"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_regression(path):
    data = path.read_bytes()
    outcome = run_input(data)
    assert not outcome.failures, "\n\n".join(f"[{f.stage}] {f.detail}" for f in outcome.failures)
    if outcome.error is not None:
        assert outcome.error.line >= 1 and outcome.error.col >= 1


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_regression_through_the_cli(path, tmp_path):
    from . import cli_driver

    copy = cli_driver.write_input(str(tmp_path), path.name, path.read_bytes())
    problems = [p for run in cli_driver.run_all_commands([copy])
                if not cli_driver.is_known_open(run) and (p := run.problem() or cli_driver.json_problem(run))]
    assert not problems, "\n\n".join(problems)

"""Mutated real dumps: every stage either succeeds or gives a clear HLO001, never a traceback or a lie."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import mutators
from .oracle import run_input
from .seeds import BUILTIN, seed_count, seed_or_builtin

FUZZ_SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _assert_clean(outcome, data: bytes) -> None:
    assert not outcome.failures, f"input ({len(data)} bytes) {data[:300]!r}\n\n" + "\n\n".join(
        f"[{f.stage}] owner={f.owner}\n{f.detail}" for f in outcome.failures)


@FUZZ_SETTINGS
@given(seed=st.integers(0, 10**6), rng=st.randoms(use_true_random=False))
def test_mutated_corpus(seed, rng):
    data = seed_or_builtin(seed)
    mutated = mutators.mutate(data, rng, allow_big=False)
    _assert_clean(run_input(mutated), mutated)


@pytest.mark.parametrize("mutator", mutators.MUTATORS, ids=lambda m: m.__name__)
def test_each_mutator_on_builtin(mutator):
    """Every mutation class, several positions each, on the feature-rich built-in module."""
    for round_ in range(8):
        mutated = mutator(BUILTIN, random.Random(round_))
        _assert_clean(run_input(mutated), mutated)


@pytest.mark.parametrize("cut", range(0, len(BUILTIN), 7))
def test_truncation_everywhere(cut):
    """Truncating at every 7th byte covers mid-token, mid-string, mid-brace and after-`=` cuts."""
    data = BUILTIN[:cut]
    _assert_clean(run_input(data), data)


def test_seeds_are_available():
    assert seed_count() >= 2

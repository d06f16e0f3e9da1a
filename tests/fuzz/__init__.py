"""Robustness fuzzing for hloscan: mutated corpus files, generated modules, and the CLI, under strict invariants.

Why hypothesis rather than atheris: hloscan is pure Python, so coverage-guided native fuzzing buys little
over hypothesis, which is already a dev dependency, runs inside pytest with fixed seeds (reproducible CI),
shrinks failures to small examples on its own, and needs no clang/libFuzzer build. The long campaign
(`python -m tests.fuzz.campaign`) uses a seeded `random.Random` loop for throughput plus a
delta-debugging minimiser, and writes every crash it finds to fixtures/fuzz/ as a regression input.
"""

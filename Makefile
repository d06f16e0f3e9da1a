# All set-up happens here: a fresh machine needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
RUN_STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test bench fuzz clean venv confirm-corpus confirm-exact

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,report,tpu]'
	touch $(STAMP) $(RUN_STAMP)

# The demo needs hloscan and its runtime dependencies only (not pytest, hypothesis, ...).
$(RUN_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

venv: $(STAMP)

## Run hloscan on the bundled example dump.
demo: $(RUN_STAMP)
	$(BIN)/hloscan check fixtures/demo/offload_output.hlo.txt || test $$? -eq 1

## Run the whole test suite (reads ../shared/corpus when present; required when CI=true).
test: $(STAMP)
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

## A whole `hloscan check` and load+graph on the big dumps and a 255 MB input built from them (in build/bench/), every
## command on gpt48 as a ratio to check, the result cache (first run and re-run, gpt48 and 1,000 small dumps), and
## check of every corpus folder;
## prints times, peak RSS and the ratio to XLA's C++ parser, timed in the same run when jaxlib is importable
## (HLOSCAN_XLA_PYTHON=/path/to/python with jax), else the recorded figure. BENCH_REPEAT=3: best of N.
bench: $(STAMP)
	$(BIN)/python tests/bench_parse.py

## A long seeded fuzzing campaign (CI runs a short one inside the suite).
FUZZ_MINUTES ?= 10
FUZZ_SEED ?= 1
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz.campaign --minutes $(FUZZ_MINUTES) --seed $(FUZZ_SEED)

## `hloscan confirm` and `vmem --exact` on all 103 cases of ../shared/corpus/tpu-oracle/real against the recorded
## compiler verdicts and figures (~45 min on 2 cores; resumes from build/confirm-corpus/results.jsonl).
## On a shared machine wrap it: flock /tmp/oracle.lock nice -n 5 make confirm-corpus
confirm-corpus: $(STAMP)
	$(BIN)/python tests/confirm/verify_corpus.py

## `vmem --exact` on every kernel of the corpus's pallas cases, in one process (~2 min), against the whole-program
## figures: as compiled alone, and moved to the whole program's (or hloscan's predicted) placement.
## On a shared machine: flock /tmp/oracle.lock nice -n 5 make confirm-exact
confirm-exact: $(STAMP)
	$(BIN)/python tests/confirm/exact_corpus.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache

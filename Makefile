PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench corpus fuzz lint format clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# public-kernel acceptance run: CORPUS holds checkouts of nki-library, nki-samples, aws-neuron-sdk
CORPUS ?= ../corpus
JOBS ?= 2
corpus: $(STAMP)
	$(BIN)/python -m benchmarks.corpus --corpus $(CORPUS) --jobs $(JOBS) --migrate $(if $(FILTER),--filter $(FILTER),--out docs/coverage.md) $(if $(filter-out 0,$(NUMERICS)),--numerics) $(if $(COMPARE),--compare $(COMPARE))

# hostile-input fuzzing for a fixed budget (FUZZ_SECONDS); report in fuzz-report.md
FUZZ_SECONDS ?= 300
fuzz: $(STAMP)
	$(BIN)/python tests/fuzz/harness.py --seconds $(FUZZ_SECONDS) --report fuzz-report.md

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info

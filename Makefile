# Two commands for a newcomer:  make demo  |  make test
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STORE ?= .vectree

.PHONY: install demo test ui bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

demo: install  ## write the demo corpus, ingest it, ask it questions
	$(BIN)/vectree demo --store $(STORE)

test: install  ## run the test suite
	$(BIN)/python -m pytest -q

ui: install  ## the Dagster UI over the same store the CLI writes
	DAGSTER_HOME=$(abspath $(STORE))/dagster VECTREE_STORE=$(abspath $(STORE)) \
		$(BIN)/dagster dev -w workspace.yaml

bench: install  ## every benchmark script, each printing its own table
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(STORE) .pytest_cache

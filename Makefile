# Two commands for a newcomer:  make demo  |  make test
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STORE ?= .vectree
DEMO_STORE ?= .vectree-demo
UI_HOST ?= 127.0.0.1
UI_PORT ?= 3000

.PHONY: install demo test ui bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	# the Celery executor (VECTREE_EXECUTOR=celery): 0.29.28, the family version of dagster 1.13.28,
	# is not on PyPI; 0.29.27 pins dagster==1.13.27, so it goes in without its pins (README)
	$(BIN)/python -m pip install -q --no-deps "dagster-celery==0.29.27"
	touch $@

demo: install  ## write the demo corpus into its own store, ingest it, ask it questions
	@echo "demo store: $(abspath $(DEMO_STORE)) (your own papers: $(abspath $(STORE)))"
	$(BIN)/vectree demo --store $(DEMO_STORE)

test: install  ## run the test suite
	$(BIN)/python -m pytest -q

ui: install  ## the Dagster UI over the same store the CLI writes (make ui STORE=.vectree-demo for the demo)
	@echo "Dagster UI: http://$(UI_HOST):$(UI_PORT)  (store $(abspath $(STORE)); Ctrl-C stops it)"
	DAGSTER_HOME=$(abspath $(STORE))/dagster VECTREE_STORE=$(abspath $(STORE)) \
		$(BIN)/dagster dev -w workspace.yaml -h $(UI_HOST) -p $(UI_PORT)

bench: install  ## every benchmark script, each printing its own table
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(STORE) $(DEMO_STORE) .pytest_cache

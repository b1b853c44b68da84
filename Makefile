# patchwork-arena: `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: help install demo test lint bench bench-bots soak clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv with the project installed in editable mode

demo: $(STAMP)  ## the main job: a round robin of the sample bots, then the ratings table
	$(BIN)/arena run-tournament
	$(BIN)/arena ratings results/demo

test: $(STAMP)  ## run the test suite
	$(BIN)/pytest -q

lint: $(STAMP)  ## ruff and mypy
	$(BIN)/ruff check arena tests sample_bots
	$(BIN)/mypy arena

bench: $(STAMP)  ## print performance figures
	$(BIN)/python -m arena.bench

bench-bots: $(STAMP)  ## bot strength: mcts against greedy and random, 200 games each at 1 s per move (over an hour)
	$(BIN)/python -m arena.bench_bots --games 200 --per-move-ms 1000

soak: $(STAMP)  ## the sandbox soak: 2,000+ games of sample and misbehaving bots under --sandbox strict
	$(BIN)/python -m tests.soak --games 2000

clean:  ## remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

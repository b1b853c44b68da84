# patchwork-arena: `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Debian packages: gcc builds the C sample bot, bubblewrap (+ util-linux's setpriv) is the
# strict sandbox that tournaments use by default (libseccomp2: its seccomp filter), chromium
# drives the HTML tests; g++, nodejs and default-jre-headless run the starter kits of
# `arena new-bot` in their tests (the JRE alone compiles the Java kit: it carries javac's module);
# golang-go, rustc and cargo build the Go and Rust bots of the hint tests (tests/bots/test_authors.py);
# libzmq3-dev and libjeromq-java make the C and Java bots of tests/channel/test_zmq_stacks.py (its
# Node bot's zeromq.js comes from npm, at test time).
DEMO_PACKAGES := gcc bubblewrap util-linux libseccomp2
TEST_PACKAGES := $(DEMO_PACKAGES) chromium chromium-driver g++ nodejs default-jre-headless golang-go rustc cargo \
	libzmq3-dev libjeromq-java

# $(call debian_packages,LIST): install the missing ones when we are root on Debian;
# otherwise say what is missing and carry on (what needs them then fails with that advice).
define debian_packages
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	  else echo "warning: missing Debian packages:$$missing (as root: apt-get install$$missing)"; fi; \
	fi
endef

.PHONY: help install system-packages demo test test-slow test-all lint wheel-check bench bench-bots soak clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(if $(shell $(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || echo missing),$(call debian_packages,python3-venv))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

system-packages:  ## install the Debian packages the tests need (as root; demo needs only gcc and bubblewrap)
	$(call debian_packages,$(TEST_PACKAGES))

install: $(STAMP)  ## create .venv with the project installed in editable mode

demo: $(STAMP)  ## the main job: a round robin of the sample bots, the ratings table, the report
	$(call debian_packages,$(DEMO_PACKAGES))
	$(BIN)/arena run-tournament
	$(BIN)/arena ratings results/demo
	$(BIN)/arena report results/demo

# The fast suite runs on two pytest-xdist workers, test by test (--dist loadgroup: the tests of an
# xdist_group, such as a file whose module fixture plays a tournament, go to one worker); the slow
# suite runs in one process (its tests count processes, cgroups and scratch folders machine-wide).
test: $(STAMP) system-packages  ## run the test suite, but the tests marked slow (about 3 minutes on two cores)
	$(BIN)/pytest -q -m "not slow" -n 2 --dist loadgroup

test-slow: $(STAMP) system-packages  ## run the slow end-to-end tests (a Dask cluster, the short soak, strict mcts...)
	$(BIN)/pytest -q -m slow

test-all: test test-slow  ## both: every test (what CI runs)

lint: $(STAMP)  ## ruff, mypy and the layers' import contracts (import-linter, in pyproject.toml)
	$(BIN)/ruff check arena tests sample_bots
	$(BIN)/mypy arena
	$(BIN)/lint-imports

# The wheel as a user installs it: built from this checkout, installed into a fresh venv (with
# the [dask] extra), and the demo tournament run from an empty folder outside the checkout.
WHEEL_DIR := $(shell mktemp -d -u /tmp/arena-wheel-check.XXXXXX)
wheel-check: $(STAMP)  ## build the wheel, install it in a fresh venv, run a short tournament outside the checkout
	$(call debian_packages,$(DEMO_PACKAGES))
	mkdir -p $(WHEEL_DIR)/work
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir $(WHEEL_DIR)/dist .
	$(PYTHON) -m venv $(WHEEL_DIR)/venv
	$(WHEEL_DIR)/venv/bin/pip install --quiet "$$(ls $(WHEEL_DIR)/dist/*.whl)[dask]"
	cd $(WHEEL_DIR)/work && $(WHEEL_DIR)/venv/bin/arena run-tournament --games 2 --out demo
	cd $(WHEEL_DIR)/work && $(WHEEL_DIR)/venv/bin/arena report demo
	test -s $(WHEEL_DIR)/work/demo/report/index.html
	cd $(WHEEL_DIR)/work && $(WHEEL_DIR)/venv/bin/arena new-bot kit --lang python | grep "site-packages/arena/protocol/PROTOCOL.md"
	test -s "$$($(WHEEL_DIR)/venv/bin/python -c 'import arena.protocol, pathlib; print(pathlib.Path(arena.protocol.__file__).parent / "PROTOCOL.md")')"
	rm -rf $(WHEEL_DIR)
	@echo "wheel-check: the installed wheel ran a tournament and wrote its report outside the checkout; PROTOCOL.md ships in it"

# make bench FASTCHESS=/path/to/fastchess [STOCKFISH=/path/to/stockfish]: the peer section's side-by-side
# (without FASTCHESS it compares with a C pipe floor; see docs/performance.md to build fastchess).
FASTCHESS ?=
STOCKFISH ?=
bench: $(STAMP)  ## print performance figures (all sections, harness and peer included: about 30 min; FASTCHESS=PATH)
	$(call debian_packages,$(DEMO_PACKAGES))
	$(BIN)/python -m arena.bench $(if $(FASTCHESS),--fastchess $(FASTCHESS)) $(if $(STOCKFISH),--stockfish $(STOCKFISH))

bench-bots: $(STAMP)  ## bot strength: mcts against greedy and random, 200 games each at 1 s per move (over an hour)
	$(BIN)/python -m arena.bench_bots --games 200 --per-move-ms 1000

soak: $(STAMP)  ## the sandbox soak: 2,000+ games of sample and misbehaving bots under --sandbox strict
	$(call debian_packages,$(DEMO_PACKAGES))
	$(BIN)/python -m tests.soak --games 2000

clean:  ## remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

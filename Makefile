# The two entry points the README promises: `make demo` and `make test`.
# Both create .venv, install the Python dependencies and build the Rust core.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The Cargo workspace: scheduler_core and json_prune (the native key pruner in front of
# squeue --json decoding), which maturin builds into the one extension quotatop.scheduler_core._core.
CARGO_MANIFEST := Cargo.toml

.PHONY: demo demo-setup test build lint rust-test py-test fuzz system-deps bench clean

$(BIN)/maturin:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip 'maturin>=1.7,<2'

build: $(BIN)/maturin
	$(BIN)/maturin develop --release -q -E dev

# The demo installs and builds only what it runs, and says what it is doing: the TUI's
# packages (pyproject's runtime dependencies without the cluster clients and servers that
# only a live source imports: scripts/demo_requirements.py) and the core, built in place
# with cargo's progress shown, json_prune inside it as `pip install .` builds it. `make
# build` adds those clients and the dev tools. bench/first_run.py times a fresh clone to
# the first painted frame.
demo-setup: $(BIN)/maturin
	@echo "==> quotatop demo: installing the TUI's Python packages"
	$(BIN)/python scripts/demo_requirements.py > $(VENV)/demo-requirements.txt
	$(BIN)/pip install -q -r $(VENV)/demo-requirements.txt
	@echo "==> quotatop demo: building the Rust scheduling core (a minute or so the first time)"
	$(BIN)/maturin develop --release --skip-install

demo: demo-setup
	$(BIN)/python -m quotatop

system-deps:
	bash scripts/install-system-deps.sh

# lint-imports: the import contract of docs/architecture.md ([tool.importlinter] in pyproject.toml).
lint: build
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	cargo fmt --all --check --manifest-path $(CARGO_MANIFEST)
	cargo clippy --manifest-path $(CARGO_MANIFEST) --all-targets -- -D warnings
	PYO3_PYTHON=$(abspath $(BIN)/python) cargo clippy --manifest-path $(CARGO_MANIFEST) --all-targets --features python -- -D warnings

rust-test:
	cargo test --manifest-path $(CARGO_MANIFEST)

py-test: build
	$(BIN)/python -m pytest

test: system-deps build lint rust-test py-test

# The fuzz suite with a long budget (docs/fuzzing.md); py-test runs it with a short one.
# QUOTATOP_FUZZ_EXAMPLES=N sets the examples per test (default 20000).
fuzz: build
	QUOTATOP_FUZZ_PROFILE=long $(BIN)/python -m pytest tests/fuzz -q -p no:randomly --hypothesis-show-statistics

bench: build
	for b in crossing core slurm_parse tui recording_size replay backfill; do $(BIN)/python bench/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) target scheduler_core/*.so scheduler_core/target json_prune/target

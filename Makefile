# The two commands a newcomer needs: `make demo` and `make test`.
# Everything else is cargo; see README.md.

CARGO ?= cargo

.PHONY: demo test build release lint python python-test

# Builds the release binary and runs the random-read benchmark on a 1 GiB file.
demo: release
	./target/release/prefetch demo

# Builds everything (the C examples link target/debug/libprefetch.so) and runs all tests.
test: build
	$(CARGO) test --workspace --no-fail-fast
	$(MAKE) python-test

build:
	$(CARGO) build --workspace

release:
	$(CARGO) build --workspace --release

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The Python package (python/): a fresh virtual environment from the python3 on PATH with maturin and
# pytest from PyPI, the abi3 wheel built into target/wheels and installed there.
# PY_PROFILE=release builds an optimised wheel (for `python -m libprefetch.bench`).
PYTHON ?= python3
PY_VENV ?= target/python-venv
PY_PROFILE ?= dev

python:
	rm -rf $(PY_VENV) target/wheels
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q maturin pytest
	$(PY_VENV)/bin/maturin build -q --profile $(PY_PROFILE) --strip -m python/Cargo.toml -o target/wheels
	$(PY_VENV)/bin/pip install -q --no-deps target/wheels/libprefetch-*.whl

python-test: python
	$(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider python/tests

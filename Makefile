# The two commands a newcomer needs: `make demo` and `make test`.
# Everything else is cargo; see README.md.

CARGO ?= cargo

.PHONY: demo test build release lint

# Builds the release binary and runs the random-read benchmark on a 1 GiB file.
demo: release
	./target/release/prefetch demo

# Builds everything (the C examples link target/debug/libprefetch.so) and runs all tests.
test: build
	$(CARGO) test --workspace --no-fail-fast

build:
	$(CARGO) build --workspace

release:
	$(CARGO) build --workspace --release

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

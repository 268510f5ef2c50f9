# The two commands a newcomer needs: `make demo` and `make test`.
# `make install` (PREFIX, DESTDIR) installs the command, the library, the header, pkg-config file,
# SQLite extension and man pages; `make uninstall` removes them. Everything else is cargo; see README.md.

CARGO ?= cargo
# Where cargo builds: target/, or $CARGO_TARGET_DIR when set.
TARGET := $(or $(CARGO_TARGET_DIR),target)

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
SONAME := libprefetch.so.0
MAN3 := $(notdir $(wildcard man/man3/*.3))

.PHONY: demo test build release lint man install uninstall python python-test

# Builds the release binary and runs the random-read benchmark on a 1 GiB file
# (DEMO_ARGS="--file-size 64M --runs 1" for a quick check; see `prefetch demo --help`).
DEMO_ARGS ?=
demo: release
	$(TARGET)/release/prefetch demo $(DEMO_ARGS)

# Builds everything (the C examples link target/debug/libprefetch.so) and runs all tests.
test: build
	$(CARGO) test --workspace --no-fail-fast
	$(MAKE) python-test

# Each build also links libprefetch.so.0 -> libprefetch.so: programs linked with -lprefetch
# look for the soname at run time.
build:
	$(CARGO) build --workspace
	ln -sf libprefetch.so $(TARGET)/debug/$(SONAME)

release:
	$(CARGO) build --workspace --release
	ln -sf libprefetch.so $(TARGET)/release/$(SONAME)

# Also: no import circle between the files of any crate (scripts/import_cycles.py), counted with
# --strict (paths into child modules and through re-exports).
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/import_cycles.py --strict $(wildcard crates/*/)

# The Python package (python/): a fresh virtual environment from the python3 on PATH with maturin and
# pytest from PyPI (and what the simulator's tests use: dask, distributed, pandas, pyarrow, matplotlib),
# the abi3 wheel built into target/wheels and installed there.
# PY_PROFILE=release builds an optimised wheel (for `python -m libprefetch.bench`).
PYTHON ?= python3
PY_VENV ?= target/python-venv
PY_PROFILE ?= dev

python:
	rm -rf $(PY_VENV) target/wheels
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q maturin pytest numpy dask distributed pandas pyarrow matplotlib
	$(PY_VENV)/bin/maturin build -q --profile $(PY_PROFILE) --strip -m python/Cargo.toml -o target/wheels
	$(PY_VENV)/bin/pip install -q --no-deps target/wheels/libprefetch-*.whl

# The tests load the C library and the SQLite extension of the wheel's profile beside the package.
PY_LIBS = $(if $(filter release,$(PY_PROFILE)),release,build)
PY_LIB_DIR = $(if $(filter release,$(PY_PROFILE)),release,debug)

python-test: python $(PY_LIBS)
	PREFETCH_TEST_PROFILE_DIR=$(PY_LIB_DIR) $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider python/tests
# One man page per `prefetch` subcommand, from the clap definitions.
man: release
	$(TARGET)/release/prefetch man $(TARGET)/man/man1

install: release man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 755 $(TARGET)/release/prefetch $(TARGET)/release/prefetch-full $(DESTDIR)$(BINDIR)/
	install -m 755 $(TARGET)/release/libprefetch.so $(DESTDIR)$(LIBDIR)/libprefetch.so.$(VERSION)
	ln -sf libprefetch.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libprefetch.so
	install -m 755 $(TARGET)/release/libprefetch_sqlite.so $(DESTDIR)$(LIBDIR)/libprefetch_sqlite.so
	install -m 644 include/libprefetch.h $(DESTDIR)$(INCLUDEDIR)/libprefetch.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' crates/preload/libprefetch.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libprefetch.pc
	install -m 644 $(addprefix man/man3/,$(MAN3)) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(TARGET)/man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	@if [ -z "$(DESTDIR)" ] && grep -qsx '$(LIBDIR)' /etc/ld.so.conf /etc/ld.so.conf.d/*.conf; then \
		if [ "$$(id -u)" = 0 ]; then ldconfig; else echo "run ldconfig as root"; fi; \
	else \
		echo "$(LIBDIR) is not in /etc/ld.so.conf: run programs with LD_LIBRARY_PATH=$(LIBDIR)"; \
		echo "and build them with PKG_CONFIG_PATH=$(PKGCONFIGDIR)"; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/prefetch $(DESTDIR)$(BINDIR)/prefetch-full $(DESTDIR)$(LIBDIR)/libprefetch.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libprefetch.so \
		$(DESTDIR)$(LIBDIR)/libprefetch_sqlite.so $(DESTDIR)$(INCLUDEDIR)/libprefetch.h \
		$(DESTDIR)$(PKGCONFIGDIR)/libprefetch.pc $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(MAN3)) \
		$(DESTDIR)$(MANDIR)/man1/prefetch.1 $(DESTDIR)$(MANDIR)/man1/prefetch-*.1

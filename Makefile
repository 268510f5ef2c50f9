# The two commands a newcomer needs: `make demo` and `make test`.
# `make install` (PREFIX, DESTDIR) installs the command, the library, the header, pkg-config file,
# SQLite extension and man pages; `make uninstall` removes them. Everything else is cargo; see README.md.

CARGO ?= cargo

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml)
SONAME := libprefetch.so.0
MAN3 := $(notdir $(wildcard man/man3/*.3))

.PHONY: demo test build release lint man install uninstall

# Builds the release binary and runs the random-read benchmark on a 1 GiB file
# (DEMO_ARGS="--file-size 64M --runs 1" for a quick check; see `prefetch demo --help`).
DEMO_ARGS ?=
demo: release
	./target/release/prefetch demo $(DEMO_ARGS)

# Builds everything (the C examples link target/debug/libprefetch.so) and runs all tests.
test: build
	$(CARGO) test --workspace --no-fail-fast

# Each build also links libprefetch.so.0 -> libprefetch.so: programs linked with -lprefetch
# look for the soname at run time.
build:
	$(CARGO) build --workspace
	ln -sf libprefetch.so target/debug/$(SONAME)

release:
	$(CARGO) build --workspace --release
	ln -sf libprefetch.so target/release/$(SONAME)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# One man page per `prefetch` subcommand, from the clap definitions.
man: release
	./target/release/prefetch man target/man/man1

install: release man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 755 target/release/prefetch $(DESTDIR)$(BINDIR)/prefetch
	install -m 755 target/release/libprefetch.so $(DESTDIR)$(LIBDIR)/libprefetch.so.$(VERSION)
	ln -sf libprefetch.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libprefetch.so
	install -m 755 target/release/libprefetch_sqlite.so $(DESTDIR)$(LIBDIR)/libprefetch_sqlite.so
	install -m 644 include/libprefetch.h $(DESTDIR)$(INCLUDEDIR)/libprefetch.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' crates/preload/libprefetch.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libprefetch.pc
	install -m 644 $(addprefix man/man3/,$(MAN3)) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 target/man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi
	@echo "installed into $(DESTDIR)$(PREFIX). Programs find libprefetch.so.0 if $(LIBDIR) is in"
	@echo "/etc/ld.so.conf (then run ldconfig as root, done here if you are root); otherwise run them"
	@echo "with LD_LIBRARY_PATH=$(LIBDIR), and build with PKG_CONFIG_PATH=$(PKGCONFIGDIR)."

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/prefetch $(DESTDIR)$(LIBDIR)/libprefetch.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libprefetch.so \
		$(DESTDIR)$(LIBDIR)/libprefetch_sqlite.so $(DESTDIR)$(INCLUDEDIR)/libprefetch.h \
		$(DESTDIR)$(PKGCONFIGDIR)/libprefetch.pc $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(MAN3)) \
		$(DESTDIR)$(MANDIR)/man1/prefetch.1 $(DESTDIR)$(MANDIR)/man1/prefetch-*.1

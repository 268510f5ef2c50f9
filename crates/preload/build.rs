//! Gives `libprefetch.so` its soname, `libprefetch.so.0`, as a versioned C library has (liburing's
//! `liburing.so.2`): programs linked with `-lprefetch` record `libprefetch.so.0` and keep working when
//! a compatible `libprefetch.so.0.x.y` replaces it. `make install` installs the file as
//! `libprefetch.so.0.MINOR.PATCH` with the two usual symlinks; `make build`/`make release` add the
//! `libprefetch.so.0` symlink in `target/` so that programs linked there run too.
//!
//! Deviations: no symbol version tags (liburing's `LIBURING_2.0`). rustc already links the cdylib
//! with its own version script that exports exactly the `#[no_mangle]` functions (the header's
//! `pf_*` and the interposed read family; `tests/exports.rs` checks the list), and GNU ld ignores a
//! second script. Tagging the interposers would also break `LD_PRELOAD`: the dynamic linker binds
//! a program's `read@GLIBC_2.2.5` to glibc, not to a `read@@LIBPREFETCH_0`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libprefetch.so.0");
}

//! What `libprefetch.so` does as it is loaded into a program (an ELF
//! constructor, before `main`): with `LIBPREFETCH_NO_CHILDREN` set (by
//! `prefetch run --no-children`), it takes itself out of the program's
//! `LD_PRELOAD` and removes its own variables, so that programs this one
//! executes run without it; then it starts recording or replaying if
//! `LIBPREFETCH_RECORD` / `LIBPREFETCH_REPLAY` say so
//! (`libprefetch::start_from_env`). Without these variables it does nothing.
//!
//! Follows libprefetch (ATC 2009), section 4: the interposers are loaded
//! into an unmodified program.

use libprefetch::variables::{self, Reader};

/// The variables that choose what the library does in a program started by `prefetch run`
/// (the table's variables read as the library is loaded).
fn own_variables() -> impl Iterator<Item = &'static str> {
    variables::ALL
        .iter()
        .filter(|v| v.reader == Reader::Load)
        .map(|v| v.name)
}

/// Run by the dynamic loader when the library is loaded (`.init_array`).
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| {
        let no_children = variables::NO_CHILDREN.value().is_some_and(|v| v == "1");
        libprefetch::start_from_env();
        if no_children {
            keep_from_children();
        }
    });
}

/// Removes this library from `LD_PRELOAD` and its variables from the
/// environment (before `main`, while the process has one thread).
fn keep_from_children() {
    if let Some(list) = std::env::var_os("LD_PRELOAD") {
        let list = list.to_string_lossy().into_owned();
        let others: Vec<&str> = list
            .split([':', ' '])
            .filter(|entry| !entry.is_empty() && !is_this_library(entry))
            .collect();
        match others.is_empty() {
            true => std::env::remove_var("LD_PRELOAD"),
            false => std::env::set_var("LD_PRELOAD", others.join(":")),
        }
    }
    for variable in own_variables() {
        std::env::remove_var(variable);
    }
}

/// True if an `LD_PRELOAD` entry names libprefetch.so (or its versioned names).
fn is_this_library(entry: &str) -> bool {
    let name = entry.rsplit('/').next().unwrap_or(entry);
    name == "libprefetch.so" || name.starts_with("libprefetch.so.")
}

#[cfg(test)]
mod tests {
    use super::is_this_library;

    #[test]
    fn only_libprefetch_entries_are_this_library() {
        assert!(is_this_library("/opt/x/lib/libprefetch.so"));
        assert!(is_this_library("libprefetch.so.0"));
        assert!(!is_this_library("/usr/lib/libprefetch_sqlite.so"));
        assert!(!is_this_library("/usr/lib/libjemalloc.so"));
    }
}

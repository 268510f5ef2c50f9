//! Builds a C test program, for the tests that run one (included with `#[path]` by those only,
//! so that the other tests sharing `common` have no unused function).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `source` (relative to the repository root) compiled with `cc -O2` into `dir`.
pub fn build_c(source: &str, dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(source);
    let program = dir.join(source.file_stem().expect("a source file name"));
    let built = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&program)
        .arg(&source)
        .status()
        .expect("cc (a C compiler) must be installed");
    assert!(built.success(), "cc {}", source.display());
    program
}

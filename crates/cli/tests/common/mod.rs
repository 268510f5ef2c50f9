//! What the integration tests of `prefetch` share: where cargo put the library they preload.

use std::path::PathBuf;

/// The libprefetch.so cargo built for this test run (next to the test executable).
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test executable");
    let deps = exe.parent().expect("directory of the test executable");
    [deps.join("libprefetch.so"), deps.join("../libprefetch.so")]
        .into_iter()
        .find(|path| path.is_file())
        .expect("libprefetch.so next to the test executable: run `cargo build -p preload`")
}

//! Hands the compiler's version to the crate: two copies of libprefetch in
//! one process share one instance only if the same compiler built them from
//! the same version (`src/instance.rs`).

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .unwrap_or_default();
    println!(
        "cargo:rustc-env=LIBPREFETCH_RUSTC_VERSION={}",
        version.trim()
    );
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=build.rs");
}

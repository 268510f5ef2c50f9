//! `prefetch`: the small executable users run (crate `launch`): `prefetch run` done here, every
//! other command line handed to the full one (`prefetch-full`, `main.rs`) beside it.
//!
//! No paper section (the command line).

fn main() -> std::process::ExitCode {
    launch::front::main()
}

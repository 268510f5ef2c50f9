//! What `prefetch run` does in front of the program it starts, in a crate of its own: the small
//! `prefetch` executable ([`front`]) starts the program without loading the full command line
//! (crate `cli`, `prefetch-full`), which runs the same code for the command lines it parses.
//!
//! - [`args`]: `prefetch run`'s options as values;
//! - [`parse`]: the front's parser of them (the full command line's is clap);
//! - [`exec`]: the environment, the library's checks, and the exec of the program;
//! - [`restorer`]: the start of `--restore`'s restorer beside the program;
//! - [`beside`]: the restorer at work;
//! - [`quiet`]: the restorer's priorities and descriptors.
//!
//! Follows libprefetch (ATC 2009) section 4 through `exec`, and sections 3.3 and 4.6 through
//! `restorer` and `beside`; the rest is this project's command line.

pub mod args;
pub mod beside;
pub mod exec;
pub mod front;
pub mod parse;
pub mod quiet;
pub mod restorer;

/// The error and its causes joined by ": ", leaving out a cause whose text is already in the line
/// (an error that prints its source would otherwise say it twice): what `prefetch` prints after
/// `prefetch: ` when it fails, never a backtrace, even with `RUST_BACKTRACE` set.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain().map(ToString::to_string) {
        if line.contains(&cause) {
            continue;
        }
        if !line.is_empty() {
            line += ": ";
        }
        line += &cause;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_line_joins_the_causes_and_says_each_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let error = anyhow::Error::new(io)
            .context("mount point /mnt/x: No such file or directory")
            .context("prefetch emulate");
        assert_eq!(
            one_line(&error),
            "prefetch emulate: mount point /mnt/x: No such file or directory"
        );
    }
}

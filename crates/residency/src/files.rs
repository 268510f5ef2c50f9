//! From the paths a user gives to the files to probe: directories are recursed.
//!
//! A file named on the command line is taken whatever it is a link to; inside a directory,
//! regular files are taken in name order, subdirectories recursed, and symbolic links and
//! special files (fifos, sockets, devices) left alone, as vmtouch does by default. A special
//! file named on the command line is refused: probing it means nothing.
//!
//! No paper section.

use std::path::{Path, PathBuf};

use crate::Error;

/// The regular files `paths` name, directories expanded, in the order given; fails at the first
/// path or directory entry that cannot be read.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let (files, mut errors) = expand_past_errors(paths);
    match errors.is_empty() {
        true => Ok(files),
        false => Err(errors.swap_remove(0)),
    }
}

/// The regular files `paths` name, directories expanded, in the order given, and an error for
/// each path, directory or entry that could not be read (the rest is still expanded).
pub fn expand_past_errors(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Error>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_dir() => walk(path, &mut files, &mut errors),
            Ok(metadata) if metadata.is_file() => files.push(path.clone()),
            Ok(_) => errors.push(Error::NotRegular { path: path.clone() }),
            Err(source) => errors.push(Error::Open {
                path: path.clone(),
                action: "stat",
                source,
            }),
        }
    }
    (files, errors)
}

/// Appends the regular files under `dir`, recursing, in name order; an entry that cannot be read
/// is an error in `errors`, and the others are still walked.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    let failed = |path: &Path, source| Error::Open {
        path: path.to_path_buf(),
        action: "list the directory",
        source,
    };
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(source) => return errors.push(failed(dir, source)),
    };
    let mut entries = Vec::new();
    for entry in listing {
        match entry {
            Ok(entry) => entries.push(entry),
            Err(source) => errors.push(failed(dir, source)),
        }
    }
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk(&entry.path(), files, errors),
            Ok(kind) if kind.is_file() => files.push(entry.path()),
            Ok(_) => {}
            Err(source) => errors.push(failed(&entry.path(), source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_recursed_in_name_order_and_links_left_alone() {
        let dir = std::env::temp_dir().join(format!("residency-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("b"), "b").unwrap();
        std::fs::write(dir.join("sub/a"), "a").unwrap();
        std::fs::write(dir.join("a"), "a").unwrap();
        std::os::unix::fs::symlink(dir.join("a"), dir.join("c-link")).unwrap();
        let found = expand(std::slice::from_ref(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        let names: Vec<PathBuf> = found
            .unwrap()
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_path_buf())
            .collect();
        assert_eq!(names, ["a", "b", "sub/a"].map(PathBuf::from));
    }

    #[test]
    fn a_path_that_cannot_be_read_is_an_error_and_the_rest_is_still_expanded() {
        let dir = std::env::temp_dir().join(format!("residency-past-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b"), "b").unwrap();
        // As a /proc directory that vanishes between its listing and its walk.
        let gone = dir.join("gone");
        let mut files = Vec::new();
        let mut errors = Vec::new();
        walk(&gone, &mut files, &mut errors);
        let (more, more_errors) = expand_past_errors(&[dir.join("missing"), dir.clone()]);
        std::fs::remove_dir_all(&dir).unwrap();
        files.extend(more);
        errors.extend(more_errors);
        assert_eq!(files, [dir.join("b")]);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("gone") && messages[1].contains("missing"));
    }

    #[test]
    fn a_special_file_named_on_the_command_line_is_refused() {
        let error = expand(&[PathBuf::from("/dev/null")]).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}

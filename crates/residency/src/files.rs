//! From the paths a user gives to the files to probe: directories are recursed.
//!
//! A file named on the command line is taken whatever it is a link to; inside a directory,
//! regular files are taken in name order, subdirectories recursed, and symbolic links and
//! special files (fifos, sockets, devices) left alone, as vmtouch does by default. A special
//! file named on the command line is refused: probing it means nothing.
//!
//! No paper section. Deviations: none.

use std::path::{Path, PathBuf};

use crate::Error;

/// The regular files `paths` name, directories expanded, in the order given.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path).map_err(|source| Error::Open {
            path: path.clone(),
            action: "stat",
            source,
        })?;
        if metadata.is_dir() {
            walk(path, &mut files)?;
        } else if metadata.is_file() {
            files.push(path.clone());
        } else {
            return Err(Error::NotRegular { path: path.clone() });
        }
    }
    Ok(files)
}

/// Appends the regular files under `dir`, recursing, in name order.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Error> {
    let reading = |source| Error::Open {
        path: dir.to_path_buf(),
        action: "list the directory",
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(reading)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(reading)?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let kind = entry.file_type().map_err(reading)?;
        if kind.is_dir() {
            walk(&entry.path(), files)?;
        } else if kind.is_file() {
            files.push(entry.path());
        }
    }
    Ok(())
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
    fn a_special_file_named_on_the_command_line_is_refused() {
        let error = expand(&[PathBuf::from("/dev/null")]).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}

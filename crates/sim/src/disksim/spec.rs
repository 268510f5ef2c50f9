//! A part's options as given on the command line (`name:key=value,key=value`), read once into
//! the part's typed configuration when the catalog builds a policy ([`crate::catalog`]).
//!
//! Sizes are written in bytes with an optional `K`, `M` or `G` suffix (powers of 1024; the
//! grammar of `units::parse_size`) and turned into blocks by the policy; counts are plain
//! numbers. Unknown keys are errors, so a
//! typo never silently runs the default.

use std::collections::BTreeMap;

use crate::SimError;

/// A policy name and its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySpec {
    /// The policy's name (the part before `:`).
    pub name: String,
    options: BTreeMap<String, String>,
}

impl PolicySpec {
    /// The part `name` with the options `given`, in the order given (a later key wins).
    pub fn with(name: &str, given: &[(String, String)]) -> PolicySpec {
        PolicySpec {
            name: name.to_string(),
            options: given.iter().cloned().collect(),
        }
    }

    /// Parses `name` or `name:key=value,...`.
    pub fn parse(text: &str) -> Result<PolicySpec, SimError> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let mut options = BTreeMap::new();
        for item in rest.split(',').filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(bad(text, format!("option `{item}` is not key=value")));
            };
            options.insert(key.trim().to_string(), value.trim().to_string());
        }
        Ok(PolicySpec {
            name: name.trim().to_string(),
            options,
        })
    }

    /// A spec with no options.
    pub fn named(name: &str) -> PolicySpec {
        PolicySpec {
            name: name.to_string(),
            options: BTreeMap::new(),
        }
    }

    /// Fails if an option outside `allowed` was given.
    pub fn only(&self, allowed: &[&str]) -> Result<(), SimError> {
        match self.options.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(key) => Err(bad(
                &self.to_string(),
                format!("unknown option `{key}` (allowed: {})", allowed.join(", ")),
            )),
            None => Ok(()),
        }
    }

    /// A count option, if given.
    pub fn count_given(&self, key: &str) -> Result<Option<u64>, SimError> {
        self.options
            .get(key)
            .map(|_| self.count(key, 0))
            .transpose()
    }

    /// A size option in bytes, if given.
    pub fn bytes_given(&self, key: &str) -> Result<Option<u64>, SimError> {
        self.options
            .get(key)
            .map(|_| self.bytes(key, 0))
            .transpose()
    }

    /// A count option, or `default` when absent.
    pub fn count(&self, key: &str, default: u64) -> Result<u64, SimError> {
        match self.options.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| bad(&self.to_string(), format!("`{key}={v}` is not a count"))),
        }
    }

    /// A share between 0 and 1 (a queue's part of the cache), or `default` when absent.
    pub fn ratio(&self, key: &str, default: f64) -> Result<f64, SimError> {
        match self.options.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| {
                    bad(
                        &self.to_string(),
                        format!("`{key}={v}` is not a share between 0 and 1"),
                    )
                }),
        }
    }

    /// A text option, or `default` when absent.
    pub fn text(&self, key: &str, default: &str) -> String {
        self.options
            .get(key)
            .map_or_else(|| default.to_string(), Clone::clone)
    }

    /// A size option in bytes (suffixes K, M, G), or `default` when absent.
    pub fn bytes(&self, key: &str, default: u64) -> Result<u64, SimError> {
        match self.options.get(key) {
            None => Ok(default),
            Some(v) => parse_bytes(v)
                .ok_or_else(|| bad(&self.to_string(), format!("`{key}={v}` is not a size"))),
        }
    }
}

impl std::fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// Parses `123`, `4K`, `8M`, `1.5G`, `64KiB` (powers of 1024) into bytes: the workspace's one
/// size grammar (`units::parse_size`).
pub fn parse_bytes(text: &str) -> Option<u64> {
    units::parse_size(text).ok()
}

fn bad(spec: &str, reason: String) -> SimError {
    SimError::BadOption {
        spec: spec.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_options() {
        let spec = PolicySpec::parse("dulo:bank=8M,evict=64M").unwrap();
        assert_eq!(spec.name, "dulo");
        assert_eq!(spec.bytes("bank", 0).unwrap(), 8 << 20);
        assert_eq!(spec.bytes("other", 7).unwrap(), 7);
        assert_eq!(spec.to_string(), "dulo:bank=8M,evict=64M");
    }

    #[test]
    fn rejects_unknown_and_malformed_options() {
        assert!(PolicySpec::parse("dulo:bank").is_err());
        let spec = PolicySpec::parse("dulo:bnak=1").unwrap();
        assert!(spec.only(&["bank", "evict"]).is_err());
        assert!(PolicySpec::parse("x:n=abc").unwrap().count("n", 0).is_err());
    }
}

//! The front's own parser of `prefetch run`'s options: the well-formed command lines only (each
//! option at most once, `--opt VALUE` or `--opt=VALUE`, a value that is not empty and does not
//! start with `-`, then `--` and the program). Anything else (`--help`, a mistake, an option
//! given twice, a size or policy the full parser would refuse) is left to the full command line,
//! whose parser (clap) says what it always says.
//!
//! Why not clap here too: the front parsing `run` alone with clap (derive, `RunArgs`'s options)
//! costs each `prefetch run -- /bin/true` 8 more page faults (164 against 156, within ±0.2% over 50
//! runs; `--restore` likewise) and 76,000 instructions in the parse against 2,000 (callgrind);
//! it grows the stripped executable from 0.83 to 1.30 MB, read cold from the emulated 7200 RPM
//! disk in 15 requests and 8.7-9.0 ms of its time against 10 and 6.4 ms. The front exists to keep
//! such costs from the program's start (docs/record.md, "The front's parser").
//!
//! No paper section (the command line of `prefetch run`).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::args::{Common, Run};

/// The options given so far, each as its value (a flag's is empty).
#[derive(Default)]
struct Given {
    values: Vec<(&'static str, OsString)>,
}

impl Given {
    /// Notes `name`'s value; `None` if it was given before.
    fn note(&mut self, name: &'static str, value: OsString) -> Option<()> {
        if self.values.iter().any(|(seen, _)| *seen == name) {
            return None;
        }
        self.values.push((name, value));
        Some(())
    }

    fn value(&self, name: &str) -> Option<&OsStr> {
        self.values
            .iter()
            .find(|(seen, _)| *seen == name)
            .map(|(_, value)| value.as_os_str())
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        self.value(name).map(PathBuf::from)
    }

    fn flag(&self, name: &str) -> bool {
        self.value(name).is_some()
    }
}

/// The options that take a value, and the flags.
const VALUED: [&str; 5] = [
    "replay",
    "restore",
    "cache-budget",
    "cache-policy",
    "library",
];
const FLAGS: [&str; 3] = ["competitive", "cache-writeback", "no-children"];

/// `prefetch run`'s options from `args` (the words after `run`), or `None` where the full
/// command line's parser should say what they are.
pub fn run(args: &[OsString]) -> Option<Run> {
    let end = args.iter().position(|arg| arg == "--")?;
    let command = args[end + 1..].to_vec();
    if command.is_empty() {
        return None;
    }
    let given = options(&args[..end])?;
    let cache_budget = match given.value("cache-budget") {
        Some(size) => Some(units::parse_size(size.to_str()?).ok()?),
        None => None,
    };
    let cache_policy = match given.value("cache-policy") {
        Some(name) => name.to_str()?.to_owned(),
        None => "dulo".to_owned(),
    };
    let needs_budget = given.flag("cache-policy") || given.flag("cache-writeback");
    if !plan::evict::POLICIES.contains(&cache_policy.as_str())
        || (needs_budget && cache_budget.is_none())
    {
        return None;
    }
    Some(Run {
        replay: given.path("replay"),
        restore: given.path("restore"),
        competitive: given.flag("competitive"),
        cache_budget,
        cache_policy,
        cache_writeback: given.flag("cache-writeback"),
        common: Common {
            no_children: given.flag("no-children"),
            library: given.path("library"),
            command,
        },
    })
}

/// The options before `--`, each known and given once; `None` otherwise.
fn options(words: &[OsString]) -> Option<Given> {
    let mut given = Given::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let word = word.to_str()?.strip_prefix("--")?;
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word, None),
        };
        if let Some(&name) = FLAGS.iter().find(|flag| **flag == name) {
            inline.is_none().then_some(())?;
            given.note(name, OsString::new())?;
            continue;
        }
        let &name = VALUED.iter().find(|valued| **valued == name)?;
        let value = match inline {
            Some(value) => OsString::from(value),
            None => words.next()?.clone(),
        };
        let plain = !value.is_empty() && !value.as_encoded_bytes().starts_with(b"-");
        plain.then_some(())?;
        given.note(name, value)?;
    }
    Some(given)
}

#[cfg(test)]
mod tests {
    use super::run;
    use std::ffi::OsString;

    fn words(text: &str) -> Vec<OsString> {
        text.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn a_well_formed_run_is_parsed_in_both_forms() {
        let parsed = run(&words(
            "--restore=s.json --cache-budget 64M --cache-policy lru --no-children -- sh -c x --",
        ))
        .unwrap();
        assert_eq!(parsed.restore.unwrap().to_str(), Some("s.json"));
        assert_eq!(parsed.cache_budget, Some(64 << 20));
        assert_eq!(parsed.cache_policy, "lru");
        assert!(parsed.common.no_children && !parsed.competitive && parsed.replay.is_none());
        assert_eq!(parsed.common.command, words("sh -c x --"));
        assert_eq!(run(&words("-- true")).unwrap().cache_policy, "dulo");
    }

    #[test]
    fn what_the_full_parser_should_say_is_left_to_it() {
        for line in [
            "--help -- true",
            "-h -- true",
            "--competitive",
            "--competitive --",
            "--competitive --competitive -- true",
            "--replay -- true",
            "--replay --competitive -- true",
            "--replay= -- true",
            "--competitive=1 -- true",
            "--cache-budget 12Q -- true",
            "--cache-policy lru -- true",
            "--cache-budget 1M --cache-policy fifo -- true",
            "--cache-writeback -- true",
            "true -- true",
            "--no-such-option -- true",
        ] {
            assert!(run(&words(line)).is_none(), "{line}");
        }
    }
}

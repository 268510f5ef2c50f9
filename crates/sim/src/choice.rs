//! A policy as named on the command line ([`Choice`]): a line of the
//! [`catalog`](crate::catalog) with its options, `NAME[:key=value,...]`, or any replacement
//! paired with any prefetcher, `REPLACEMENT[:...]+PREFETCHER[:...]`; and `--policy` lists of
//! them ([`parse_choices`]).
//!
//! Left of `+`, the replacement of any line (a pair's, or a
//! demand-paging policy's); right of it, `none` or the prefetcher of any pair's line, by its
//! name or an alias (`planner`, `readahead`).

use std::str::FromStr;
use std::sync::Arc;

use crate::catalog::{entry, to, Configured, Entry, Form, NO_PREFETCHER};
use crate::disksim::prefetch::{self, MakePrefetcher};
use crate::disksim::Pair;
use crate::SimError;

/// A policy as named on the command line: an entry and its options, and with
/// `REPLACEMENT+PREFETCHER` the prefetcher paired with the entry's replacement.
#[derive(Clone, Debug)]
pub struct Choice {
    /// The entry (the replacement's, in a pairing).
    pub entry: &'static Entry,
    /// `key=value` options, in the order given.
    pub options: Vec<(String, String)>,
    /// After `+`: the prefetcher as given (`linux-readahead:max=64`).
    pub prefetcher: Option<String>,
    /// The policy built from them.
    pub configured: Configured,
}

impl Choice {
    /// The name with its options, as given (`dulo:bank=4M`, `fifo+obl`).
    pub fn label(&self) -> String {
        let options: Vec<String> = self
            .options
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let name = match options.is_empty() {
            true => self.entry.name.to_string(),
            false => format!("{}:{}", self.entry.name, options.join(",")),
        };
        match &self.prefetcher {
            Some(prefetcher) => format!("{name}+{prefetcher}"),
            None => name,
        }
    }

    /// Whether the policy needs the whole trace in memory.
    pub fn needs_future(&self) -> bool {
        self.configured.needs_future()
    }
}

/// Other names of prefetchers after `+` (`lru+planner`): alias and entry.
const PREFETCHER_ALIASES: &[(&str, &str)] =
    &[("planner", "libprefetch"), ("readahead", "linux-readahead")];

/// One policy without `+`: its entry, options and configuration.
fn one(text: &str) -> Result<Choice, SimError> {
    let (name, rest) = text.split_once(':').unwrap_or((text, ""));
    let entry = entry(name.trim())?;
    let options = one_options(text, rest)?;
    let configured = (entry.build)(&options).map_err(|e| in_policy(entry.name, e))?;
    Ok(Choice {
        entry,
        options,
        prefetcher: None,
        configured,
    })
}

/// `error`, a configuration error, said of the policy `name`.
fn in_policy(name: &str, error: SimError) -> SimError {
    match error {
        SimError::Config(m) => SimError::Config(format!("policy {name}: {m}")),
        e => e,
    }
}

/// The prefetcher named after `+`, with its options.
fn prefetcher_of(text: &str) -> Result<Arc<dyn MakePrefetcher>, SimError> {
    let (name, rest) = text.split_once(':').unwrap_or((text, ""));
    let name = name.trim();
    if name == NO_PREFETCHER {
        let none = prefetch::none::Options::parse(&to("none", &one_options(text, rest)?))?;
        return Ok(Arc::new(none));
    }
    let entry = PREFETCHER_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, entry)| entry);
    let resolved = match rest.is_empty() {
        true => entry.to_string(),
        false => format!("{entry}:{rest}"),
    };
    one(&resolved)?.configured.prefetcher(name)
}

/// The `key=value` options `rest` of the policy `text`.
fn one_options(text: &str, rest: &str) -> Result<Vec<(String, String)>, SimError> {
    rest.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
            None => Err(SimError::Config(format!(
                "policy {text:?}: option {item:?} is not key=value"
            ))),
        })
        .collect()
}

impl FromStr for Choice {
    type Err = SimError;

    /// `NAME[:key=value,...]`, or `REPLACEMENT[:...]+PREFETCHER[:...]`: any replacement of the
    /// catalog (a pair's, or a demand-paging policy's) with any prefetcher (a pair's, or
    /// `none`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((left, right)) = text.split_once('+') else {
            return one(text);
        };
        let mut choice = one(left.trim())?;
        let replacement = choice
            .configured
            .replacement()
            .map_err(|e| in_policy(choice.entry.name, e))?;
        let prefetcher = prefetcher_of(right.trim()).map_err(|e| in_policy(text, e))?;
        choice.configured = Configured(Form::Pair(Pair {
            replacement,
            prefetcher,
        }));
        choice.prefetcher = Some(right.trim().to_string());
        Ok(choice)
    }
}

/// Splits a `--policy` list, `a,b:k=v,k2=v2,c`, into policies: an item holding `=` is an
/// option of the policy before it.
pub fn parse_choices(list: &str) -> Result<Vec<Choice>, SimError> {
    let mut texts: Vec<String> = Vec::new();
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        match texts.last_mut() {
            Some(last) if item.contains('=') && !item.contains(':') => {
                last.push(',');
                last.push_str(item);
            }
            _ => texts.push(item.trim().to_string()),
        }
    }
    texts.iter().map(|t| t.parse()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_list_keeps_options_with_their_policy() {
        let choices = parse_choices("lru,dulo:bank=4M,evict=32M,ap:depth=64,clock").unwrap();
        let labels: Vec<_> = choices.iter().map(Choice::label).collect();
        assert_eq!(
            labels,
            ["lru", "dulo:bank=4M,evict=32M", "ap:depth=64", "clock"]
        );
        let refused = parse_choices("lru:x=1").unwrap_err().to_string();
        assert!(
            refused.contains("policy lru: takes no options"),
            "{refused}"
        );
        assert!(parse_choices("nope").is_err());
    }

    #[test]
    fn pairings_name_both_parts_and_refuse_what_does_not_pair() {
        let labels: Vec<String> =
            parse_choices("fifo+obl,dulo:bank=4M+linux-readahead:max=64,lru+planner")
                .unwrap()
                .iter()
                .map(Choice::label)
                .collect();
        assert_eq!(
            labels,
            [
                "fifo+obl",
                "dulo:bank=4M+linux-readahead:max=64",
                "lru+planner"
            ]
        );
        for (text, says) in [
            ("opt-demand+obl", "needs the whole trace"),
            ("lru-obl+obl", "integrated"),
            ("lru+clock", "not a prefetcher"),
            ("lru+nope", "unknown policy"),
            ("lru+obl:x=1", "obl"),
        ] {
            let error = text.parse::<Choice>().unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
    #[test]
    fn a_demand_policy_as_a_replacement_misses_as_itself() {
        use crate::catalog::{run_parts, Device, CATALOG};
        use crate::disksim::Workload;
        use crate::trace::Reference;
        let mut state = 7u64;
        let blocks: Vec<u64> = (0..3000)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                (400.0 * u * u) as u64
            })
            .collect();
        let references = || {
            blocks
                .iter()
                .map(|&block| Ok(Reference { block, think: None }))
        };
        let workload = Workload::from_references(references(), 4096, false).unwrap();
        let device = Device::Unit { fetch: 1 };
        let mut checked = 0;
        for entry in CATALOG {
            let Ok(paired) = format!("{}+none", entry.name).parse::<Choice>() else {
                continue;
            };
            let Some(info) = (entry.build)(&[]).unwrap().cao_policy() else {
                continue;
            };
            for capacity in [10, 50, 200] {
                let pair = paired.configured.pair().unwrap();
                let pair = run_parts(pair, &workload, capacity, (&device, false)).unwrap();
                let setup = crate::RunSetup::simplified(capacity, 1);
                let own = crate::run_stream(info, references(), &setup).unwrap();
                assert_eq!(pair.misses, own.misses, "{} at {capacity}", entry.name);
            }
            checked += 1;
        }
        assert!(checked >= 4, "lru, lru-demand, fifo and clock at least");
    }
}

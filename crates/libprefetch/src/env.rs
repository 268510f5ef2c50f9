//! Environment overrides of a client's tunables, so that a C program, a
//! plug-in loaded into one, or an `LD_PRELOAD` user can tune libprefetch
//! without recompiling. `pf_register_client` reads them; the Rust API never
//! does (`Config::default()` is the same in every environment).
//!
//! | variable                        | `Config` field       | value                                   |
//! |---------------------------------|----------------------|-----------------------------------------|
//! | `LIBPREFETCH_INFILL`            | `infill_bytes`       | size; 0 turns infill off; `auto`        |
//! | `LIBPREFETCH_MAX_MEMORY`        | `max_budget_bytes`   | size, above 0                           |
//! | `LIBPREFETCH_LIST_CAPACITY`     | `capacity`           | entries, a plain integer above 0        |
//! | `LIBPREFETCH_REVERSE_PASS`      | `reverse_pass`       | `0` or `1`                              |
//! | `LIBPREFETCH_BACKGROUND_ADVICE` | `background_advice`  | `0` or `1`                              |
//! | `LIBPREFETCH_START_WINDOW`      | `start_window_bytes` | size; 0 starts at 90% (the paper)       |
//! | `LIBPREFETCH_SCHEDULE`          | `schedule`           | `by-shape`, `window`, `aggressive`, `conservative` |
//!
//! A size is a number of bytes with an optional binary suffix: `32768`,
//! `32K`, `32KiB`, `1.5M`, `2G` (K = 1024). Sizes above this machine's
//! physical memory, and list capacities whose entries would not fit in it,
//! are refused: they are typing mistakes, and would make the library plan
//! with memory it cannot have. `max_advice_bytes` has no variable: the
//! library already lowers it per device (`device.rs`).
//!
//! A refused value never fails a registration: the field keeps its default,
//! and [`warn_once`] prints one line on stderr naming the variable, the value
//! and the reason, once per process per variable.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 4.7 (infill threshold)
//! and 4.6 (the memory AIMD plans with).
//! Deviations: the paper's tunables were constants (infill was a kernel I/O
//! scheduler parameter); these variables are ours. `LIBPREFETCH_MAX_MEMORY`
//! sets `max_budget_bytes`, a cap on what the /proc/meminfo and cgroup
//! probe finds at each round.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::client::Config;
use crate::variables;
use plan::Schedule;

/// Infill gap (bytes, size syntax; 0 disables infill).
const INFILL: &str = variables::INFILL.name;
/// Memory the client plans with (bytes, size syntax).
const MAX_MEMORY: &str = variables::MAX_MEMORY.name;
/// Access-list capacity (entries).
const LIST_CAPACITY: &str = variables::LIST_CAPACITY.name;
/// Reverse-order WILLNEED pass (`0` or `1`).
const REVERSE_PASS: &str = variables::REVERSE_PASS.name;
/// Advice from a background thread (`0` or `1`).
const BACKGROUND_ADVICE: &str = variables::BACKGROUND_ADVICE.name;
/// First window of the slow start (bytes, size syntax; 0: the paper's 90%).
const START_WINDOW: &str = variables::START_WINDOW.name;

/// Planner schedule (`by-shape`, `window`, `aggressive` or `conservative`).
const SCHEDULE: &str = variables::SCHEDULE.name;

/// One variable: its name, how a value sets its field (given this
/// machine's memory in bytes), and how the field's default reads.
struct Variable {
    name: &'static str,
    set: fn(&mut Config, &str, u64) -> Result<(), String>,
    default: fn(&Config) -> String,
}

/// Every variable read, in the order they are applied (and warned about).
const VARIABLES: [Variable; 7] = [
    Variable {
        name: INFILL,
        set: |config, value, memory| {
            config.infill_bytes = match value {
                "auto" => None,
                size => Some(size_within(size, memory)?),
            };
            Ok(())
        },
        default: |config| match config.infill_bytes {
            None => "the device's break-even gap".to_string(),
            Some(bytes) => format!("{bytes} bytes"),
        },
    },
    Variable {
        name: MAX_MEMORY,
        set: |config, value, memory| {
            config.max_budget_bytes = Some(positive(size_within(value, memory)?)?);
            Ok(())
        },
        default: |_| "what /proc/meminfo and the memory cgroup allow".to_string(),
    },
    Variable {
        name: LIST_CAPACITY,
        set: |config, value, memory| {
            config.capacity = capacity_within(value, memory)?;
            Ok(())
        },
        default: |config| format!("{} entries", config.capacity),
    },
    Variable {
        name: REVERSE_PASS,
        set: |config, value, _| {
            config.reverse_pass = switch(value)?;
            Ok(())
        },
        default: |config| u8::from(config.reverse_pass).to_string(),
    },
    Variable {
        name: BACKGROUND_ADVICE,
        set: |config, value, _| {
            config.background_advice = switch(value)?;
            Ok(())
        },
        default: |config| u8::from(config.background_advice).to_string(),
    },
    Variable {
        name: START_WINDOW,
        set: |config, value, memory| {
            config.start_window_bytes = Some(size_within(value, memory)?).filter(|&b| b > 0);
            Ok(())
        },
        default: |config| match config.start_window_bytes {
            Some(bytes) => format!("{bytes} bytes"),
            None => "90% of the memory available".to_string(),
        },
    },
    Variable {
        name: SCHEDULE,
        set: |config, value, _| {
            config.schedule = Schedule::from_name(value)
                .ok_or_else(|| "not window, aggressive, conservative or by-shape".to_string())?;
            Ok(())
        },
        default: |config| config.schedule.name().to_string(),
    },
];

/// Longest part of a refused value quoted in a warning.
const QUOTED_CHARS: usize = 64;

/// A variable whose value was refused; its field kept the default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The variable's name, e.g. `LIBPREFETCH_INFILL`.
    pub variable: &'static str,
    /// The value as found.
    pub value: String,
    /// Why it was refused.
    pub reason: String,
    /// The default the field kept, in words.
    pub default: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let quoted: String = self.value.chars().take(QUOTED_CHARS).collect();
        let cut = if quoted.len() < self.value.len() {
            "..."
        } else {
            ""
        };
        write!(
            f,
            "libprefetch: ignoring {}={:?}{cut}: {}; using the default ({})",
            self.variable, quoted, self.reason, self.default
        )
    }
}

/// A configuration read from the environment, with what was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvConfig {
    /// `Config::default()` with every accepted variable applied.
    pub config: Config,
    /// The variables whose values were refused, in the order of the table above.
    pub refused: Vec<Refused>,
}

impl Config {
    /// `Config::default()` with the `LIBPREFETCH_*` variables of this
    /// process's environment applied (see docs/api.md, "Environment").
    /// Never fails: refused values are listed in the result.
    pub fn from_env() -> EnvConfig {
        Config::from_lookup(|name| {
            std::env::var_os(name).map(|value| value.to_string_lossy().into_owned())
        })
    }

    /// [`Config::from_env`] over any lookup: `lookup(name)` gives the value
    /// of variable `name`, or `None` when it is not set.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> EnvConfig {
        let memory = physical_memory();
        let mut config = Config::default();
        let mut refused = Vec::new();
        for variable in &VARIABLES {
            let Some(value) = lookup(variable.name) else {
                continue;
            };
            if let Err(reason) = (variable.set)(&mut config, &value, memory) {
                refused.push(Refused {
                    variable: variable.name,
                    default: (variable.default)(&config),
                    value,
                    reason,
                });
            }
        }
        EnvConfig { config, refused }
    }
}

/// Parses a size: a number of bytes with an optional suffix K, M, G, T
/// (powers of 1024, optionally spelled KB or KiB, any case), possibly
/// fractional (`1.5M`); surrounding white space is ignored (`units::parse_size`).
fn parse_size(value: &str) -> Result<u64, String> {
    units::parse_size(value).map_err(|error| match error {
        units::SizeError::Empty => "empty value".to_string(),
        units::SizeError::Overflow(_) => "too large for 64 bits".to_string(),
        _ => "not a size (bytes, with an optional K, M or G suffix)".to_string(),
    })
}

/// A size no larger than `limit` bytes.
fn size_within(value: &str, limit: u64) -> Result<u64, String> {
    let bytes = parse_size(value)?;
    if bytes > limit {
        return Err(format!(
            "{bytes} bytes is more than this machine's memory ({limit} bytes)"
        ));
    }
    Ok(bytes)
}

/// `value` if above 0.
fn positive(value: u64) -> Result<u64, String> {
    if value == 0 {
        return Err("must be above 0".to_string());
    }
    Ok(value)
}

/// An access-list capacity: entries, above 0, whose storage fits in `limit` bytes.
fn capacity_within(value: &str, limit: u64) -> Result<usize, String> {
    let entries: usize = match value.trim().parse() {
        Ok(entries) => entries,
        Err(error) if *error.kind() == std::num::IntErrorKind::PosOverflow => {
            return Err("too large for this machine's word size".to_string())
        }
        Err(_) => return Err("not a number of entries (a plain integer)".to_string()),
    };
    if entries == 0 {
        return Err("must be above 0".to_string());
    }
    let entry_bytes = std::mem::size_of::<plan::Entry>() as u64;
    let bytes = (entries as u64).saturating_mul(entry_bytes);
    if bytes > limit {
        return Err(format!(
            "{entries} entries of {entry_bytes} bytes would not fit in this machine's memory ({limit} bytes)"
        ));
    }
    Ok(entries)
}

/// `0` is off, `1` is on.
fn switch(value: &str) -> Result<bool, String> {
    match value.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err("expected 0 or 1".to_string()),
    }
}

/// Physical memory in bytes (`u64::MAX` if the system does not say).
fn physical_memory() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(page_size)) {
        (Ok(pages), Ok(size)) if pages > 0 && size > 0 => pages.saturating_mul(size),
        _ => u64::MAX,
    }
}

impl EnvConfig {
    /// Prints one line on stderr for each refused variable not yet
    /// reported by this process (whichever client found it).
    pub fn warn_once(&self) {
        warn_once(&self.refused);
    }
}

/// Prints one line on stderr for each refused variable not yet reported
/// by this process. Write errors are ignored (stderr may be closed).
fn warn_once(refused: &[Refused]) {
    static WARNED: [AtomicBool; VARIABLES.len()] =
        [const { AtomicBool::new(false) }; VARIABLES.len()];
    for item in refused {
        let Some(index) = VARIABLES.iter().position(|v| v.name == item.variable) else {
            continue;
        };
        if !WARNED[index].swap(true, Ordering::Relaxed) {
            let _ = writeln!(std::io::stderr(), "{item}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// `Config::from_lookup` over the given (variable, value) pairs.
    fn from_pairs(pairs: &[(&str, &str)]) -> EnvConfig {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|&(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    /// The one refused variable of a lookup over `pairs`.
    fn only_refusal(pairs: &[(&str, &str)]) -> Refused {
        let env = from_pairs(pairs);
        assert_eq!(env.config, Config::default(), "{pairs:?}");
        assert_eq!(env.refused.len(), 1, "{:?}", env.refused);
        env.refused[0].clone()
    }

    #[test]
    fn sizes_take_binary_suffixes_in_any_case() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("32768"), Ok(32768));
        assert_eq!(parse_size("32K"), Ok(32 << 10));
        assert_eq!(parse_size("32k"), Ok(32 << 10));
        assert_eq!(parse_size("32KiB"), Ok(32 << 10));
        assert_eq!(parse_size("32KB"), Ok(32 << 10));
        assert_eq!(parse_size("100M"), Ok(100 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5M"), Ok(3 << 19));
        assert_eq!(parse_size(" 64K "), Ok(64 << 10));
        assert_eq!(parse_size("0K"), Ok(0));
    }

    #[test]
    fn sizes_that_overflow_64_bits_are_refused() {
        assert_eq!(parse_size("16E"), Err("too large for 64 bits".to_string()));
        assert_eq!(
            parse_size("18446744073709551616"),
            Err("too large for 64 bits".to_string())
        );
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn garbage_and_empty_sizes_are_refused() {
        for garbage in ["banana", "12Q", "-1", "0x10", "K", "1 2 3 K B x", "32K;"] {
            assert!(parse_size(garbage).is_err(), "{garbage:?} was accepted");
        }
        assert_eq!(parse_size(""), Err("empty value".to_string()));
    }

    #[test]
    fn nothing_set_gives_the_default() {
        assert_eq!(
            from_pairs(&[]),
            EnvConfig {
                config: Config::default(),
                refused: Vec::new()
            }
        );
    }

    #[test]
    fn every_variable_sets_its_field() {
        let env = from_pairs(&[
            (INFILL, "0"),
            (MAX_MEMORY, "64M"),
            (LIST_CAPACITY, "5000"),
            (REVERSE_PASS, "1"),
            (BACKGROUND_ADVICE, "0"),
        ]);
        assert_eq!(env.refused, Vec::new());
        assert_eq!(
            env.config,
            Config {
                infill_bytes: Some(0),
                max_budget_bytes: Some(64 << 20),
                capacity: 5000,
                reverse_pass: true,
                background_advice: false,
                ..Config::default()
            }
        );
    }

    #[test]
    fn the_schedule_is_named_and_a_wrong_name_is_refused() {
        let aggressive = from_pairs(&[(SCHEDULE, "aggressive")]);
        assert_eq!(aggressive.config.schedule, Schedule::Aggressive);
        assert_eq!(
            from_pairs(&[(SCHEDULE, "conservative")]).config.schedule,
            Schedule::Conservative
        );
        assert_eq!(
            from_pairs(&[(SCHEDULE, "by-shape")]).config.schedule,
            Schedule::ByShape
        );
        let refused = only_refusal(&[(SCHEDULE, "optimal")]);
        assert_eq!(
            refused.to_string(),
            "libprefetch: ignoring LIBPREFETCH_SCHEDULE=\"optimal\": \
             not window, aggressive, conservative or by-shape; using the default (by-shape)"
        );
    }

    #[test]
    fn a_refused_value_keeps_the_default_and_others_still_apply() {
        let env = from_pairs(&[(INFILL, "12Q"), (LIST_CAPACITY, "10")]);
        assert_eq!(env.config.infill_bytes, Config::default().infill_bytes);
        assert_eq!(env.config.capacity, 10);
        assert_eq!(
            env.refused,
            vec![Refused {
                variable: INFILL,
                value: "12Q".to_string(),
                reason: "not a size (bytes, with an optional K, M or G suffix)".to_string(),
                default: "the device's break-even gap".to_string(),
            }]
        );
    }

    #[test]
    fn sizes_beyond_the_machines_memory_are_refused() {
        let infill = only_refusal(&[(INFILL, "1E")]);
        assert!(infill.reason.contains("more than this machine's memory"));
        let memory = only_refusal(&[(MAX_MEMORY, "16E")]);
        assert_eq!(memory.reason, "too large for 64 bits");
    }

    #[test]
    fn zero_memory_is_refused() {
        assert_eq!(only_refusal(&[(MAX_MEMORY, "0")]).reason, "must be above 0");
    }

    #[test]
    fn capacities_that_could_not_be_allocated_are_refused() {
        assert_eq!(
            only_refusal(&[(LIST_CAPACITY, "0")]).reason,
            "must be above 0"
        );
        let huge = only_refusal(&[(LIST_CAPACITY, "1000000000000000000")]);
        assert!(huge.reason.contains("would not fit"), "{}", huge.reason);
        let overflow = only_refusal(&[(LIST_CAPACITY, "99999999999999999999999")]);
        assert_eq!(overflow.reason, "too large for this machine's word size");
        assert_eq!(
            only_refusal(&[(LIST_CAPACITY, "1M")]).reason,
            "not a number of entries (a plain integer)"
        );
    }

    #[test]
    fn switches_take_only_0_or_1() {
        assert!(
            !from_pairs(&[(BACKGROUND_ADVICE, "0")])
                .config
                .background_advice
        );
        assert!(from_pairs(&[(REVERSE_PASS, "1")]).config.reverse_pass);
        for bad in ["yes", "2", "", "true"] {
            assert_eq!(
                only_refusal(&[(REVERSE_PASS, bad)]).reason,
                "expected 0 or 1",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_warning_names_the_variable_the_value_and_the_reason() {
        let refused = only_refusal(&[(INFILL, "12Q")]);
        assert_eq!(
            refused.to_string(),
            "libprefetch: ignoring LIBPREFETCH_INFILL=\"12Q\": \
             not a size (bytes, with an optional K, M or G suffix); using the default (the device's break-even gap)"
        );
    }

    #[test]
    fn a_long_value_is_quoted_cut() {
        let long = "x".repeat(1000);
        let line = only_refusal(&[(INFILL, &long)]).to_string();
        assert!(line.contains(&format!("\"{}\"...", "x".repeat(QUOTED_CHARS))));
        assert!(line.len() < 250, "{line}");
    }

    /// Set in the child process of `from_env_reads_the_process_environment_and_default_does_not`.
    const CHILD: &str = "LIBPREFETCH_ENV_TEST_CHILD";

    #[test]
    fn from_env_reads_the_process_environment_and_default_does_not() {
        if std::env::var_os(CHILD).is_some() {
            let env = Config::from_env();
            assert_eq!(env.config.infill_bytes, Some(0));
            assert_eq!(env.config.capacity, 77);
            assert_eq!(env.refused.len(), 1, "{:?}", env.refused);
            assert_eq!(env.refused[0].variable, REVERSE_PASS);
            assert_eq!(env.refused[0].value, "\u{fffd}");
            assert_eq!(Config::default().infill_bytes, None);
            return;
        }
        use std::os::unix::ffi::OsStrExt;
        let test = "env::tests::from_env_reads_the_process_environment_and_default_does_not";
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LIBPREFETCH_") {
                child.env_remove(name);
            }
        }
        let out = child
            .args(["--exact", test, "--test-threads=1"])
            .env(CHILD, "1")
            .env(INFILL, "0")
            .env(LIST_CAPACITY, "77")
            .env(REVERSE_PASS, std::ffi::OsStr::from_bytes(&[0xff]))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn each_variable_is_looked_up_once() {
        let asked = std::sync::Mutex::new(Vec::new());
        Config::from_lookup(|name| {
            asked.lock().unwrap().push(name.to_string());
            None
        });
        let names: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
        assert_eq!(*asked.lock().unwrap(), names);
    }

    #[test]
    fn the_tunables_are_the_client_variables_of_the_table() {
        let tunables: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
        let table: Vec<&str> = variables::ALL
            .iter()
            .filter(|v| v.reader == variables::Reader::Client)
            .map(|v| v.name)
            .collect();
        assert_eq!(tunables, table);
    }
}

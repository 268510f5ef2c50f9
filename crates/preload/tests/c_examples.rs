//! The C examples of `examples/c`, built with make + gcc against `include/libprefetch.h` and the
//! `libprefetch.so` cargo built next to this test, run as real processes on real pattern files.
//!
//! Real processes on real files, after the paper's sections 4-4.6 (Figures 6 and 7):
//! the Figure 7 callback (random pages, and tiles line by line), marks with `PF_SET_FROM_MARK`, a callback
//! reading inside `ignore_accesses`, identical bytes, errno and file position with and without the library
//! (plain, `LD_PRELOAD`, linked; also for cat, dd, tail, sha256sum), 8 threads, fork during rounds,
//! pthread_cancel, unregistering under concurrent reads, a 10-million-entry list, AIMD after a premature
//! eviction, every function's errno, one tracked read per interposed entry point (fortified and large-file builds
//! included), and the header under strict C11 and C++17. Each program checks itself and exits 0 (pass) or 1 (fail,
//! with the reason on stderr); these tests add the comparisons across runs. Timeouts are deadlock
//! detectors, never performance limits. The examples run one at a time: processes holding access lists at the
//! same time share the memory budget (as they should), and several examples check exact budgets.
//!
//! A missing gcc, g++, make or coreutils program fails the test (saying
//! which); nothing skips.

use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// How long one example may run before it is killed and reported as hung (a deadlock detector).
const TIMEOUT: Duration = Duration::from_secs(180);

/// The size of the pattern files, in MiB (the programs create and evict them).
const FILE_MIB: &str = "32";

/// The shared library under test: the one cargo built for this very test run. `cargo test` builds the
/// cdylib next to the test executable (`target/debug/deps/libprefetch.so`) but copies it to
/// `target/debug/` only on `cargo build`, so the copy in `target/debug/` may be stale; it is the fallback.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test executable");
    let deps = exe.parent().expect("directory of the test executable");
    let candidates = [
        deps.join("libprefetch.so"),
        deps.join("../libprefetch.so"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/libprefetch.so"),
    ];
    let found = candidates.iter().find(|path| path.exists());
    found
        .unwrap_or_else(|| {
            panic!("libprefetch.so not found ({candidates:?}): run `cargo build -p preload`")
        })
        .clone()
}

/// The `examples/c` directory of the repository.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/c")
}

/// True if `tool --version` runs.
fn tool_exists(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Panics, naming the missing tool, unless `tool --version` runs.
fn require_tool(tool: &str) {
    assert!(
        tool_exists(tool),
        "{tool} is not installed: the C examples need gcc, g++ and make (apt-get install build-essential)"
    );
}

/// Builds the examples once per test process and returns their directory.
fn examples() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        for tool in ["gcc", "make"] {
            require_tool(tool);
        }
        let lib_dir = library().parent().expect("library directory").to_path_buf();
        let out = lib_dir.join("c-examples");
        let build = Command::new("make")
            .arg("-C")
            .arg(sources())
            .arg("-j2")
            .arg(format!("OUT={}", out.display()))
            .arg(format!("LIBDIR={}", lib_dir.display()))
            .output()
            .expect("run make");
        assert!(
            build.status.success(),
            "building examples/c failed:\n{}{}",
            String::from_utf8_lossy(&build.stdout),
            String::from_utf8_lossy(&build.stderr)
        );
        out
    })
}

/// A scratch directory for one test's files, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("libprefetch-ctest-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create scratch directory");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// How to load the library into a run.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Load {
    /// No library (and no inherited LD_PRELOAD).
    Without,
    /// LD_PRELOAD=libprefetch.so.
    Preload,
    /// The program is linked with -lprefetch (or is one of the `_linked` builds).
    Linked,
}

/// What one run printed and how it ended.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The run's output, for failure messages.
    fn describe(&self, what: &str) -> String {
        format!(
            "{what} ended with {}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Held while an example runs, so that no two run at once (see the module comment).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs an example with its output in files of the scratch directory; kills it after TIMEOUT.
fn run(dir: &Path, scratch: &Scratch, program: &str, args: &[&str], load: Load) -> Run {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tag = format!("{program}-{load:?}-{}", args.join("-").replace('/', "_"));
    let out_path = scratch.0.join(format!("{tag}.stdout"));
    let err_path = scratch.0.join(format!("{tag}.stderr"));
    let mut cmd = Command::new(dir.join(program));
    // The library under test, not another copy on cargo's LD_LIBRARY_PATH
    // (cargo test does not refresh target/debug/libprefetch.so).
    let lib_dir = library().parent().expect("library directory").to_path_buf();
    cmd.args(args)
        .env_remove("LD_PRELOAD")
        .env("LD_LIBRARY_PATH", lib_dir)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).expect("stdout file"))
        .stderr(File::create(&err_path).expect("stderr file"));
    if load == Load::Preload {
        cmd.env("LD_PRELOAD", library());
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{program} {args:?} ({load:?}) did not finish in {TIMEOUT:?}: hung (deadlock?)\n{}",
                fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: fs::read_to_string(&err_path).unwrap_or_default(),
    }
}

/// Runs a self-checking example on a fresh pattern file, asserts it passed, and returns its standard
/// output.
fn run_passing(test: &str, program: &str, extra: &[&str]) -> String {
    let dir = examples();
    let scratch = Scratch::new(test);
    let file = scratch.path("pattern");
    let mut args = vec![file.as_str()];
    args.extend_from_slice(extra);
    args.push(FILE_MIB);
    let result = run(dir, &scratch, program, &args, Load::Linked);
    assert!(result.status.success(), "{}", result.describe(program));
    print!("{}{}", result.stdout, result.stderr);
    result.stdout
}

/// The first line where two outputs differ, for a readable failure message.
fn first_difference(a: &str, b: &str) -> String {
    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
    match line {
        Some(i) => format!(
            "line {}:\n  without: {}\n  with:    {}",
            i + 1,
            a.lines().nth(i).unwrap_or(""),
            b.lines().nth(i).unwrap_or("")
        ),
        None => format!(
            "lengths differ: {} vs {} lines",
            a.lines().count(),
            b.lines().count()
        ),
    }
}

/// Runs `program` without the library, with LD_PRELOAD, and `program_linked`; asserts all pass, the library
/// was found in the last two, and stdout is byte-for-byte identical in all three.
fn assert_same_output(test: &str, program: &str, args: impl Fn(&Scratch) -> Vec<String>) {
    let dir = examples();
    let scratch = Scratch::new(test);
    let args = args(&scratch);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let linked = format!("{program}_linked");
    let runs = [
        (
            Load::Without,
            run(dir, &scratch, program, &args, Load::Without),
        ),
        (
            Load::Preload,
            run(dir, &scratch, program, &args, Load::Preload),
        ),
        (
            Load::Linked,
            run(dir, &scratch, &linked, &args, Load::Linked),
        ),
    ];
    let baseline = &runs[0].1;
    assert!(baseline.status.success(), "{}", baseline.describe(program));
    assert!(
        baseline.stderr.contains("libprefetch not loaded"),
        "{}",
        baseline.describe(program)
    );
    for (load, r) in &runs[1..] {
        let what = format!("{program} ({load:?})");
        assert!(r.status.success(), "{}", r.describe(&what));
        assert!(
            !r.stderr.contains("not loaded"),
            "the library was not found: {}",
            r.describe(&what)
        );
        assert!(
            r.stdout == baseline.stdout,
            "{what} printed something else than without the library: {}",
            first_difference(&baseline.stdout, &r.stdout)
        );
    }
    eprint!("{}{}", runs[1].1.stderr, runs[2].1.stderr);
    println!(
        "{program}: {} lines identical without, with LD_PRELOAD and linked; last: {}",
        baseline.stdout.lines().count(),
        baseline.stdout.lines().last().unwrap_or("")
    );
}

/// True if the binary's bytes name the symbol (as its dynamic symbol table does).
fn binary_names(binary: &Path, symbol: &str) -> bool {
    let bytes = fs::read(binary).expect("read the binary");
    let needle: Vec<u8> = symbol.bytes().chain([0]).collect();
    bytes.windows(needle.len()).any(|w| w == needle.as_slice())
}

#[test]
fn figure7_random_reader_reads_right_bytes_and_prefetches() {
    run_passing("fig7", "fig7_random", &[]);
}

/// The output docs/api.md shows for `fig7_tiles FILE page` (its worked example), without the `# `.
fn documented_page_output() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/api.md");
    let doc = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let command = "LIBPREFETCH_START_WINDOW=0 target/c-examples/fig7_tiles /tmp/image.swap page";
    let shown: Vec<&str> = doc
        .lines()
        .skip_while(|line| *line != command)
        .skip(1)
        .map_while(|line| line.strip_prefix("# "))
        .collect();
    assert!(
        !shown.is_empty(),
        "docs/api.md shows no output of `{command}`"
    );
    shown.iter().map(|line| format!("{line}\n")).collect()
}

/// `output` with the numbers of the counters that depend on the memory the machine has free (and
/// shares among the processes of its cgroup) left out: callbacks, rounds, divergences and pages
/// prefetched.
fn memory_independent(output: &str) -> String {
    let varying = ["callbacks ", "rounds ", "divergences ", "pages_prefetched "];
    output
        .lines()
        .map(|line| {
            let fields = line.split(", ").map(|field| {
                match varying.iter().find(|name| field.starts_with(*name)) {
                    Some(name) => name.trim_end(),
                    None => field,
                }
            });
            fields.collect::<Vec<_>>().join(", ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn figure7_tiles_listed_page_by_page_need_one_callback_per_list_and_print_what_the_docs_show() {
    let printed = run_passing("tiles-page", "fig7_tiles", &["page"]);
    assert_eq!(
        memory_independent(&printed),
        memory_independent(&documented_page_output()),
        "docs/api.md, Worked example"
    );
}

#[test]
fn figure7_tiles_listed_one_entry_per_tile_as_in_the_paper_need_one_callback_per_list() {
    run_passing("tiles-tile", "fig7_tiles", &["tile"]);
}

#[test]
fn figure6_index_scan_replans_from_the_last_mark() {
    run_passing("index-mark", "index_marks", &["from-mark"]);
}

#[test]
fn figure6_index_scan_replans_from_its_position_after_the_last_mark() {
    run_passing("index-position", "index_marks", &["from-position"]);
}

#[test]
fn callback_reads_inside_ignore_accesses_without_recursion() {
    run_passing("cbreads", "callback_reads", &[]);
}

#[test]
fn identity_reads_see_the_same_bytes_errno_and_position_with_the_library() {
    assert_same_output("identity", "identity", |s| {
        vec![s.path("pattern"), s.path(""), FILE_MIB.into()]
    });
}

#[test]
fn unmodified_programs_print_the_same_under_ld_preload() {
    let scratch = Scratch::new("unmodified");
    let file = scratch.0.join("data");
    let bytes: Vec<u8> = (0u32..4 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&file, bytes).expect("write the data file");
    let path = file.to_string_lossy().into_owned();
    let commands: [&[&str]; 4] = [
        &["cat", &path],
        &[
            "dd",
            &format!("if={path}"),
            "bs=12345",
            "skip=3",
            "count=50",
            "status=none",
        ],
        &["tail", "-c", "100000", &path],
        &["sha256sum", &path],
    ];
    for command in commands {
        let run_with = |preload: bool| {
            let mut cmd = Command::new(command[0]);
            cmd.args(&command[1..]).env_remove("LD_PRELOAD");
            if preload {
                cmd.env("LD_PRELOAD", library());
            }
            cmd.output()
        };
        let without = run_with(false)
            .unwrap_or_else(|e| panic!("{} (coreutils) cannot run: {e}", command[0]));
        let with = run_with(true).expect("run under LD_PRELOAD");
        assert!(
            without.status.success(),
            "{command:?} failed without the library"
        );
        assert_eq!(
            with.status.code(),
            without.status.code(),
            "{command:?}: exit status differs"
        );
        assert!(
            with.stdout == without.stdout,
            "{command:?}: output differs under LD_PRELOAD"
        );
        assert_eq!(
            with.stderr, without.stderr,
            "{command:?}: stderr differs under LD_PRELOAD"
        );
    }
}

#[test]
fn identity_build_calls_the_fortified_entry_points() {
    let dir = examples();
    for symbol in [
        "read",
        "pread",
        "pread64",
        "readv",
        "preadv",
        "preadv64",
        "preadv2",
        "__read_chk",
        "__pread_chk",
    ] {
        assert!(
            binary_names(&dir.join("identity"), symbol),
            "identity does not call {symbol}"
        );
    }
    for symbol in ["__pread64_chk", "preadv64v2"] {
        assert!(
            binary_names(&dir.join("intercept"), symbol),
            "intercept does not call {symbol}"
        );
    }
}

#[test]
fn eight_threads_with_a_client_each_read_the_same_checksums() {
    assert_same_output("threads-each", "threads", |s| {
        vec![s.path("pattern"), "per-thread".into(), FILE_MIB.into()]
    });
}

#[test]
fn eight_threads_sharing_one_client_read_the_same_checksums() {
    assert_same_output("threads-shared", "threads", |s| {
        vec![s.path("pattern"), "shared".into(), FILE_MIB.into()]
    });
}

#[test]
fn fork_while_a_round_is_in_flight_finishes_with_right_bytes() {
    run_passing("fork", "fork_round", &[]);
}

#[test]
fn ten_million_entries_get_short_counts_and_bounded_memory() {
    run_passing("biglist", "big_list", &[]);
}

#[test]
fn a_closed_and_reused_descriptor_neither_hangs_nor_is_followed() {
    run_passing("closereuse", "close_reuse", &[]);
}

#[test]
fn every_function_fails_with_its_documented_errno_and_keeps_errno_on_success() {
    run_passing("errors", "api_errors", &[]);
}

#[test]
fn premature_eviction_halves_the_budget_and_a_clean_round_adds_ten_percent() {
    run_passing("aimd", "aimd_evict", &[]);
}

#[test]
fn pthread_cancel_in_a_read_a_round_or_a_callback_cancels_only_that_thread() {
    run_passing("cancel", "cancel", &[]);
}

#[test]
fn no_callback_runs_after_unregister_client_returns() {
    run_passing("unregister", "unregister_race", &[]);
}

#[test]
fn the_header_compiles_as_cpp17() {
    require_tool("g++");
    let scratch = Scratch::new("cxx");
    let out = Command::new("g++")
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-x",
            "c++",
            "-c",
        ])
        .arg(sources().join("header_check.c"))
        .arg(format!("-I{}", sources().join("../../include").display()))
        .arg("-o")
        .arg(scratch.0.join("header_check.o"))
        .output()
        .expect("run g++");
    assert!(
        out.status.success(),
        "g++ rejected the header:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_listed_entry_point_counts_one_tracked_read() {
    run_passing("intercept", "intercept", &["std"]);
}

#[test]
fn large_file_builds_are_tracked_too() {
    run_passing("intercept-lfs", "intercept", &["lfs"]);
}

/// By default the infill gap is the break-even gap of the file's device profile (`XDG_CACHE_HOME`): none without a
/// profile (the 64 listed pages exactly), 32 KiB with a profile that says so (their 4 KiB gaps filled too: 126
/// pages), as with `LIBPREFETCH_INFILL=32K`; `LIBPREFETCH_INFILL=0` turns it off whatever the profile; a malformed
/// value still registers, keeps the default and is reported in one line on stderr, once for two clients; `LIBPREFETCH_LIST_CAPACITY` shortens the list and
/// `LIBPREFETCH_MAX_MEMORY` sets the budget (90% of it). Same program, only the environment differs.
#[test]
fn environment_variables_tune_a_c_client_and_a_malformed_value_only_warns() {
    let dir = examples();
    let scratch = Scratch::new("env");
    let file = scratch.path("pattern");
    let no_profile = scratch.0.join("cache-without-profiles");
    let profiled = scratch.0.join("cache-with-a-profile");
    let dev = fs::metadata(&scratch.0).expect("scratch directory").dev();
    // One second a request at 32768 bytes a second: a break-even gap of exactly 32 KiB.
    let gap_32k = libprefetch::profile::DeviceProfile {
        request_seconds: 1.0,
        near_request_seconds: Some(1.0),
        bytes_per_second: 32768.0,
        mount_id: None,
    };
    let devices = profiled.join("libprefetch/devices");
    fs::create_dir_all(&devices).expect("profile directory");
    let device = format!("{}:{}", libc::major(dev), libc::minor(dev));
    fs::write(devices.join(device), gap_32k.to_text()).expect("write the device profile");
    let profiled = profiled.to_str().expect("UTF-8 scratch path");
    // Runs env_config with exactly `vars` of the LIBPREFETCH_* variables, asserts it passed and printed each of
    // `want`; returns its libprefetch warnings.
    let run_with = |vars: &[(&str, &str)], args: &[&str], want: &[&str]| -> Vec<String> {
        let mut tag = String::from("env");
        for (name, value) in vars {
            tag += &format!("-{name}={}", value.replace('/', "_"));
        }
        let out_path = scratch.0.join(format!("{tag}.stdout"));
        let err_path = scratch.0.join(format!("{tag}.stderr"));
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let mut cmd = Command::new(dir.join("env_config"));
        cmd.arg(&file)
            .args(args)
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::null())
            .stdout(File::create(&out_path).expect("stdout file"))
            .stderr(File::create(&err_path).expect("stderr file"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LIBPREFETCH_") {
                cmd.env_remove(name);
            }
        }
        let mut child = cmd
            .env("XDG_CACHE_HOME", &no_profile)
            .envs(vars.iter().copied())
            .spawn()
            .expect("start env_config");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for env_config") {
                break status;
            }
            if started.elapsed() > TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("env_config {vars:?} did not finish in {TIMEOUT:?}: hung (deadlock?)");
            }
            thread::sleep(Duration::from_millis(20));
        };
        let run = Run {
            status,
            stdout: fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: fs::read_to_string(&err_path).unwrap_or_default(),
        };
        let what = format!("env_config {vars:?}");
        assert!(run.status.success(), "{}", run.describe(&what));
        for text in want {
            assert!(
                run.stdout.contains(text),
                "no {text:?}: {}",
                run.describe(&what)
            );
        }
        print!("{vars:?}: {}{}", run.stdout, run.stderr);
        let warnings = run.stderr.lines().filter(|l| l.starts_with("libprefetch:"));
        warnings.map(str::to_string).collect()
    };

    let off = run_with(
        &[("LIBPREFETCH_INFILL", "0")],
        &["0"],
        &["accepted 64 pages_prefetched 64 "],
    );
    assert_eq!(off, Vec::<String>::new());
    let unprofiled = run_with(&[], &["0"], &["accepted 64 pages_prefetched 64 "]);
    assert_eq!(unprofiled, Vec::<String>::new());
    let default = run_with(
        &[("XDG_CACHE_HOME", profiled)],
        &["32768"],
        &["accepted 64 pages_prefetched 126 "],
    );
    assert_eq!(default, Vec::<String>::new());
    let explicit = run_with(
        &[("LIBPREFETCH_INFILL", "32K")],
        &["32768"],
        &["accepted 64 pages_prefetched 126 "],
    );
    assert_eq!(explicit, Vec::<String>::new());
    let off_despite_profile = run_with(
        &[("XDG_CACHE_HOME", profiled), ("LIBPREFETCH_INFILL", "0")],
        &["0"],
        &["accepted 64 pages_prefetched 64 "],
    );
    assert_eq!(off_despite_profile, Vec::<String>::new());
    let malformed = run_with(
        &[("XDG_CACHE_HOME", profiled), ("LIBPREFETCH_INFILL", "12Q")],
        &["32768"],
        &["pages_prefetched 126 "],
    );
    assert_eq!(
        malformed,
        vec![
            "libprefetch: ignoring LIBPREFETCH_INFILL=\"12Q\": not a size (bytes, with an optional K, M or G \
             suffix); using the default (the device's break-even gap)"
        ]
    );
    let tuned = run_with(
        &[
            ("LIBPREFETCH_INFILL", "8K"),
            ("LIBPREFETCH_LIST_CAPACITY", "10"),
            ("LIBPREFETCH_MAX_MEMORY", "1M"),
            ("LIBPREFETCH_BACKGROUND_ADVICE", "0"),
        ],
        &["8192", "10"],
        &["accepted 10 pages_prefetched 19 ", "budget_bytes 943718 "],
    );
    assert_eq!(tuned, Vec::<String>::new());
}

//! Runs a workload in every mode, several times, cold (and warm if asked), and summarises the medians.
//!
//! Order: the data file is made (or reused); then for each run number, every variant (mode, and for
//! libprefetch each window size) runs once after emptying the cache, so slow drift of the machine
//! spreads over all modes alike. With `--warm`, each variant then runs once unmeasured and `runs` times
//! more without emptying the cache. With `--memory-limit`, every run happens in a fresh child process
//! (this same binary re-executed with a hidden subcommand, [`Launcher`]) placed in a memory cgroup
//! before it starts reading; it measures itself and sends back JSON. Several limits make a sweep: the
//! whole comparison is repeated in a fresh group per limit. With `--instances N` (section 5.6), each
//! pass is N such children at once, each reading its own copy of the data file. The checksums of all runs must
//! agree, or the benchmark fails: no mode may change the bytes an application reads. Ctrl-C during
//! cgroup runs ends the child and then the benchmark, which removes its group first.
//! Deviations: the paper reports single runs; here each number is the median of `runs`.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::cache::Eviction;
use crate::cgroup::MemoryCgroup;
use crate::config::{BenchConfig, Launcher};
use crate::datafile;
use crate::device_profile;
use crate::io_counters::DiskCounter;
use crate::libprefetch_mode::LibraryTuning;
use crate::mode::{execute, Mode};
use crate::outcome::Outcome;
use crate::progress;
use crate::report::{CacheState, Report, Row, RunResult};
use crate::room;
use crate::setting::Storage;
use crate::size::format_bytes;
use crate::workload::{requested_bytes, Workload};

/// The signal number of SIGKILL (the OOM killer's), for the child-failure hint.
const SIGKILL: i32 = 9;

/// One measured pass: what a child process receives on stdin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// The data file.
    pub file: PathBuf,
    /// The access pattern (regenerated in the child from its parameters).
    pub workload: Workload,
    /// How to read it.
    pub mode: Mode,
    /// libprefetch only: cap on the reorder buffer (None: the library's own memory-based budget).
    pub window_bytes: Option<u64>,
    /// libprefetch only: largest gap merged into a prefetch range (None: the library's default).
    pub infill_bytes: Option<u64>,
}

impl RunRequest {
    /// The libprefetch settings of this pass.
    fn tuning(&self) -> LibraryTuning {
        LibraryTuning {
            window_bytes: self.window_bytes,
            infill_bytes: self.infill_bytes,
            whole_list: false,
        }
    }
}

/// Performs one pass in this process and measures it. Blocks for the pass.
pub fn measure(request: &RunRequest) -> Result<RunResult> {
    let file = File::open(&request.file)
        .with_context(|| format!("opening data file {}", request.file.display()))?;
    let reads = request.workload.reads();
    let listed = request.workload.listed();
    let counter = DiskCounter::for_storage(&Storage::of(&request.file));
    let before = counter.read()?;
    let start = Instant::now();
    let outcome =
        execute(request.mode, &file, &reads, &listed, &request.tuning()).with_context(|| {
            format!(
                "{} pass over {}",
                request.mode.name(),
                request.file.display()
            )
        })?;
    let wall_seconds = start.elapsed().as_secs_f64();
    let read_bytes = counter.read()?.saturating_sub(before);
    Ok(RunResult {
        wall_seconds,
        read_bytes,
        outcome,
    })
}

/// The child side of [`Launcher`]: reads a [`RunRequest`] as JSON from stdin, measures it, prints a
/// [`RunResult`] as JSON on stdout. Called by the hidden subcommand the launcher names.
pub fn serve_child() -> Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the run request from stdin")?;
    let request: RunRequest =
        serde_json::from_str(&input).context("parsing the run request (JSON on stdin)")?;
    let result = measure(&request)?;
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &result)?;
    writeln!(stdout)?;
    Ok(())
}

impl Launcher {
    /// Starts a child that waits for its request on stdin, inside `group` if one is given.
    fn start(&self, group: Option<&MemoryCgroup>) -> Result<Child> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", self.program.display()))?;
        if let Some(group) = group {
            if let Err(error) = group.add_process(child.id()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(error.into());
            }
        }
        Ok(child)
    }

    /// Runs one child per request at the same time (each in `group` before it reads anything) and
    /// collects their results in request order.
    fn run_in(
        &self,
        group: Option<&MemoryCgroup>,
        requests: &[RunRequest],
    ) -> Result<Vec<RunResult>> {
        let mut children = Vec::with_capacity(requests.len());
        for _ in requests {
            match self.start(group) {
                Ok(child) => children.push(child),
                Err(error) => {
                    for mut child in children {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    return Err(error);
                }
            }
        }
        for (child, request) in children.iter_mut().zip(requests) {
            let mut stdin = child.stdin.take().context("child stdin")?;
            serde_json::to_writer(&mut stdin, request)?;
        }
        children
            .into_iter()
            .map(|child| finish(child, group))
            .collect()
    }
}

/// Waits for a child run and parses its result; a failure names the cgroup it ran in.
fn finish(child: Child, group: Option<&MemoryCgroup>) -> Result<RunResult> {
    let output = child
        .wait_with_output()
        .context("waiting for the child run")?;
    ensure!(!interrupt::happened(), "interrupted");
    if !output.status.success() {
        let hint = if output.status.signal() == Some(SIGKILL) {
            "; the kernel's OOM killer ends processes this way: try a larger --memory-limit"
        } else {
            ""
        };
        let place = group.map_or_else(|| "this machine".to_string(), MemoryCgroup::describe);
        bail!("the child run in {place} failed ({}){hint}", output.status);
    }
    serde_json::from_slice(&output.stdout).context("parsing the child's result")
}

/// One column of the comparison: a mode, with its window for libprefetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Variant {
    mode: Mode,
    window_bytes: Option<u64>,
}

/// Where passes run: here, or in child processes (one per instance), inside a memory cgroup if any.
enum Place<'a> {
    Here,
    Children {
        launcher: &'a Launcher,
        group: Option<&'a MemoryCgroup>,
        instances: usize,
        storage: &'a Storage,
    },
}

impl Place<'_> {
    fn run(&self, request: &RunRequest) -> Result<RunResult> {
        ensure!(!interrupt::happened(), "interrupted");
        match *self {
            Place::Here => measure(request),
            Place::Children {
                launcher,
                group,
                instances,
                storage,
            } => {
                let requests: Vec<RunRequest> = (0..instances)
                    .map(|instance| RunRequest {
                        file: instance_file(&request.file, instance),
                        ..request.clone()
                    })
                    .collect();
                combine(launcher.run_in(group, &requests)?, storage)
            }
        }
    }
}

/// The data file of instance `index`: the file itself for instance 0, else `NAME-INDEX.EXT` beside it.
pub fn instance_file(file: &Path, index: usize) -> PathBuf {
    if index == 0 {
        return file.to_path_buf();
    }
    let stem = file.file_stem().unwrap_or_default().to_string_lossy();
    let name = match file.extension() {
        Some(extension) => format!("{stem}-{index}.{}", extension.to_string_lossy()),
        None => format!("{stem}-{index}"),
    };
    file.with_file_name(name)
}

/// One result for concurrent instances: the slowest wall time, all bytes read (the emulated disk's
/// counter already sees every instance, so there the largest), the first instance's library counters.
/// Every instance must have read the same bytes.
fn combine(results: Vec<RunResult>, storage: &Storage) -> Result<RunResult> {
    let first = results.first().context("no instance ran")?.clone();
    ensure!(
        results
            .iter()
            .all(|result| result.outcome.checksum == first.outcome.checksum),
        "concurrent instances read different bytes"
    );
    let read_bytes = match storage {
        Storage::Emulated { .. } => results.iter().map(|result| result.read_bytes).max(),
        _ => Some(results.iter().map(|result| result.read_bytes).sum()),
    };
    Ok(RunResult {
        wall_seconds: results
            .iter()
            .map(|result| result.wall_seconds)
            .fold(0.0, f64::max),
        read_bytes: read_bytes.unwrap_or(0),
        outcome: Outcome {
            bytes: results.iter().map(|result| result.outcome.bytes).sum(),
            ..first.outcome
        },
    })
}

/// Ctrl-C while runs happen in a memory cgroup: the child (same process group) gets the signal and
/// dies; this process only notes it, so that it returns an error and removes the group on the way out.
mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Once;

    static INTERRUPTED: AtomicBool = AtomicBool::new(false);

    /// Installs the handler (once per process; later calls do nothing).
    pub fn catch() {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
        });
    }

    /// True once Ctrl-C was pressed.
    pub fn happened() -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }
}

/// Runs the benchmark described by `config` and returns its report. Blocks for all runs.
pub fn run(config: &BenchConfig) -> Result<Report> {
    validate(config)?;
    let mut files = Vec::with_capacity(config.instances);
    for instance in 0..config.instances {
        let path = instance_file(&config.file, instance);
        datafile::ensure(
            &path,
            config.file_size,
            datafile::is_own(&path),
            config.show_progress,
        )?;
        files.push(
            File::open(&path).with_context(|| format!("opening data file {}", path.display()))?,
        );
    }
    if config.infill_bytes.is_none() {
        profile_device_once(&config.file)?;
    }
    let storage = Storage::of(&config.file);
    let limits: Vec<Option<u64>> = if config.memory_limits.is_empty() {
        vec![None]
    } else {
        config.memory_limits.iter().copied().map(Some).collect()
    };
    let bar = progress::runs_bar(
        runs_per_setting(config).saturating_mul(limits.len()) as u64,
        config.show_progress,
    );
    let mut rows = Vec::new();
    let mut groups = Vec::new();
    for limit in limits {
        let (mut part, group) = run_with_limit(config, &files, &storage, limit, &bar)?;
        part.iter_mut()
            .for_each(|row| row.memory_limit_bytes = limit);
        rows.extend(part);
        groups.extend(group);
    }
    bar.finish_and_clear();
    Report::new(config, storage, groups, rows)
}

/// The library's default infill is its device profile's break-even gap: measure the data file's
/// device once if it has no usable profile yet (none, or a stale one) (as `prefetch device measure` does), saying so on stderr.
fn profile_device_once(data: &Path) -> Result<()> {
    let big_enough = std::fs::metadata(data)?.len() >= device_profile::MIN_FILE_BYTES;
    let usable = matches!(device_profile::stored(data)?, Some((_, None)));
    if !big_enough || usable {
        return Ok(());
    }
    let (measured, saved) = device_profile::measure_and_save(data)?;
    eprintln!(
        "measured the data file's device once: {:.1} us a request, {:.0} MB/s, infill pays up to {} bytes \
         (saved in {})",
        measured.request_seconds * 1e6,
        measured.bytes_per_second / 1e6,
        measured.infill_gap_bytes(),
        saved.display()
    );
    Ok(())
}

/// Runs every variant with the memory `limit` (in a fresh cgroup, removed afterwards) or without one;
/// returns the rows and the group's description.
fn run_with_limit(
    config: &BenchConfig,
    files: &[File],
    storage: &Storage,
    limit: Option<u64>,
    bar: &ProgressBar,
) -> Result<(Vec<Row>, Option<String>)> {
    let group = limit
        .map(MemoryCgroup::create)
        .transpose()
        .context("setting up --memory-limit")?;
    if group.is_some() {
        interrupt::catch();
    }
    let place = match (group.is_some() || config.instances > 1, &config.launcher) {
        (false, _) => Place::Here,
        (true, Some(launcher)) => Place::Children {
            launcher,
            group: group.as_ref(),
            instances: config.instances,
            storage,
        },
        (true, None) => bail!(
            "--memory-limit and --instances need a way to start child runs (no launcher given)"
        ),
    };
    let rows = run_variants(config, files, &place, bar)?;
    let description = group.as_ref().map(MemoryCgroup::describe);
    if let Some(group) = group {
        group.remove()?;
    }
    Ok((rows, description))
}

fn validate(config: &BenchConfig) -> Result<()> {
    ensure!(config.runs >= 1, "--runs must be at least 1");
    ensure!(config.instances >= 1, "--instances must be at least 1");
    match config.workload {
        Workload::Strided { tile_bytes: 0, .. } => bail!("--tile-size must be more than 0"),
        Workload::Sequential { read_bytes: 0, .. } => bail!("--read-size must be more than 0"),
        _ => {}
    }
    ensure!(
        config.windows.len() < 2 || config.memory_limits.len() < 2,
        "one sweep at a time: several --window sizes or several --memory-limit sizes, not both"
    );
    ensure!(!config.modes.is_empty(), "no mode selected");
    ensure!(
        config.instances <= MAX_INSTANCES,
        "--instances {} is more than {MAX_INSTANCES} (each is a process with its own data file)",
        config.instances
    );
    check_list_fits(&config.workload)?;
    let Some(span) = config.workload.span_bytes() else {
        bail!(
            "the {} workload's size overflows 64 bits: lower --tiles-per-side or --tile-size",
            config.workload.name()
        );
    };
    ensure!(
        span <= config.file_size,
        "the {} workload needs {span} bytes but the data file is only {} bytes (raise --file-size)",
        config.workload.name(),
        config.file_size
    );
    let reads = config.workload.reads();
    ensure!(requested_bytes(&reads) > 0, "the workload reads nothing");
    let end = reads
        .iter()
        .map(|read| read.offset + read.len)
        .max()
        .unwrap_or(0);
    ensure!(
        end <= config.file_size,
        "the {} workload reads up to byte {end} but the data file is only {} bytes: give --file-size {end} or more",
        config.workload.name(),
        config.file_size
    );
    Ok(())
}

/// Most concurrent instances: each is a process with a data file of its own.
const MAX_INSTANCES: usize = 1024;

/// Refuses a workload whose read list would not fit in the memory this process can still
/// allocate, before building it. Half of it at most: each run builds the list, and the
/// libprefetch mode hands the library a copy as its access list.
fn check_list_fits(workload: &Workload) -> Result<()> {
    let room = room::memory_available();
    let flag = match workload {
        Workload::Random { .. } => "--pages",
        Workload::Strided { .. } => "--tiles-per-side",
        Workload::Sequential { .. } => "--file-size or raise --read-size",
    };
    match workload.list_bytes() {
        Some(bytes) if bytes <= room / 2 => Ok(()),
        needed => bail!(
            "the {} workload's read list needs {}, more than half the memory available ({}): lower {flag}",
            workload.name(),
            needed.map_or("over 16 EiB".into(), format_bytes),
            format_bytes(room)
        ),
    }
}

/// The variants to compare: each mode once, libprefetch once per window if windows are given.
fn variants(config: &BenchConfig) -> Vec<Variant> {
    config
        .modes
        .iter()
        .flat_map(|&mode| {
            let windows: Vec<Option<u64>> = if mode.uses_library() && !config.windows.is_empty() {
                config.windows.iter().copied().map(Some).collect()
            } else {
                vec![None]
            };
            windows
                .into_iter()
                .map(move |window_bytes| Variant { mode, window_bytes })
        })
        .collect()
}

/// Passes (measured and warm-up) per memory setting.
fn runs_per_setting(config: &BenchConfig) -> usize {
    let variants = variants(config).len();
    // Saturating: a huge --runs only makes the progress bar's total wrong.
    let per_state = variants.saturating_mul(config.runs);
    let warm = match config.warm {
        true => per_state.saturating_add(variants),
        false => 0,
    };
    per_state.saturating_add(warm)
}

/// Measures every variant cold (and warm) and turns the results into report rows.
fn run_variants(
    config: &BenchConfig,
    files: &[File],
    place: &Place,
    bar: &ProgressBar,
) -> Result<Vec<Row>> {
    let variants = variants(config);
    let mut cold: Vec<Vec<RunResult>> = vec![Vec::new(); variants.len()];
    for run in 0..config.runs {
        for index in run_order(variants.len(), run) {
            let variant = &variants[index];
            bar.set_message(format!("{} cold run {}", label(variant), run + 1));
            evict_all(config.eviction, files)?;
            cold[index].push(place.run(&request(config, variant))?);
            bar.inc(1);
        }
    }
    let mut rows = rows_for(&variants, cold, CacheState::Cold);
    if config.warm {
        let mut warm = Vec::new();
        for variant in &variants {
            bar.set_message(format!("{} warm runs", label(variant)));
            warm.push(run_warm(config, files, place, variant, bar)?);
        }
        rows.extend(rows_for(&variants, warm, CacheState::Warm));
    }
    Ok(rows)
}

/// The order of the variants in cold run `run`: as listed in the first, then shuffled (seeded by the
/// run's number, so an invocation is repeatable). A run can be slower after a particular one: on the
/// strided pass every mode was slower right after `naive` (`limit-cache` 1.3-2.1 s against 1.1-1.2 s
/// after `stock`, the library 1.5-1.9 s against 1.1-1.4 s), and in a fixed order the same mode always
/// came after it.
fn run_order(variants: usize, run: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..variants).collect();
    if run > 0 {
        order.shuffle(&mut StdRng::seed_from_u64(run as u64));
    }
    order
}

/// Empties the cache of every instance's data file.
fn evict_all(eviction: Eviction, files: &[File]) -> Result<()> {
    files.iter().try_for_each(|file| eviction.evict(file))
}

/// One unmeasured pass to fill the cache, then `runs` measured passes without eviction.
fn run_warm(
    config: &BenchConfig,
    files: &[File],
    place: &Place,
    variant: &Variant,
    bar: &ProgressBar,
) -> Result<Vec<RunResult>> {
    evict_all(config.eviction, files)?;
    let request = request(config, variant);
    place.run(&request)?;
    bar.inc(1);
    (0..config.runs)
        .map(|_| {
            let result = place.run(&request);
            bar.inc(1);
            result
        })
        .collect()
}

fn request(config: &BenchConfig, variant: &Variant) -> RunRequest {
    RunRequest {
        file: config.file.clone(),
        workload: config.workload.clone(),
        mode: variant.mode,
        window_bytes: variant.window_bytes,
        infill_bytes: config.infill_bytes,
    }
}

fn label(variant: &Variant) -> String {
    match variant.window_bytes {
        Some(bytes) => format!(
            "{} window {}",
            variant.mode.name(),
            crate::size::format_bytes(bytes)
        ),
        None => variant.mode.name().to_string(),
    }
}

fn rows_for(variants: &[Variant], results: Vec<Vec<RunResult>>, cache: CacheState) -> Vec<Row> {
    variants
        .iter()
        .zip(results)
        .map(|(variant, runs)| Row::new(variant.mode, variant.window_bytes, cache, runs))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_after_the_first_take_the_variants_in_changing_orders() {
        assert_eq!(run_order(5, 0), [0, 1, 2, 3, 4]);
        let mut predecessors_of_2 = std::collections::BTreeSet::new();
        for run in 0..6 {
            let mut order = run_order(5, run);
            let position = order.iter().position(|&v| v == 2).unwrap();
            predecessors_of_2.insert(position.checked_sub(1).map(|p| order[p]));
            order.sort_unstable();
            assert_eq!(order, [0, 1, 2, 3, 4], "run {run} runs each variant once");
        }
        assert!(predecessors_of_2.len() >= 3, "{predecessors_of_2:?}");
    }

    #[test]
    fn instance_files_sit_beside_the_first() {
        let file = Path::new("/tmp/libprefetch-bench/data-4096.bin");
        assert_eq!(instance_file(file, 0), file);
        assert_eq!(
            instance_file(file, 2),
            Path::new("/tmp/libprefetch-bench/data-4096-2.bin")
        );
        assert_eq!(instance_file(Path::new("/x/raw"), 1), Path::new("/x/raw-1"));
    }

    #[test]
    fn concurrent_instances_combine_into_the_slowest_and_the_sum() {
        let result = |wall_seconds, read_bytes, checksum| RunResult {
            wall_seconds,
            read_bytes,
            outcome: Outcome {
                checksum,
                bytes: 10,
                library: None,
            },
        };
        let disk = Storage::Disk {
            device: "/dev/vda".into(),
            fs_type: "ext4".into(),
        };
        let combined = combine(vec![result(1.0, 100, 7), result(3.0, 50, 7)], &disk).unwrap();
        assert_eq!(combined.wall_seconds, 3.0);
        assert_eq!(combined.read_bytes, 150);
        assert_eq!(combined.outcome.bytes, 20);
        let emulated = Storage::Emulated {
            mount_point: "/m".into(),
            model: None,
        };
        let combined = combine(vec![result(1.0, 100, 7), result(3.0, 90, 7)], &emulated).unwrap();
        assert_eq!(
            combined.read_bytes, 100,
            "the emulated disk's counter sees every instance"
        );
        assert!(combine(vec![result(1.0, 1, 7), result(1.0, 1, 8)], &disk).is_err());
    }

    /// A one-page stock request for the launcher tests (the child scripts ignore it).
    fn tiny_stock_request() -> RunRequest {
        RunRequest {
            file: PathBuf::from("/nonexistent"),
            workload: Workload::Sequential {
                span_bytes: 4096,
                read_bytes: 4096,
            },
            mode: Mode::Stock,
            window_bytes: None,
            infill_bytes: None,
        }
    }

    #[test]
    fn a_run_request_survives_the_json_trip_to_a_child() {
        let request = RunRequest {
            file: PathBuf::from("/tmp/x"),
            workload: Workload::Strided {
                tile_bytes: 16384,
                tiles_per_side: 4,
            },
            mode: Mode::Libprefetch,
            window_bytes: Some(1 << 20),
            infill_bytes: Some(0),
        };
        let text = serde_json::to_string(&request).unwrap();
        assert_eq!(serde_json::from_str::<RunRequest>(&text).unwrap(), request);
    }

    /// A child started by the launcher is inside the memory cgroup before it reads its request
    /// (skips without root or a memory controller).
    #[test]
    fn the_launcher_runs_the_child_inside_the_group() {
        if !rustix::process::geteuid().is_root() || crate::cgroup::detect_version().is_err() {
            eprintln!(
                "skipped (kernel feature missing): needs root and the cgroup memory controller"
            );
            return;
        }
        let group = MemoryCgroup::create(64 << 20).unwrap();
        let script = r#"cat > /dev/null
if grep -q libprefetch-bench- /proc/self/cgroup; then inside=1; else inside=0; fi
echo "{\"wall_seconds\":0.5,\"read_bytes\":$inside,\"outcome\":{\"checksum\":7,\"bytes\":0,\"library\":null}}""#;
        let launcher = Launcher {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), script.into()],
        };
        let request = tiny_stock_request();
        let result = launcher
            .run_in(Some(&group), std::slice::from_ref(&request))
            .unwrap()
            .remove(0);
        assert_eq!(result.read_bytes, 1, "the child was not in the cgroup");
        assert_eq!(result.outcome.checksum, 7);
        group.remove().unwrap();
    }

    #[test]
    fn a_failing_child_is_reported_with_the_group() {
        if !rustix::process::geteuid().is_root() || crate::cgroup::detect_version().is_err() {
            eprintln!(
                "skipped (kernel feature missing): needs root and the cgroup memory controller"
            );
            return;
        }
        let group = MemoryCgroup::create(64 << 20).unwrap();
        let launcher = Launcher {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), "cat > /dev/null; exit 3".into()],
        };
        let request = tiny_stock_request();
        let error = launcher
            .run_in(Some(&group), std::slice::from_ref(&request))
            .unwrap_err()
            .to_string();
        assert!(error.contains("memory cgroup of 64.0 MiB"), "{error}");
        group.remove().unwrap();
    }
}

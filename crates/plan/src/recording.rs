//! Recordings: the pages a program read, in first-touch order, with the
//! identity of each file (what `prefetch record` writes, `prefetch run
//! --replay` hands to the library as an access list, and the simulator
//! reads as a trace). Pure: text in, text out; docs/record.md describes the
//! format for people.
//!
//! A recording is a header line and then *parts*, one per flush of one
//! process (at its exit, or when its buffer fills), appended to the file
//! under a lock. Each part declares the files it names and ends with an
//! `end` line; a part without its `end` (a process killed while writing it)
//! is ignored, so a cut file still reads as the parts that were complete:
//!
//! ```text
//! libprefetch-recording 1 page_size=4096
//! part pid=4242 exe=/usr/bin/sqlite3
//! file 0 dev=64769 ino=131 size=67108864 mtime_ns=1700000000123456789 path=/data/a.db
//! pages 0 0 1 0
//! pages 0 12 4 130
//! end
//! ```
//!
//! `pages FILE FIRST COUNT TIME_US [via=map|trace]`: pages `FIRST..FIRST+COUNT` of file
//! `FILE` (its number in this part), first read `TIME_US` microseconds
//! after the process started recording. Within a part the runs are in the
//! order their pages were read; `via=` names the method that saw a run
//! other than the read interposers ([`Via`]: `map`, the resident pages of a
//! mapping at unmap or exit; `trace`, the kernel's page-cache tracepoint); a page appears once per process (its first
//! read), unless the header's `rereads_after=N` is above 0: then a page is
//! listed again when it is read after more than N page reads of the process
//! since its previous read (long enough for a small cache to have lost it;
//! [`Touches`] holds the rule, which the replayer applies too). Paths are written with `\\` and `\n` escaped (a path may hold
//! any byte but NUL; non-UTF-8 bytes are written as `\xHH`).
//!
//! Follows the access lists of libprefetch (ATC 2009, section 4.2): a
//! recording is a list of future reads, known in advance.
//! Deviations: the list holds pages, not the reads' exact offsets and
//! lengths, and each page once (its first read): later rereads are served by
//! the cache the first read filled.

use std::fmt::Write as _;

/// First word of a recording's first line.
pub const MAGIC: &str = "libprefetch-recording";

/// The format version this module writes and reads.
pub const VERSION: u32 = 1;

/// A file as it was when recorded: where it was and what it was.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// Absolute path when recorded (bytes, as the kernel gave them).
    pub path: Vec<u8>,
    /// Device number (`st_dev`).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
}

/// Consecutive pages of one file, first read together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The file's index in its part's `files`.
    pub file: usize,
    /// First page.
    pub first: u64,
    /// Number of pages (at least 1).
    pub count: u64,
    /// When its first page was first read, microseconds after the process started recording.
    pub time_us: u64,
    /// Which method saw it.
    pub via: Via,
}

/// Which recording method saw a run (docs/record.md, "What each method sees").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Via {
    /// The interposed `read` family and stdio: the pages read, in order.
    #[default]
    Read,
    /// The unprivileged method for mappings: the resident pages of a mapped
    /// range when it was unmapped or at exit (order within one mapping lost).
    Map,
    /// The kernel's page-cache tracepoint: every page the process tree
    /// brought into the page cache, in order.
    Trace,
}

impl Via {
    /// The word a `pages` line ends with (`via=WORD`; `read` is left out).
    pub fn word(self) -> &'static str {
        match self {
            Via::Read => "read",
            Via::Map => "map",
            Via::Trace => "trace",
        }
    }
}

/// What one process read between two flushes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// The process's id.
    pub pid: u32,
    /// Its executable (bytes of `/proc/self/exe`'s target).
    pub exe: Vec<u8>,
    /// [`args_hash`] of its command line (`None` in recordings without it:
    /// any command line of `exe` matches).
    pub args: Option<u64>,
    /// The files its runs name.
    pub files: Vec<FileIdentity>,
    /// Its runs in first-touch order.
    pub runs: Vec<Run>,
}

/// A parsed recording.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// Page size of the recording machine.
    pub page_size: u64,
    /// A page read again after more than this many page reads is listed
    /// again (0: only first reads are listed).
    pub rereads_after: u64,
    /// The complete parts, in file order.
    pub parts: Vec<Part>,
}

/// Why a recording could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong there.
    pub reason: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

/// A process's command line (the bytes of `/proc/self/cmdline`) as a
/// part's `args=`: 64-bit FNV-1a, written by hand because it must stay the
/// same across builds (std's hasher may change between Rust releases) and
/// is five lines. A replay keeps only the parts of its own executable run
/// with the same command line: `python3 a.py` does not replay the pages of
/// `python3 b.py`.
pub fn args_hash(cmdline: &[u8]) -> u64 {
    cmdline.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The header line (with its newline) of a recording of `page_size` pages
/// that lists rereads after `rereads_after` page reads (0: never).
pub fn header(page_size: u64, rereads_after: u64) -> String {
    format!("{MAGIC} {VERSION} page_size={page_size} rereads_after={rereads_after}\n")
}

/// Which page reads a recording lists: each page's first read, and with
/// `rereads_after` above 0 a read coming more than that many page reads
/// after the page's previous read. One per process, fed every page read.
/// Memory: 8 bytes per page of a file's first [`DENSE_PAGES`] pages read so
/// far, about 32 per page read beyond them.
#[derive(Clone, Debug, Default)]
pub struct Touches {
    rereads_after: u64,
    reads: u64,
    /// Per file, the read count at each page's last read (absent or 0: never read).
    last: std::collections::HashMap<(u64, u64), LastReads>,
}

/// Pages of a file whose last reads are kept in an array (1 GiB of 4 KiB pages).
pub const DENSE_PAGES: u64 = 1 << 18;

/// One file's last reads: an array for its first pages, a map beyond (a
/// read far into a huge sparse file must not allocate an array that far).
#[derive(Clone, Debug, Default)]
struct LastReads {
    dense: Vec<u64>,
    sparse: std::collections::HashMap<u64, u64>,
}

impl LastReads {
    /// Sets `page`'s last read to `now`; returns the previous one (0: none).
    fn replace(&mut self, page: u64, now: u64) -> u64 {
        if page >= DENSE_PAGES {
            return self.sparse.insert(page, now).unwrap_or(0);
        }
        let index = page as usize;
        if self.dense.len() <= index {
            self.dense.resize(index + 1, 0);
        }
        std::mem::replace(&mut self.dense[index], now)
    }

    /// `page`'s last read (0: never read).
    fn get(&self, page: u64) -> u64 {
        match page >= DENSE_PAGES {
            true => self.sparse.get(&page).copied().unwrap_or(0),
            false => self.dense.get(page as usize).copied().unwrap_or(0),
        }
    }
}

impl Touches {
    /// Listing first reads, and rereads after `rereads_after` page reads (0: never).
    pub fn new(rereads_after: u64) -> Touches {
        Touches {
            rereads_after,
            ..Touches::default()
        }
    }

    /// Counts a read of `page` of `file` (device, inode); true if it is listed.
    pub fn read(&mut self, file: (u64, u64), page: u64) -> bool {
        self.reads += 1;
        let previous = self.last.entry(file).or_default().replace(page, self.reads);
        previous == 0 || (self.rereads_after > 0 && self.reads - previous > self.rereads_after)
    }

    /// Whether `page` of `file` was counted by [`Touches::read`].
    pub fn was_read(&self, file: (u64, u64), page: u64) -> bool {
        self.last.get(&file).is_some_and(|last| last.get(page) > 0)
    }
}

impl Part {
    /// The part as text, ending with its `end` line.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        let _ = write!(text, "part pid={} ", self.pid);
        if let Some(args) = self.args {
            let _ = write!(text, "args={args:016x} ");
        }
        let _ = writeln!(text, "exe={}", escape(&self.exe));
        for (index, file) in self.files.iter().enumerate() {
            let _ = writeln!(
                text,
                "file {index} dev={} ino={} size={} mtime_ns={} path={}",
                file.dev,
                file.ino,
                file.size,
                file.mtime_ns,
                escape(&file.path)
            );
        }
        for run in &self.runs {
            let _ = write!(
                text,
                "pages {} {} {} {}",
                run.file, run.first, run.count, run.time_us
            );
            match run.via {
                Via::Read => text.push('\n'),
                via => {
                    let _ = writeln!(text, " via={}", via.word());
                }
            }
        }
        text.push_str("end\n");
        text
    }
}

impl Recording {
    /// Parses a recording. A part cut off before its `end` line is left
    /// out; anything else malformed is an error naming its line.
    pub fn parse(text: &str) -> Result<Recording, ParseError> {
        Recording::read(text.as_bytes())
    }

    /// [`Recording::parse`] of the bytes of `input`; a line that is not
    /// UTF-8 is an error naming it.
    pub fn read(input: impl std::io::BufRead) -> Result<Recording, ParseError> {
        let mut reader = PartReader::new(input)?;
        let mut parts = Vec::new();
        while let Some(part) = reader.next_part()? {
            parts.push(part);
        }
        Ok(Recording {
            page_size: reader.page_size,
            rereads_after: reader.rereads_after,
            parts,
        })
    }
}

/// A recording read one part at a time from any byte stream, so that
/// what is held is one part, whatever the recording's length (a replay in
/// a small memory cgroup; a recording that never ends, `/dev/zero`, is
/// refused at its first overlong line).
pub struct PartReader<R> {
    input: R,
    /// Page size of the recording machine.
    pub page_size: u64,
    /// As [`Recording::rereads_after`].
    pub rereads_after: u64,
    /// Lines read so far (the number of the last one).
    line: usize,
    buffer: Vec<u8>,
}

/// The most runs a part may hold (the recorder writes a part every 16 Ki
/// runs; 8 MiB of runs held at most).
pub const MAX_PART_RUNS: usize = 1 << 18;

/// The longest line a reader accepts: a `file` line with a path of
/// `PATH_MAX` bytes, each escaped as `\xHH`, and its numbers.
pub const MAX_LINE_BYTES: usize = 4 * 4096 + 256;

impl<R: std::io::BufRead> PartReader<R> {
    /// Reads and checks the header line.
    pub fn new(input: R) -> Result<PartReader<R>, ParseError> {
        let mut reader = PartReader {
            input,
            page_size: 0,
            rereads_after: 0,
            line: 0,
            buffer: Vec::new(),
        };
        match reader.next_line()? {
            Some(first) => (reader.page_size, reader.rereads_after) = parse_header(&first)?,
            None => return Err(error(1, "not a libprefetch recording (no header line)")),
        }
        Ok(reader)
    }

    /// The next complete part, `None` at the end (a last part cut off
    /// before its `end` line is left out); an error names its line.
    pub fn next_part(&mut self) -> Result<Option<Part>, ParseError> {
        self.next_part_where(|_| true)
    }

    /// As [`next_part`](Self::next_part), but a part whose `part` line
    /// `keep` refuses (given the part without its files and runs) is passed
    /// over up to its `end` without parsing its lines: a replay reads only
    /// the parts of its own program, however long the others are.
    pub fn next_part_where(
        &mut self,
        keep: impl Fn(&Part) -> bool,
    ) -> Result<Option<Part>, ParseError> {
        let mut open: Option<Part> = None;
        let mut passing_over = false;
        while let Some(line) = self.next_line()? {
            let number = self.line;
            let (word, rest) = line.split_once(' ').unwrap_or((&line, ""));
            if passing_over && word != "part" {
                passing_over = word != "end";
                continue;
            }
            match (word, open.as_mut()) {
                ("part", _) => {
                    let part = parse_part(rest, number)?;
                    passing_over = !keep(&part);
                    open = (!passing_over).then_some(part);
                }
                ("file", Some(part)) => {
                    part.files.push(parse_file(rest, number, part.files.len())?)
                }
                ("pages", Some(part)) if part.runs.len() >= MAX_PART_RUNS => {
                    return Err(error(
                        number,
                        "part longer than any `prefetch record` writes",
                    ))
                }
                ("pages", Some(part)) => part.runs.push(parse_run(rest, number, part.files.len())?),
                ("end", Some(_)) => return Ok(open),
                ("", _) => {}
                (_, None) if word.starts_with('#') => {}
                (_, None) => return Err(error(number, "expected a `part` line")),
                _ => return Err(error(number, &format!("unknown line kind {word:?}"))),
            }
        }
        Ok(None)
    }

    /// The next whole line without its newline; `None` at the end or at a
    /// line cut off before its newline (the part it belongs to is
    /// incomplete).
    fn next_line(&mut self) -> Result<Option<String>, ParseError> {
        use std::io::{BufRead as _, Read as _};
        self.buffer.clear();
        let number = self.line + 1;
        let limit = MAX_LINE_BYTES as u64 + 1;
        let read = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.buffer)
            .map_err(|e| error(number, &format!("cannot be read: {e}")))?;
        if read == 0 {
            return Ok(None);
        }
        if self.buffer.last() != Some(&b'\n') {
            if self.buffer.len() > MAX_LINE_BYTES {
                return Err(error(number, "line longer than any a recording holds"));
            }
            return Ok(None);
        }
        self.line = number;
        self.buffer.pop();
        match std::str::from_utf8(&self.buffer) {
            Ok(text) => Ok(Some(text.to_string())),
            Err(_) if number == 1 => Err(error(1, "not a libprefetch recording (no header line)")),
            Err(_) => Err(error(number, "not UTF-8 text")),
        }
    }
}

fn error(line: usize, reason: &str) -> ParseError {
    ParseError {
        line,
        reason: reason.to_string(),
    }
}

/// The header's page size and `rereads_after` (0 when absent).
fn parse_header(line: &str) -> Result<(u64, u64), ParseError> {
    let fields: Vec<&str> = line.split(' ').collect();
    if fields.first() != Some(&MAGIC) {
        return Err(error(1, "not a libprefetch recording (no header line)"));
    }
    if fields.get(1) != Some(&"1") {
        return Err(error(1, "recording format version is not 1"));
    }
    let page_size = fields
        .get(2)
        .and_then(|f| f.strip_prefix("page_size="))
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&size| size.is_power_of_two())
        .ok_or_else(|| error(1, "header lacks page_size=N (a power of two)"))?;
    let rereads_after = match fields.get(3).map(|f| f.strip_prefix("rereads_after=")) {
        None => 0,
        Some(Some(value)) => number(value, "rereads_after", 1)?,
        Some(None) => return Err(error(1, "expected rereads_after=N after the page size")),
    };
    Ok((page_size, rereads_after))
}

/// The value of `key=` at the start of `text`, and the rest after its space.
fn field<'a>(text: &'a str, key: &str, line: usize) -> Result<(&'a str, &'a str), ParseError> {
    let value = text
        .strip_prefix(key)
        .and_then(|t| t.strip_prefix('='))
        .ok_or_else(|| error(line, &format!("expected {key}=")))?;
    Ok(value.split_once(' ').unwrap_or((value, "")))
}

fn number<T: std::str::FromStr>(text: &str, what: &str, line: usize) -> Result<T, ParseError> {
    text.parse()
        .map_err(|_| error(line, &format!("{what} {text:?} is not a number")))
}

fn parse_part(rest: &str, line: usize) -> Result<Part, ParseError> {
    let (pid, rest) = field(rest, "pid", line)?;
    let (args, rest) = match field(rest, "args", line) {
        Ok((hex, rest)) => match u64::from_str_radix(hex, 16) {
            Ok(args) => (Some(args), rest),
            Err(_) => return Err(error(line, &format!("args {hex:?} is not a hex number"))),
        },
        Err(_) => (None, rest),
    };
    let exe = rest
        .strip_prefix("exe=")
        .ok_or_else(|| error(line, "expected exe="))?;
    Ok(Part {
        pid: number(pid, "pid", line)?,
        args,
        exe: unescape(exe).ok_or_else(|| error(line, "bad escape in exe"))?,
        ..Part::default()
    })
}

fn parse_file(rest: &str, line: usize, expected: usize) -> Result<FileIdentity, ParseError> {
    let (index, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    if number::<usize>(index, "file number", line)? != expected {
        return Err(error(
            line,
            &format!("file numbers must count up from 0 (expected {expected})"),
        ));
    }
    let (dev, rest) = field(rest, "dev", line)?;
    let (ino, rest) = field(rest, "ino", line)?;
    let (size, rest) = field(rest, "size", line)?;
    let (mtime, rest) = field(rest, "mtime_ns", line)?;
    let path = rest
        .strip_prefix("path=")
        .ok_or_else(|| error(line, "expected path="))?;
    Ok(FileIdentity {
        path: unescape(path).ok_or_else(|| error(line, "bad escape in path"))?,
        dev: number(dev, "dev", line)?,
        ino: number(ino, "ino", line)?,
        size: number(size, "size", line)?,
        mtime_ns: number(mtime, "mtime_ns", line)?,
    })
}

fn parse_run(rest: &str, line: usize, files: usize) -> Result<Run, ParseError> {
    let fields: Vec<&str> = rest.split(' ').collect();
    let (file, first, count, time, via) = match fields[..] {
        [file, first, count, time] => (file, first, count, time, None),
        [file, first, count, time, via] => (file, first, count, time, Some(via)),
        _ => {
            let expected = "expected `pages FILE FIRST COUNT TIME_US [via=map|trace]`";
            return Err(error(line, expected));
        }
    };
    let via = match via {
        None | Some("via=read") => Via::Read,
        Some("via=map") => Via::Map,
        Some("via=trace") => Via::Trace,
        Some(other) => return Err(error(line, &format!("unknown method {other:?}"))),
    };
    let run = Run {
        file: number(file, "file", line)?,
        first: number(first, "first page", line)?,
        count: number(count, "count", line)?,
        time_us: number(time, "time", line)?,
        via,
    };
    if run.file >= files {
        return Err(error(
            line,
            &format!("file {} is not declared in this part", run.file),
        ));
    }
    if run.count == 0 || run.first.checked_add(run.count).is_none() {
        return Err(error(line, "a run holds at least one page, within 64 bits"));
    }
    Ok(run)
}

/// `bytes` with `\`, newline and non-UTF-8 bytes escaped.
fn escape(bytes: &[u8]) -> String {
    let mut text = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => text.push_str("\\\\"),
                '\n' => text.push_str("\\n"),
                _ => text.push(c),
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(text, "\\x{byte:02x}");
        }
    }
    text
}

/// The bytes `escape` wrote `text` for; `None` on a bad escape.
fn unescape(text: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buffer = [0; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        match chars.next()? {
            '\\' => bytes.push(b'\\'),
            'n' => bytes.push(b'\n'),
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                bytes.push(
                    u8::from_str_radix(&hex, 16)
                        .ok()
                        .filter(|_| hex.len() == 2)?,
                );
            }
            _ => return None,
        }
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Part {
        Part {
            pid: 4242,
            exe: b"/usr/bin/sqlite3".to_vec(),
            args: Some(args_hash(b"sqlite3\0a.db\0")),
            files: vec![FileIdentity {
                path: b"/data/a b\\c\nd\xff.db".to_vec(),
                dev: 64769,
                ino: 131,
                size: 67108864,
                mtime_ns: 1_700_000_000_123_456_789,
            }],
            runs: vec![
                Run {
                    file: 0,
                    first: 0,
                    count: 1,
                    time_us: 0,
                    via: Via::Read,
                },
                Run {
                    file: 0,
                    first: 12,
                    count: 4,
                    time_us: 130,
                    via: Via::Map,
                },
                Run {
                    file: 0,
                    first: 2,
                    count: 1,
                    time_us: 131,
                    via: Via::Trace,
                },
            ],
        }
    }

    #[test]
    fn the_documented_example_parses() {
        let text = "libprefetch-recording 1 page_size=4096\n\
                    part pid=4242 exe=/usr/bin/sqlite3\n\
                    file 0 dev=64769 ino=131 size=67108864 mtime_ns=1700000000123456789 path=/data/a.db\n\
                    pages 0 0 1 0\n\
                    pages 0 12 4 130\n\
                    end\n";
        let recording = Recording::parse(text).unwrap();
        assert_eq!((recording.page_size, recording.rereads_after), (4096, 0));
        assert_eq!(recording.parts.len(), 1);
        assert_eq!(recording.parts[0].files[0].path, b"/data/a.db");
        assert_eq!(
            recording.parts[0].runs[1],
            Run {
                file: 0,
                first: 12,
                count: 4,
                time_us: 130,
                via: Via::Read,
            }
        );
    }

    #[test]
    fn a_part_round_trips_with_odd_paths() {
        let text = header(4096, 0) + &sample().to_text();
        assert_eq!(Recording::parse(&text).unwrap().parts, vec![sample()]);
    }

    #[test]
    fn a_cut_off_part_is_left_out_and_the_complete_ones_kept() {
        let whole = header(4096, 0) + &sample().to_text();
        let full = whole.clone() + &sample().to_text();
        for cut in whole.len()..full.len() {
            let parsed = Recording::parse(&full[..cut]).unwrap();
            assert_eq!(parsed.parts, vec![sample()], "cut at byte {cut}");
        }
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let text = header(4096, 0) + "part pid=1 exe=/x\npages 0 0 1 0\nend\n";
        assert_eq!(Recording::parse(&text).unwrap_err().line, 3);
        assert_eq!(Recording::parse("hello\n").unwrap_err().line, 1);
        let zero = header(4096, 0) + "part pid=1 exe=/x\nfile 0 dev=1 ino=2 size=3 mtime_ns=4 path=/a\npages 0 5 0 0\nend\n";
        assert!(Recording::parse(&zero)
            .unwrap_err()
            .reason
            .contains("at least one page"));
    }

    #[test]
    fn a_bad_byte_is_reported_at_its_line() {
        let text = [header(4096, 0).as_bytes(), b"part pid=1 exe=/x\n\xff\n"].concat();
        let error = PartReader::new(&text[..]).unwrap().next_part().unwrap_err();
        assert_eq!((error.line, error.reason.as_str()), (3, "not UTF-8 text"));
        let garbage = PartReader::new(&b"\x80\x81\n"[..]).err().unwrap();
        assert_eq!(garbage.line, 1);
    }

    #[test]
    fn an_endless_stream_is_refused_at_its_first_line() {
        let error = PartReader::new(std::io::BufReader::new(std::io::repeat(0))).err();
        assert_eq!(error.map(|e| e.line), Some(1));
        let newlines = std::io::BufReader::new(std::io::repeat(b'\n'));
        assert_eq!(PartReader::new(newlines).err().map(|e| e.line), Some(1));
    }

    #[test]
    fn parts_are_read_one_at_a_time() {
        let text = header(4096, 0) + &sample().to_text() + &sample().to_text();
        let mut reader = PartReader::new(text.as_bytes()).unwrap();
        assert_eq!(reader.next_part().unwrap(), Some(sample()));
        assert_eq!(reader.next_part().unwrap(), Some(sample()));
        assert_eq!(reader.next_part().unwrap(), None);
    }

    #[test]
    fn parts_refused_by_their_part_line_are_passed_over_unparsed() {
        let other = "part pid=7 exe=/usr/bin/other\nnot a line of any recording\nend\n";
        let text = header(4096, 0) + other + &sample().to_text() + other;
        let mine = |part: &Part| part.exe == sample().exe;
        let mut reader = PartReader::new(text.as_bytes()).unwrap();
        assert_eq!(reader.next_part_where(mine).unwrap(), Some(sample()));
        assert_eq!(reader.next_part_where(mine).unwrap(), None);
        let mut all = PartReader::new(text.as_bytes()).unwrap();
        assert_eq!(
            all.next_part().unwrap_err().line,
            3,
            "unfiltered, it is read"
        );
    }

    #[test]
    fn rereads_are_listed_only_after_the_given_number_of_reads() {
        let mut first_only = Touches::new(0);
        let mut rereads = Touches::new(2);
        let file = (1, 7);
        // Pages read: 5 6 5 7 8 5 5
        let listed = |touches: &mut Touches| -> Vec<bool> {
            [5, 6, 5, 7, 8, 5, 5]
                .iter()
                .map(|&p| touches.read(file, p))
                .collect()
        };
        assert_eq!(
            listed(&mut first_only),
            [true, true, false, true, true, false, false]
        );
        // Page 5 again at read 3 (2 reads after read 1: not more than 2), at read 6 (3 after read 3: listed).
        assert_eq!(
            listed(&mut rereads),
            [true, true, false, true, true, true, false]
        );
    }

    #[test]
    fn pages_far_into_a_file_are_counted_without_an_array_that_far() {
        let mut touches = Touches::new(0);
        let far = 1 << 40;
        assert!(touches.read((1, 1), far));
        assert!(!touches.read((1, 1), far));
        assert!(touches.read((1, 1), DENSE_PAGES - 1));
        let read = |page| touches.was_read((1, 1), page);
        assert_eq!(
            (read(far), read(far + 1), read(DENSE_PAGES - 1), read(0)),
            (true, false, true, false)
        );
        assert!(!touches.was_read((1, 2), far));
        let file = &touches.last[&(1, 1)];
        assert_eq!(
            (file.dense.len() as u64, file.sparse.len()),
            (DENSE_PAGES, 1)
        );
    }

    proptest! {
        #[test]
        fn any_path_round_trips(path in proptest::collection::vec(1u8..=255, 1..64)) {
            prop_assert_eq!(unescape(&escape(&path)), Some(path.clone()));
            prop_assert!(!escape(&path).contains('\n'));
        }
    }
}

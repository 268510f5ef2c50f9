//! Reading a trace file line by line, gzip, zstd or plain, with errors that name the file and
//! line. A UTF-8 byte order mark before the first line (as spreadsheet programs write) is
//! dropped. [`decompressed`] is shared with the binary readers.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use zstd::stream::read::Decoder as ZstdDecoder;

use crate::error::TraceError;

/// The numbered lines of a file (1-based), decompressed if it starts with the gzip or zstd
/// magic. The input is read in chunks of [`CHUNK`] bytes into one buffer and cut at each
/// newline (`memchr`), and a line is lent to the caller until the next: no allocation and no
/// call through the boxed reader per line, which made text traces parse at half the speed of
/// binary ones.
pub(crate) struct Lines {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    line: u64,
    /// Bytes read and not yet cut into lines are `chunk[start..end]`.
    chunk: Vec<u8>,
    start: usize,
    end: usize,
    /// The current line, without its newline.
    current: std::ops::Range<usize>,
    at_end: bool,
}

/// Bytes read at a time.
const CHUNK: usize = 1 << 18;
/// The longest line accepted.
const LONGEST: usize = 1 << 20;

impl Lines {
    /// Opens `path`.
    pub(crate) fn open(path: &Path) -> Result<Lines, TraceError> {
        let file = File::open(path).map_err(|cause| TraceError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        Lines::from_reader(path, file)
    }

    /// The lines of `bytes`, the content of `path` read earlier.
    pub(crate) fn from_bytes(path: &Path, bytes: Arc<[u8]>) -> Result<Lines, TraceError> {
        Lines::from_reader(path, Cursor::new(bytes))
    }

    fn from_reader(path: &Path, input: impl Read + 'static) -> Result<Lines, TraceError> {
        Ok(Lines {
            path: path.to_path_buf(),
            reader: decompressed(path, input)?,
            line: 0,
            chunk: vec![0; CHUNK],
            start: 0,
            end: 0,
            current: 0..0,
            at_end: false,
        })
    }

    /// The file the lines come from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// The first bytes of a gzip stream.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The first bytes of a zstd frame.
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// `input`, decompressed while it is read if it starts with the gzip or zstd magic bytes;
/// streaming, so memory does not grow with the file.
pub(crate) fn decompressed(
    path: &Path,
    input: impl Read + 'static,
) -> Result<Box<dyn BufRead>, TraceError> {
    let io = |cause| TraceError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let mut input = BufReader::with_capacity(1 << 16, input);
    let head = input.fill_buf().map_err(io)?;
    Ok(if head.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::new(MultiGzDecoder::new(input)))
    } else if head.starts_with(&ZSTD_MAGIC) {
        Box::new(BufReader::new(ZstdDecoder::with_buffer(input).map_err(io)?))
    } else {
        Box::new(input)
    })
}

/// Opens `path` (or reads `content`, its bytes kept earlier), decompressed.
pub(crate) fn open_bytes(
    path: &Path,
    content: Option<&Arc<[u8]>>,
) -> Result<Box<dyn BufRead>, TraceError> {
    match content {
        Some(bytes) => decompressed(path, Cursor::new(Arc::clone(bytes))),
        None => decompressed(
            path,
            File::open(path).map_err(|cause| TraceError::Io {
                path: path.to_path_buf(),
                cause,
            })?,
        ),
    }
}

impl Lines {
    /// The next line that `keep` accepts, with its number, skipping the others; read errors
    /// are passed on. The text has no line end; the first line has no byte order mark.
    pub(crate) fn next_kept(
        &mut self,
        keep: impl Fn(&str) -> bool,
    ) -> Option<Result<(u64, &str), TraceError>> {
        match self.seek(keep, false)? {
            Ok(_) => Some(self.text().map(|t| (self.line, t))),
            Err(e) => Some(Err(e)),
        }
    }

    /// [`Lines::next_kept`], but a line of plain decimal digits (at most 19, then an optional
    /// `\r`) comes back as its value, read from its bytes: nearly every line of a block trace
    /// is one, and it skips the UTF-8 check and the trims, which such a line passes unchanged
    /// (its text would parse to the same value).
    pub(crate) fn next_number_or_kept(
        &mut self,
        keep: impl Fn(&str) -> bool,
    ) -> Option<Result<(u64, Kept<'_>), TraceError>> {
        match self.seek(keep, true)? {
            Ok(Some(number)) => Some(Ok((self.line, Kept::Number(number)))),
            Ok(None) => Some(self.text().map(|t| (self.line, Kept::Text(t)))),
            Err(e) => Some(Err(e)),
        }
    }

    /// Moves to the next line that `keep` accepts, or (with `numbers`) that is a plain decimal
    /// number, whose value it returns.
    fn seek(
        &mut self,
        keep: impl Fn(&str) -> bool,
        numbers: bool,
    ) -> Option<Result<Option<u64>, TraceError>> {
        loop {
            match self.advance() {
                None => return None,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(())) => {}
            }
            if numbers {
                if let Some(number) = decimal(&self.chunk[self.current.clone()]) {
                    return Some(Ok(Some(number)));
                }
            }
            match self.text() {
                Ok(text) if keep(text) => return Some(Ok(None)),
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Cuts the next line; `None` at the end.
    fn advance(&mut self) -> Option<Result<(), TraceError>> {
        self.line += 1;
        loop {
            let pending = &self.chunk[self.start..self.end];
            if let Some(at) = memchr::memchr(b'\n', pending) {
                self.current = self.start..self.start + at;
                self.start += at + 1;
                return Some(Ok(()));
            }
            if pending.len() >= LONGEST {
                return Some(Err(error(
                    &self.path,
                    self.line,
                    "line longer than 1 MiB".into(),
                )));
            }
            if self.at_end {
                // The last line, without a newline.
                return match pending.is_empty() {
                    true => None,
                    false => {
                        self.current = self.start..self.end;
                        self.start = self.end;
                        Some(Ok(()))
                    }
                };
            }
            if let Err(e) = self.refill() {
                return Some(Err(error(
                    &self.path,
                    self.line,
                    format!("read failed: {e}"),
                )));
            }
        }
    }

    /// Moves the pending bytes to the front and reads more after them (growing the buffer
    /// while a line is longer than it).
    fn refill(&mut self) -> std::io::Result<()> {
        self.chunk.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end + CHUNK / 2 > self.chunk.len() {
            self.chunk.resize(self.chunk.len() * 2, 0);
        }
        loop {
            match self.reader.read(&mut self.chunk[self.end..]) {
                Ok(0) => {
                    self.at_end = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The current line's text, or an error if it is not UTF-8.
    fn text(&self) -> Result<&str, TraceError> {
        let text = std::str::from_utf8(&self.chunk[self.current.clone()]).map_err(|_| {
            error(
                &self.path,
                self.line,
                "not UTF-8 text (a binary trace? libCacheSim's oracleGeneral records are \
                 read as such when the name holds `.oracleGeneral` or with \
                 --format oracle-general)"
                    .into(),
            )
        })?;
        let text = match self.line {
            1 => text.strip_prefix('\u{feff}').unwrap_or(text),
            _ => text,
        };
        Ok(text.strip_suffix('\r').unwrap_or(text))
    }
}

/// A line [`Lines::next_number_or_kept`] returns.
pub(crate) enum Kept<'a> {
    /// A plain decimal number.
    Number(u64),
    /// Any other line `keep` accepted.
    Text(&'a str),
}

/// The value of `line` if it is 1 to 19 ASCII digits (no overflow), then an optional `\r`.
fn decimal(line: &[u8]) -> Option<u64> {
    let digits = line.strip_suffix(b"\r").unwrap_or(line);
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &byte| {
        let digit = byte.wrapping_sub(b'0');
        (digit < 10).then(|| value * 10 + u64::from(digit))
    })
}

/// Whether a line holds data (not blank, not a `#` comment).
pub(crate) fn is_data(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && !text.starts_with('#')
}

/// A parse error at `line` of `path`.
pub(crate) fn error(path: &Path, line: u64, message: String) -> TraceError {
    TraceError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    }
}

/// Splits a comma-separated line into exactly `count` trimmed fields (more are allowed when
/// `extra` is true).
///
/// Hand-written rather than the `csv` crate: these formats have no quoting, and a plain split
/// keeps the line number of every record at hand for error messages.
pub(crate) fn fields<'t>(
    path: &Path,
    line: u64,
    text: &'t str,
    count: usize,
    extra: bool,
) -> Result<Vec<&'t str>, TraceError> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    if fields.len() < count || (!extra && fields.len() > count) {
        return Err(error(
            path,
            line,
            format!(
                "expected {count} comma-separated fields, found {}",
                fields.len()
            ),
        ));
    }
    Ok(fields)
}

/// Parses field `name` of a line as a number.
pub(crate) fn number<T: std::str::FromStr>(
    path: &Path,
    line: u64,
    name: &str,
    text: &str,
) -> Result<T, TraceError> {
    text.parse()
        .map_err(|_| error(path, line, format!("{name} {text:?} is not a valid number")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines across chunk boundaries, a line longer than a chunk, CRLF, a byte order mark and a
    /// last line without a newline all come back whole and numbered.
    #[test]
    fn lines_cross_chunks_whole() {
        let long = "7".repeat(CHUNK + 1000);
        let mut text = String::from("\u{feff}first\r\n");
        for i in 0..100_000 {
            text.push_str(&format!("{i}\n"));
        }
        text.push_str(&long);
        text.push_str("\nlast");
        let bytes: Arc<[u8]> = text.into_bytes().into();
        let mut lines = Lines::from_bytes(Path::new("t"), bytes).unwrap();
        let mut seen = Vec::new();
        while let Some(line) = lines.next_kept(|_| true) {
            let (number, text) = line.unwrap();
            seen.push((number, text.to_string()));
        }
        assert_eq!(seen.len(), 100_003);
        assert_eq!(seen[0], (1, "first".to_string()));
        assert_eq!(seen[54_322], (54_323, "54321".to_string()));
        assert_eq!(seen[100_001], (100_002, long));
        assert_eq!(seen[100_002], (100_003, "last".to_string()));
        let huge: Arc<[u8]> = vec![b'1'; LONGEST + 1].into();
        let mut lines = Lines::from_bytes(Path::new("t"), huge).unwrap();
        let error = lines.next_kept(|_| true).unwrap().unwrap_err().to_string();
        assert!(error.contains("longer than 1 MiB"), "{error}");
    }

    /// Lines of digits come back as numbers, equal to their text's parse; every other line
    /// (a byte order mark, spaces, a sign, 20 digits, a comment) as the text `next_kept` gives.
    #[test]
    fn plain_numbers_are_read_from_their_bytes_and_the_rest_as_text() {
        let text = "\u{feff}12\n007\r\n 5\n+6\n#c\n18446744073709551615\n9999999999999999999\n\n42";
        let bytes: Arc<[u8]> = text.as_bytes().into();
        let mut lines = Lines::from_bytes(Path::new("t"), bytes).unwrap();
        let mut seen = Vec::new();
        while let Some(line) = lines.next_number_or_kept(is_data) {
            seen.push(match line.unwrap() {
                (number, Kept::Number(value)) => (number, format!("={value}")),
                (number, Kept::Text(text)) => (number, text.to_string()),
            });
        }
        let expected = [
            (1, "12"),
            (2, "=7"),
            (3, " 5"),
            (4, "+6"),
            (6, "18446744073709551615"),
            (7, "=9999999999999999999"),
            (9, "=42"),
        ];
        let expected: Vec<_> = expected.iter().map(|&(n, t)| (n, t.to_string())).collect();
        assert_eq!(seen, expected);
    }
}

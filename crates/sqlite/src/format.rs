//! Parsing of single pieces of the SQLite database file format (sqlite.org "Database File Format",
//! sections 1.3 "The Database Header", 1.6 "B-tree Pages", 2.1 "Record Format"): the 100-byte header,
//! b-tree page headers, cells, varints and record columns. Everything here works on byte slices and
//! checks every bound: a corrupt or hostile page gives a [`FormatError`], never a panic.
//!
//! Deviations: only what an index scan needs is decoded (page headers, cell payload sizes, child
//! pointers, integer keys, and integer or text record columns); freeblocks and fragment counts are not.

use thiserror::Error;

/// Why a piece of the file could not be parsed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// The 100-byte header is not an SQLite 3 header or holds impossible values.
    #[error("not an SQLite 3 database header: {0}")]
    BadHeader(&'static str),
    /// A page's type byte is not one of the four b-tree page types.
    #[error("page {page}: type byte {kind:#04x} is not a b-tree page")]
    BadPageType {
        /// The page number.
        page: u32,
        /// The type byte found.
        kind: u8,
    },
    /// A structure points outside its page or the file.
    #[error("page {page}: {what} out of bounds")]
    OutOfBounds {
        /// The page number (0 when not known).
        page: u32,
        /// What was being read.
        what: &'static str,
    },
    /// A record's header is malformed.
    #[error("malformed record: {0}")]
    BadRecord(&'static str),
}

/// Result of parsing.
pub type FormatResult<T> = Result<T, FormatError>;

/// The fields of the 100-byte database header that the reader needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Page size in bytes (512 to 65536, a power of two).
    pub page_size: u32,
    /// Usable bytes per page (page size minus the reserved bytes at the end of each page).
    pub usable_size: u32,
    /// File change counter (offset 24); changes on every committed write in rollback-journal mode.
    pub change_counter: u32,
    /// Size of the database in pages as the header states it (0 when the header's value is not valid).
    pub page_count: u32,
}

/// Length of the database header at the start of page 1.
pub const HEADER_LEN: usize = 100;
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Smallest usable page size the format allows.
const MIN_USABLE: usize = 480;

impl Header {
    /// Parses the first 100 bytes of a database file.
    pub fn parse(bytes: &[u8]) -> FormatResult<Header> {
        let h = bytes
            .get(..HEADER_LEN)
            .ok_or(FormatError::BadHeader("shorter than 100 bytes"))?;
        if &h[..16] != MAGIC {
            return Err(FormatError::BadHeader("magic string missing"));
        }
        let page_size = match be16(h, 16) {
            1 => 65536,
            n if (512..=32768).contains(&n) && n.is_power_of_two() => u32::from(n),
            _ => {
                return Err(FormatError::BadHeader(
                    "page size not a power of two in 512..=65536",
                ))
            }
        };
        let usable_size = page_size - u32::from(h[20]);
        if usable_size < MIN_USABLE as u32 {
            return Err(FormatError::BadHeader("usable page size below 480"));
        }
        let change_counter = be32(h, 24);
        let valid_for = be32(h, 92);
        let page_count = if valid_for == change_counter {
            be32(h, 28)
        } else {
            0
        };
        Ok(Header {
            page_size,
            usable_size,
            change_counter,
            page_count,
        })
    }
}

/// The four kinds of b-tree page (type byte at the start of the page header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// 0x02: interior page of an index b-tree.
    IndexInterior,
    /// 0x05: interior page of a table b-tree.
    TableInterior,
    /// 0x0a: leaf page of an index b-tree.
    IndexLeaf,
    /// 0x0d: leaf page of a table b-tree.
    TableLeaf,
}

impl PageKind {
    /// The kind named by a page's type byte, or an error naming `page` for any other byte.
    pub fn from_byte(page: u32, kind: u8) -> FormatResult<PageKind> {
        match kind {
            0x02 => Ok(PageKind::IndexInterior),
            0x05 => Ok(PageKind::TableInterior),
            0x0a => Ok(PageKind::IndexLeaf),
            0x0d => Ok(PageKind::TableLeaf),
            _ => Err(FormatError::BadPageType { page, kind }),
        }
    }

    /// Whether pages of this kind have child pointers.
    pub fn is_interior(self) -> bool {
        matches!(self, PageKind::IndexInterior | PageKind::TableInterior)
    }

    /// Whether pages of this kind belong to an index b-tree.
    pub fn is_index(self) -> bool {
        matches!(self, PageKind::IndexInterior | PageKind::IndexLeaf)
    }
}

/// A parsed b-tree page: its kind, right-most child and cell offsets, borrowing the page bytes.
#[derive(Debug)]
pub struct BtreePage<'a> {
    /// Page number.
    pub number: u32,
    /// Kind of page.
    pub kind: PageKind,
    /// Right-most child pointer (interior pages only).
    pub right_child: Option<u32>,
    bytes: &'a [u8],
    usable: usize,
    cell_offsets: Vec<usize>,
}

/// One cell's payload: the bytes stored on the page and, if it spills, where the rest is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload<'a> {
    /// Total payload length in bytes.
    pub total: u64,
    /// The part stored on this page.
    pub local: &'a [u8],
    /// First overflow page, when `local` is shorter than `total`.
    pub overflow: Option<u32>,
}

impl<'a> BtreePage<'a> {
    /// Parses the header and cell pointer array of page `number`, whose bytes are `bytes` (one whole page).
    /// Page 1 starts after the 100-byte database header. `usable` is the header's usable size.
    pub fn parse(number: u32, bytes: &'a [u8], usable: u32) -> FormatResult<BtreePage<'a>> {
        let usable = (usable as usize).min(bytes.len());
        let oob = |what| FormatError::OutOfBounds { page: number, what };
        if usable < MIN_USABLE {
            return Err(oob("page shorter than the smallest usable size"));
        }
        let start = if number == 1 { HEADER_LEN } else { 0 };
        let kind = PageKind::from_byte(number, *bytes.get(start).ok_or(oob("page header"))?)?;
        let header_len = if kind.is_interior() { 12 } else { 8 };
        let header = bytes
            .get(start..start + header_len)
            .ok_or(oob("page header"))?;
        let cell_count = usize::from(be16(header, 3));
        let right_child = kind.is_interior().then(|| be32(header, 8));
        let pointers_at = start + header_len;
        let pointers = bytes
            .get(pointers_at..pointers_at + 2 * cell_count)
            .ok_or(oob("cell pointer array"))?;
        let cell_offsets = pointers
            .chunks_exact(2)
            .map(|p| {
                let offset = usize::from(u16::from_be_bytes([p[0], p[1]]));
                if offset < pointers_at + 2 * cell_count || offset >= usable {
                    Err(oob("cell pointer"))
                } else {
                    Ok(offset)
                }
            })
            .collect::<FormatResult<Vec<_>>>()?;
        Ok(BtreePage {
            number,
            kind,
            right_child,
            bytes: &bytes[..usable],
            usable,
            cell_offsets,
        })
    }

    /// Number of cells on the page.
    pub fn cell_count(&self) -> usize {
        self.cell_offsets.len()
    }

    fn cell(&self, index: usize) -> FormatResult<&'a [u8]> {
        let offset = *self
            .cell_offsets
            .get(index)
            .ok_or(FormatError::OutOfBounds {
                page: self.number,
                what: "cell index",
            })?;
        Ok(&self.bytes[offset..])
    }

    fn oob(&self, what: &'static str) -> FormatError {
        FormatError::OutOfBounds {
            page: self.number,
            what,
        }
    }

    /// Left child pointer of cell `index` (interior pages).
    pub fn left_child(&self, index: usize) -> FormatResult<u32> {
        if !self.kind.is_interior() {
            return Err(self.oob("child pointer of a leaf"));
        }
        let cell = self.cell(index)?;
        cell.get(..4)
            .map(|b| be32(b, 0))
            .ok_or(self.oob("child pointer"))
    }

    /// Integer key of cell `index`: the rowid (table leaf) or the separator key (table interior).
    pub fn int_key(&self, index: usize) -> FormatResult<i64> {
        let cell = self.cell(index)?;
        match self.kind {
            PageKind::TableInterior => {
                let (key, _) = varint(cell.get(4..).ok_or(self.oob("interior key"))?)
                    .ok_or(self.oob("key varint"))?;
                Ok(key as i64)
            }
            PageKind::TableLeaf => {
                let (_, n) = varint(cell).ok_or(self.oob("payload size varint"))?;
                let (rowid, _) = varint(&cell[n..]).ok_or(self.oob("rowid varint"))?;
                Ok(rowid as i64)
            }
            _ => Err(self.oob("integer key on an index page")),
        }
    }

    /// Payload of cell `index` (table leaf, index leaf and index interior cells).
    pub fn payload(&self, index: usize) -> FormatResult<Payload<'a>> {
        let cell = self.cell(index)?;
        let body = match self.kind {
            PageKind::IndexInterior => cell.get(4..).ok_or(self.oob("cell"))?,
            PageKind::IndexLeaf | PageKind::TableLeaf => cell,
            PageKind::TableInterior => return Err(self.oob("payload of a table interior cell")),
        };
        let (total, mut at) = varint(body).ok_or(self.oob("payload size varint"))?;
        if self.kind == PageKind::TableLeaf {
            at += varint(&body[at..]).ok_or(self.oob("rowid varint"))?.1;
        }
        let local_len = local_payload_len(total, self.usable as u64, self.kind);
        let local_end = at
            .checked_add(local_len as usize)
            .ok_or(self.oob("payload"))?;
        let local = body.get(at..local_end).ok_or(self.oob("payload"))?;
        let overflow = if local_len < total {
            let ptr = body
                .get(local_end..local_end + 4)
                .ok_or(self.oob("overflow pointer"))?;
            Some(be32(ptr, 0))
        } else {
            None
        };
        Ok(Payload {
            total,
            local,
            overflow,
        })
    }
}

/// Bytes of a payload of `total` bytes that are stored on the b-tree page itself (file format 1.6:
/// X = U-35 for table leaves, ((U-12)*64/255)-23 for index pages; M = ((U-12)*32/255)-23;
/// K = M+((P-M)%(U-4)); store P if P<=X, else K if K<=X, else M).
pub fn local_payload_len(total: u64, usable: u64, kind: PageKind) -> u64 {
    let max_local = if kind == PageKind::TableLeaf {
        usable - 35
    } else {
        (usable - 12) * 64 / 255 - 23
    };
    if total <= max_local {
        return total;
    }
    let min_local = (usable - 12) * 32 / 255 - 23;
    let k = min_local + (total - min_local) % (usable - 4);
    if k <= max_local {
        k
    } else {
        min_local
    }
}

/// Decodes an SQLite varint (1 to 9 bytes, big-endian, 7 bits per byte, 8 in the ninth).
/// Returns the value and the number of bytes used, or `None` if the slice ends first.
pub fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((value << 8) | u64::from(b), 9));
        }
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// One decoded record column, as far as the reader needs them.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// An integer (serial types 1-6, 8, 9).
    Int(i64),
    /// A text value (serial types 13, 15, ...), as bytes.
    Text(Vec<u8>),
    /// Any other value (real or blob), not decoded.
    Other,
}

/// Decodes all columns of a record (file format 2.1: header size varint, serial types, then bodies).
pub fn record_values(record: &[u8]) -> FormatResult<Vec<Value>> {
    record_columns(record)?
        .map(|column| column.map(|(serial, body)| decode_value(serial, body)))
        .collect()
}

/// Decodes only the last column of a record (an index entry's rowid), without allocating for the others.
pub fn record_last(record: &[u8]) -> FormatResult<Option<Value>> {
    let mut last = None;
    for column in record_columns(record)? {
        last = Some(column?);
    }
    Ok(last.map(|(serial, body)| decode_value(serial, body)))
}

/// The (serial type, body bytes) of each column of a record, checked against the record's bounds.
fn record_columns(record: &[u8]) -> FormatResult<impl Iterator<Item = FormatResult<(u64, &[u8])>>> {
    let (header_len, start) = varint(record).ok_or(FormatError::BadRecord("header size"))?;
    let header_len =
        usize::try_from(header_len).map_err(|_| FormatError::BadRecord("header size"))?;
    if header_len > record.len() || header_len < start {
        return Err(FormatError::BadRecord("header size beyond the record"));
    }
    let (mut at, mut body) = (start, header_len);
    Ok(std::iter::from_fn(move || {
        if at >= header_len {
            return None;
        }
        let Some((serial, n)) = varint(&record[at..header_len]) else {
            at = header_len;
            return Some(Err(FormatError::BadRecord("serial type")));
        };
        at += n;
        let column = serial_len(serial).and_then(|len| {
            let end = body
                .checked_add(len)
                .filter(|&e| e <= record.len())
                .ok_or(FormatError::BadRecord("column beyond the record"))?;
            let bytes = &record[body..end];
            body = end;
            Ok((serial, bytes))
        });
        if column.is_err() {
            at = header_len;
        }
        Some(column)
    }))
}

/// Body length of a column of the given serial type.
fn serial_len(serial: u64) -> FormatResult<usize> {
    Ok(match serial {
        0 | 8 | 9 => 0,
        1..=4 => serial as usize,
        5 => 6,
        6 | 7 => 8,
        10 | 11 => return Err(FormatError::BadRecord("reserved serial type")),
        n => usize::try_from((n - 12) / 2).map_err(|_| FormatError::BadRecord("column length"))?,
    })
}

fn decode_value(serial: u64, body: &[u8]) -> Value {
    match serial {
        0 => Value::Null,
        1..=6 => {
            let mut v = if body.first().is_some_and(|b| b & 0x80 != 0) {
                -1i64
            } else {
                0
            };
            for &b in body {
                v = (v << 8) | i64::from(b);
            }
            Value::Int(v)
        }
        8 => Value::Int(0),
        9 => Value::Int(1),
        n if n >= 13 && n % 2 == 1 => Value::Text(body.to_vec()),
        _ => Value::Other,
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Big-endian u32 at `at`; callers have checked that four bytes are there.
pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_examples_from_the_format() {
        assert_eq!(varint(&[0x00]), Some((0, 1)));
        assert_eq!(varint(&[0x7f]), Some((127, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x82, 0x2c]), Some((300, 2)));
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x81]), None);
        assert_eq!(varint(&[]), None);
    }

    #[test]
    fn local_payload_matches_the_format_thresholds() {
        // U = 4096: X = 4061 for table leaves, 1002 for index pages; M = 489.
        assert_eq!(local_payload_len(4061, 4096, PageKind::TableLeaf), 4061);
        assert_eq!(local_payload_len(1002, 4096, PageKind::IndexLeaf), 1002);
        // P = 5000: K = 489 + (4511 % 4092) = 908 <= X for both kinds.
        assert_eq!(local_payload_len(5000, 4096, PageKind::TableLeaf), 908);
        // P = 4062: K = 489 + 3573 = 4062 > 4061, so M.
        assert_eq!(local_payload_len(4062, 4096, PageKind::TableLeaf), 489);
    }

    #[test]
    fn record_decodes_ints_text_and_null() {
        // header: len 5, types: 1 (i8), 0 (null), 17 (text of 2), 6 (i64)
        let mut rec = vec![5, 1, 0, 17, 6, 0xfe, b'h', b'i'];
        rec.extend_from_slice(&300i64.to_be_bytes());
        assert_eq!(
            record_values(&rec).unwrap(),
            vec![
                Value::Int(-2),
                Value::Null,
                Value::Text(b"hi".to_vec()),
                Value::Int(300)
            ]
        );
        assert!(record_values(&[5, 1, 0]).is_err());
        assert!(record_values(&[2, 10]).is_err());
    }

    #[test]
    fn header_rejects_garbage() {
        assert!(Header::parse(&[0; 100]).is_err());
        let mut h = [0u8; 100];
        h[..16].copy_from_slice(MAGIC);
        h[16..18].copy_from_slice(&4096u16.to_be_bytes());
        h[28..32].copy_from_slice(&7u32.to_be_bytes());
        let parsed = Header::parse(&h).unwrap();
        assert_eq!(
            (parsed.page_size, parsed.usable_size, parsed.page_count),
            (4096, 4096, 7)
        );
        h[16..18].copy_from_slice(&1000u16.to_be_bytes());
        assert!(Header::parse(&h).is_err());
    }
}

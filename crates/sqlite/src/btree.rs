//! Reading an SQLite database file through its b-trees (sqlite.org "Database File Format", sections 1.5-1.6
//! and 2.6 "Storage Of The SQL Database Schema"), as the section 5.4 callback needs it:
//!
//! * the schema: which b-tree roots are indexes of which rowid tables;
//! * an index in key order, as its leaf pages ([`IndexLeaf`]) with the entries that index interior cells
//!   hold between two leaves (SQLite index b-trees are B-trees: interior cells carry keys too);
//! * the rowids of one index leaf, following overflow chains when a key spills;
//! * the table leaf page that holds a rowid, found by descending the table's interior pages, which a
//!   [`TableMap`] caches so that a scan reads each interior page once.
//!
//! Every page number is checked against the file size and every walk is bounded (depth, visited pages,
//! overflow chain length), so a corrupt or hostile file gives a [`ReadError`], never a panic or a hang.
//!
//! Deviations: the reader trusts that all leaves of a table b-tree are at the same depth (the format
//! guarantees it) and stops descending there without reading the leaf; a corrupt file can only make it
//! name a wrong page, which costs a useless prefetch, never a wrong query result.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use thiserror::Error;

use crate::format::{
    be32, record_last, record_values, BtreePage, FormatError, Header, PageKind, Value, HEADER_LEN,
};

/// Deepest b-tree the reader descends (SQLite's own limit, BTCURSOR_MAX_DEPTH, is 20).
pub const MAX_DEPTH: usize = 20;

/// Why the reader could not answer.
#[derive(Debug, Error)]
pub enum ReadError {
    /// Reading the file failed.
    #[error("reading the database: {0}")]
    Io(#[from] io::Error),
    /// A page or record is malformed.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The b-tree structure is inconsistent (bad page number, cycle, wrong page kind).
    #[error("corrupt b-tree: {0}")]
    Corrupt(String),
}

/// Result of reading.
pub type ReadResult<T> = Result<T, ReadError>;

/// Where pages come from: a file, or bytes in memory in tests.
pub trait PageSource {
    /// Fills `buf` from byte `offset`; a short file is an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Current length in bytes.
    fn byte_len(&self) -> io::Result<u64>;
    /// Last modification time in nanoseconds, if the source has one. A WAL checkpoint rewrites pages in
    /// place without touching the header or the length; only this shows it.
    fn modified_ns(&self) -> io::Result<i128> {
        Ok(0)
    }
    /// Hints that `len` bytes at `offset` will be read soon (a source without a page cache ignores it).
    fn will_need(&self, _offset: u64, _len: u64) {}
    /// Hints that `len` bytes at `offset` will not be read again soon: their clean pages leave the page
    /// cache (a source without a page cache ignores it).
    fn dont_need(&self, _offset: u64, _len: u64) {}
    /// Hints that the file is read at random (`true`: no read-ahead) or as usual.
    fn random_access(&self, _random: bool) {}
}

/// `posix_fadvise(WILLNEED)` of a range of `fd`: the kernel starts reading it and returns at once.
fn advise_will_need(fd: std::os::fd::RawFd, offset: u64, len: u64) {
    advise(fd, offset, len, libc::POSIX_FADV_WILLNEED);
}

/// `posix_fadvise(DONTNEED)` of a range of `fd`: its clean pages are dropped (the file's contents are
/// unchanged; a dirty page stays until written back, as libprefetch's rounds drop their stale pages).
fn advise_dont_need(fd: std::os::fd::RawFd, offset: u64, len: u64) {
    advise(fd, offset, len, libc::POSIX_FADV_DONTNEED);
}

fn advise(fd: std::os::fd::RawFd, offset: u64, len: u64, advice: libc::c_int) {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return;
    };
    // SAFETY: fadvise only reads its integer arguments; a stale descriptor yields EBADF, ignored (a hint).
    unsafe { libc::posix_fadvise(fd, offset, len, advice) };
}

/// The modification time of a `struct stat`, in nanoseconds.
fn stat_modified_ns(stat: &libc::stat) -> i128 {
    i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec)
}

impl PageSource for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
    fn byte_len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn modified_ns(&self) -> io::Result<i128> {
        use std::os::unix::fs::MetadataExt;
        let meta = self.metadata()?;
        Ok(i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()))
    }
    fn will_need(&self, offset: u64, len: u64) {
        advise_will_need(std::os::fd::AsRawFd::as_raw_fd(self), offset, len);
    }
    fn dont_need(&self, offset: u64, len: u64) {
        advise_dont_need(std::os::fd::AsRawFd::as_raw_fd(self), offset, len);
    }
}

impl<S: PageSource + ?Sized> PageSource for Arc<S> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn byte_len(&self) -> io::Result<u64> {
        (**self).byte_len()
    }
    fn modified_ns(&self) -> io::Result<i128> {
        (**self).modified_ns()
    }
    fn will_need(&self, offset: u64, len: u64) {
        (**self).will_need(offset, len);
    }
    fn dont_need(&self, offset: u64, len: u64) {
        (**self).dont_need(offset, len);
    }
    fn random_access(&self, random: bool) {
        (**self).random_access(random);
    }
}

/// A descriptor someone else owns (SQLite's own, for the VFS), read with `pread` and never closed: closing
/// any descriptor of a file would release the process's POSIX locks on it.
#[derive(Debug, Clone, Copy)]
pub struct Unowned(pub RawFd);

impl PageSource for Unowned {
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            let at = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
            // SAFETY: pread writes at most buf.len() bytes into buf; a stale descriptor only yields EBADF.
            let got = unsafe { libc::pread(self.0, buf.as_mut_ptr().cast(), buf.len(), at) };
            let Ok(n) = usize::try_from(got) else {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            };
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf = &mut buf[n..];
            offset += n as u64;
        }
        Ok(())
    }
    fn byte_len(&self) -> io::Result<u64> {
        Ok(u64::try_from(self.stat()?.st_size).unwrap_or(0))
    }
    fn modified_ns(&self) -> io::Result<i128> {
        Ok(stat_modified_ns(&self.stat()?))
    }
    fn will_need(&self, offset: u64, len: u64) {
        advise_will_need(self.0, offset, len);
    }
    fn dont_need(&self, offset: u64, len: u64) {
        advise_dont_need(self.0, offset, len);
    }
    fn random_access(&self, random: bool) {
        let advice = match random {
            true => libc::POSIX_FADV_RANDOM,
            false => libc::POSIX_FADV_NORMAL,
        };
        advise(self.0, 0, 0, advice);
    }
}

impl Unowned {
    fn stat(&self) -> io::Result<libc::stat> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a struct stat into the buffer on success.
        if unsafe { libc::fstat(self.0, stat.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstat succeeded, so the struct is initialised.
        Ok(unsafe { stat.assume_init() })
    }
}

impl PageSource for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn byte_len(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

/// An entry of the schema table (`sqlite_schema`) that owns a b-tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaEntry {
    /// "table" or "index".
    pub kind: String,
    /// Name of the table or index.
    pub name: String,
    /// Table the entry belongs to.
    pub table: String,
    /// Root page of its b-tree.
    pub root: u32,
    /// A table declared `WITHOUT ROWID` (its `CREATE TABLE` ends with that option): its b-tree is an
    /// index b-tree keyed by the primary key.
    pub without_rowid: bool,
}

/// One leaf page of an index in key order, followed by the rowids that index interior cells place between
/// it and the next leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLeaf {
    /// The leaf page number.
    pub page: u32,
    /// Rowids of the interior-cell entries that come after this leaf's entries, in key order.
    pub then: Vec<i64>,
}

/// An index's leaves in key order, each with the interior-cell rowids after it, held in three flat
/// vectors, 16 bytes a leaf: a scan keeps them for as long as the file is unchanged, and an
/// [`IndexLeaf`] each (a `Vec` per leaf) took 239 KiB at heaptrack's peak for the 3,547 leaves of the
/// 12-copy `unicode` names index, from the memory cgroup's cache that the scan's list plans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafOrder {
    pages: Vec<u32>,
    /// Every leaf's interior-cell rowids, in key order.
    then: Vec<i64>,
    /// Where each leaf's rowids end in `then`.
    then_ends: Vec<u32>,
}

impl LeafOrder {
    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether there is no leaf.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The leaf pages, in key order.
    pub fn pages(&self) -> &[u32] {
        &self.pages
    }

    /// The rowids of the interior entries after leaf `i` (empty past the end).
    pub fn then(&self, i: usize) -> &[i64] {
        let end = |i: usize| self.then_ends.get(i).map_or(0, |&end| end as usize);
        let start = i.checked_sub(1).map_or(0, end);
        self.then.get(start..end(i)).unwrap_or_default()
    }

    fn push_leaf(&mut self, page: u32) {
        self.pages.push(page);
        self.then_ends.push(self.end());
    }

    /// Adds `rowid` after the last leaf (none yet: dropped).
    fn push_then(&mut self, rowid: i64) {
        if self.pages.is_empty() {
            return;
        }
        self.then.push(rowid);
        let end = self.end();
        if let Some(last) = self.then_ends.last_mut() {
            *last = end;
        }
    }

    fn end(&self) -> u32 {
        u32::try_from(self.then.len()).unwrap_or(u32::MAX)
    }

    fn truncate(&mut self, count: usize) {
        self.pages.truncate(count);
        self.then_ends.truncate(count);
        let end = self.then_ends.last().map_or(0, |&end| end as usize);
        self.then.truncate(end);
    }

    fn shrink_to_fit(&mut self) {
        self.pages.shrink_to_fit();
        self.then.shrink_to_fit();
        self.then_ends.shrink_to_fit();
    }

    /// The leaves one by one.
    pub fn to_leaves(&self) -> Vec<IndexLeaf> {
        (0..self.len())
            .map(|i| IndexLeaf {
                page: self.pages[i],
                then: self.then(i).to_vec(),
            })
            .collect()
    }
}

/// An index b-tree's leaves in key order, compactly, and its interior pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexOrder {
    /// The leaves, in key order.
    pub leaves: LeafOrder,
    /// The interior pages, in the order visited.
    pub interiors: Vec<u32>,
}

/// An index b-tree's leaves in key order and its interior pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexTree {
    /// The leaves, in key order.
    pub leaves: Vec<IndexLeaf>,
    /// The interior pages, in the order visited.
    pub interiors: Vec<u32>,
}

/// A database file opened for reading its b-trees.
pub struct Database<S: PageSource + ?Sized> {
    header: Header,
    page_count: u32,
    modified_ns: i128,
    source: Box<S>,
}

impl<S: PageSource + ?Sized> Database<S> {
    /// Reads the header of `source`. The page count is taken from the file length.
    pub fn open(source: Box<S>) -> ReadResult<Database<S>> {
        let (header, page_count, modified_ns) = read_state(&*source)?;
        Ok(Database {
            header,
            page_count,
            modified_ns,
            source,
        })
    }

    /// Re-reads the header, the file length and its modification time; returns whether any changed
    /// since the last read.
    pub fn refresh(&mut self) -> ReadResult<bool> {
        let (header, pages, modified_ns) = read_state(&*self.source)?;
        let changed =
            (header, pages, modified_ns) != (self.header, self.page_count, self.modified_ns);
        self.header = header;
        self.page_count = pages;
        self.modified_ns = modified_ns;
        Ok(changed)
    }

    /// The parsed database header (as read when opened or last refreshed).
    pub fn header(&self) -> Header {
        self.header
    }

    /// Number of whole pages in the file when it was opened.
    pub fn page_count(&self) -> u32 {
        self.page_count
    }

    /// Byte offset of page `number` in the file.
    pub fn page_offset(&self, number: u32) -> u64 {
        u64::from(number - 1) * u64::from(self.header.page_size)
    }

    /// Reads page `number` (1-based), checking it lies in the file.
    pub fn read_page(&self, number: u32) -> ReadResult<Vec<u8>> {
        if number == 0 || number > self.page_count {
            return Err(ReadError::Corrupt(format!(
                "page number {number} outside 1..={}",
                self.page_count
            )));
        }
        let mut buf = vec![0u8; self.header.page_size as usize];
        self.source
            .read_exact_at(&mut buf, self.page_offset(number))?;
        Ok(buf)
    }

    /// Hints that pages `numbers` will be read soon, so that reading them one after another finds them
    /// on their way (the kernel reads them all at once, at the device's queue depth).
    pub fn will_need(&self, numbers: &[u32]) {
        for &number in numbers.iter().filter(|&&n| n >= 1 && n <= self.page_count) {
            let size = u64::from(self.header.page_size);
            self.source.will_need(self.page_offset(number), size);
        }
    }

    /// Reads page `number` and tells its b-tree page kind.
    pub fn page_kind(&self, number: u32) -> ReadResult<PageKind> {
        let bytes = self.read_page(number)?;
        Ok(BtreePage::parse(number, &bytes, self.header.usable_size)?.kind)
    }

    /// The whole payload of a cell: its local part plus its overflow chain (file format 1.6).
    fn full_payload<'p>(&self, page: &BtreePage<'p>, cell: usize) -> ReadResult<Cow<'p, [u8]>> {
        let payload = page.payload(cell)?;
        if payload.total > u64::from(self.page_count) * u64::from(self.header.page_size) {
            return Err(ReadError::Corrupt(format!(
                "page {}: payload larger than the file",
                page.number
            )));
        }
        if payload.overflow.is_none() {
            return Ok(Cow::Borrowed(payload.local));
        }
        let mut bytes = payload.local.to_vec();
        let mut next = payload.overflow;
        let mut hops = 0u32;
        while let Some(number) = next.filter(|_| (bytes.len() as u64) < payload.total) {
            hops += 1;
            if hops > self.page_count {
                return Err(ReadError::Corrupt(
                    "overflow chain longer than the file".into(),
                ));
            }
            let overflow = self.read_page(number)?;
            let usable = self.header.usable_size as usize;
            let want = usize::try_from(payload.total - bytes.len() as u64).unwrap_or(usize::MAX);
            let take = want.min(usable - 4);
            bytes.extend_from_slice(&overflow[4..4 + take]);
            next = Some(be32(&overflow, 0)).filter(|&n| n != 0);
        }
        if (bytes.len() as u64) < payload.total {
            return Err(ReadError::Corrupt(format!(
                "page {}: overflow chain ends early",
                page.number
            )));
        }
        Ok(Cow::Owned(bytes))
    }

    /// Visits the cells of every leaf of the b-tree rooted at `root` in key order, and (for index b-trees)
    /// the interior cells between them, calling `visit(page, cell index)`. Bounded by depth and visits.
    fn walk(
        &self,
        root: u32,
        visit: &mut dyn FnMut(&BtreePage<'_>, usize) -> ReadResult<()>,
    ) -> ReadResult<()> {
        let mut seen = HashSet::new();
        self.walk_from(root, 0, &mut seen, visit)
    }

    fn walk_from(
        &self,
        number: u32,
        depth: usize,
        seen: &mut HashSet<u32>,
        visit: &mut dyn FnMut(&BtreePage<'_>, usize) -> ReadResult<()>,
    ) -> ReadResult<()> {
        if depth > MAX_DEPTH || !seen.insert(number) {
            return Err(ReadError::Corrupt(format!(
                "page {number}: b-tree cycle or too deep"
            )));
        }
        let bytes = self.read_page(number)?;
        let page = BtreePage::parse(number, &bytes, self.header.usable_size)?;
        for cell in 0..page.cell_count() {
            if page.kind.is_interior() {
                self.walk_from(page.left_child(cell)?, depth + 1, seen, visit)?;
            }
            if page.kind != PageKind::TableInterior {
                visit(&page, cell)?;
            }
        }
        if let Some(right) = page.right_child {
            self.walk_from(right, depth + 1, seen, visit)?;
        }
        Ok(())
    }

    /// The schema entries that own b-trees (tables and indexes with a root page).
    pub fn schema(&self) -> ReadResult<Vec<SchemaEntry>> {
        let mut entries = Vec::new();
        self.walk(1, &mut |page, cell| {
            let values = record_values(&self.full_payload(page, cell)?)?;
            if let [Value::Text(kind), Value::Text(name), Value::Text(table), Value::Int(root), rest @ ..] = &values[..] {
                if let Ok(root) = u32::try_from(*root) {
                    if root > 0 {
                        let without_rowid = match rest.first() {
                            Some(Value::Text(sql)) => declares_without_rowid(sql),
                            _ => false,
                        };
                        entries.push(SchemaEntry {
                            kind: String::from_utf8_lossy(kind).into_owned(),
                            name: String::from_utf8_lossy(name).into_owned(),
                            table: String::from_utf8_lossy(table).into_owned(),
                            root,
                            without_rowid,
                        });
                    }
                }
            }
            Ok(())
        })?;
        Ok(entries)
    }

    /// Rowid of an index entry: the last column of its record, which must be an integer.
    fn index_rowid(&self, page: &BtreePage<'_>, cell: usize) -> ReadResult<i64> {
        match record_last(&self.full_payload(page, cell)?)? {
            Some(Value::Int(rowid)) => Ok(rowid),
            _ => Err(ReadError::Corrupt(format!(
                "page {}: index entry does not end with a rowid",
                page.number
            ))),
        }
    }

    /// The leaves of the index rooted at `root` in key order, each with the interior-cell rowids after it,
    /// and its interior pages. Reads only the interior pages and one leaf (to learn the height): the
    /// parents' child pointers name the leaves, which is what makes this cheap on a cold cache.
    pub fn index_tree(&self, root: u32) -> ReadResult<IndexTree> {
        let order = self.index_order(root)?;
        Ok(IndexTree {
            leaves: order.leaves.to_leaves(),
            interiors: order.interiors,
        })
    }

    /// [`Self::index_tree`], its leaves held compactly ([`LeafOrder`]).
    pub fn index_order(&self, root: u32) -> ReadResult<IndexOrder> {
        self.index_walk(root, usize::MAX)
    }

    /// The first `count` leaves of the index rooted at `root` in key order, as [`Self::index_tree`]
    /// gives them, reading only the interior pages above those leaves (the left edge, which SQLite read
    /// to begin a scan there, and the parents of the leaves listed).
    pub fn index_first_leaves(&self, root: u32, count: usize) -> ReadResult<Vec<IndexLeaf>> {
        let mut order = self.index_walk(root, count)?;
        order.leaves.truncate(count);
        Ok(order.leaves.to_leaves())
    }

    /// [`Self::index_tree`] walked in key order until at least `count` leaves are listed.
    fn index_walk(&self, root: u32, count: usize) -> ReadResult<IndexOrder> {
        let mut tree = IndexOrder {
            leaves: LeafOrder::default(),
            interiors: Vec::new(),
        };
        let height = self.height(root, PageKind::IndexInterior, PageKind::IndexLeaf)?;
        if height == 0 {
            tree.leaves.push_leaf(root);
        } else {
            let mut seen = HashSet::new();
            self.index_in_order(root, height, count, &mut seen, &mut tree)?;
        }
        // Kept for as long as the file is unchanged: the spare capacity of its last doubling goes back.
        tree.leaves.shrink_to_fit();
        Ok(tree)
    }

    /// Number of interior levels above the leaves of the b-tree rooted at `root`, along its left edge.
    fn height(&self, root: u32, interior: PageKind, leaf: PageKind) -> ReadResult<usize> {
        let mut number = root;
        for height in 0..=MAX_DEPTH {
            let bytes = self.read_page(number)?;
            let page = BtreePage::parse(number, &bytes, self.header.usable_size)?;
            if page.kind == leaf {
                return Ok(height);
            }
            if page.kind != interior {
                return Err(ReadError::Corrupt(format!(
                    "page {number}: wrong b-tree page kind"
                )));
            }
            number = leftmost_child(&page)?;
        }
        Err(ReadError::Corrupt(format!(
            "page {root}: b-tree deeper than {MAX_DEPTH}"
        )))
    }

    /// The left-most child of interior page `number`, or `None` if it is a leaf.
    pub fn leftmost_child(&self, number: u32) -> ReadResult<Option<u32>> {
        let bytes = self.read_page(number)?;
        let page = BtreePage::parse(number, &bytes, self.header.usable_size)?;
        Ok(match page.kind.is_interior() {
            true => Some(leftmost_child(&page)?),
            false => None,
        })
    }

    /// The children of interior page `number` in key order (its cells' left children, then its right
    /// child); empty for a leaf.
    pub fn children(&self, number: u32) -> ReadResult<Vec<u32>> {
        let bytes = self.read_page(number)?;
        let page = BtreePage::parse(number, &bytes, self.header.usable_size)?;
        if !page.kind.is_interior() {
            return Ok(Vec::new());
        }
        let mut children = (0..page.cell_count())
            .map(|cell| page.left_child(cell).map_err(ReadError::from))
            .collect::<ReadResult<Vec<u32>>>()?;
        children.extend(page.right_child);
        Ok(children)
    }

    /// Appends the leaves below interior page `number` (`levels` above the leaves) in key order, until
    /// more than `limit` are listed (the `limit`th then complete with the interior entries after it).
    fn index_in_order(
        &self,
        number: u32,
        levels: usize,
        limit: usize,
        seen: &mut HashSet<u32>,
        tree: &mut IndexOrder,
    ) -> ReadResult<()> {
        if !seen.insert(number) {
            return Err(ReadError::Corrupt(format!("page {number}: b-tree cycle")));
        }
        let bytes = self.read_page(number)?;
        let page = BtreePage::parse(number, &bytes, self.header.usable_size)?;
        if page.kind != PageKind::IndexInterior {
            return Err(ReadError::Corrupt(format!(
                "page {number}: expected an index interior page"
            )));
        }
        tree.interiors.push(number);
        let children = (0..page.cell_count())
            .map(|cell| page.left_child(cell).map(|child| (child, Some(cell))));
        let right = page.right_child.map(|child| Ok((child, None)));
        let children: Vec<(u32, Option<usize>)> =
            children.chain(right).collect::<Result<_, _>>()?;
        if levels > 1 && limit == usize::MAX {
            // The whole index is walked: its interior pages below this one are read together, at the
            // device's queue depth, instead of one request at a time.
            let pages: Vec<u32> = children.iter().map(|&(child, _)| child).collect();
            self.will_need(&pages);
        }
        for (child, cell) in children {
            if levels == 1 {
                tree.leaves.push_leaf(child);
            } else {
                self.index_in_order(child, levels - 1, limit, seen, tree)?;
            }
            if tree.leaves.len() > limit {
                return Ok(());
            }
            if let Some(cell) = cell {
                let rowid = self.index_rowid(&page, cell)?;
                tree.leaves.push_then(rowid);
            }
        }
        Ok(())
    }

    /// Rowids of the entries on index leaf page `number`, in key order.
    pub fn index_leaf_rowids(&self, number: u32) -> ReadResult<Vec<i64>> {
        let bytes = self.read_page(number)?;
        let page = BtreePage::parse(number, &bytes, self.header.usable_size)?;
        if page.kind != PageKind::IndexLeaf {
            return Err(ReadError::Corrupt(format!(
                "page {number} is not an index leaf"
            )));
        }
        (0..page.cell_count())
            .map(|cell| self.index_rowid(&page, cell))
            .collect()
    }

    /// Every (table leaf page, rowid) of the table rooted at `root`, in rowid order.
    pub fn table_rows(&self, root: u32) -> ReadResult<Vec<(u32, i64)>> {
        let mut rows = Vec::new();
        self.walk(root, &mut |page, cell| {
            if page.kind != PageKind::TableLeaf {
                return Err(ReadError::Corrupt(format!(
                    "page {}: index page inside a table",
                    page.number
                )));
            }
            rows.push((page.number, page.int_key(cell)?));
            Ok(())
        })?;
        Ok(rows)
    }
}

/// The header of `source` and its length in whole pages.
fn read_state<S: PageSource + ?Sized>(source: &S) -> ReadResult<(Header, u32, i128)> {
    let modified_ns = source.modified_ns()?;
    let mut first = [0u8; HEADER_LEN];
    source.read_exact_at(&mut first, 0)?;
    let header = Header::parse(&first)?;
    let pages = source.byte_len()? / u64::from(header.page_size);
    Ok((
        header,
        u32::try_from(pages).unwrap_or(u32::MAX),
        modified_ns,
    ))
}

/// One table interior page, parsed: child `children[i]` holds rowids up to `keys[i]`, `right` the rest.
/// Sized exactly (a scan keeps every interior page of its table).
#[derive(Debug, Clone)]
struct Interior {
    keys: Box<[i64]>,
    children: Box<[u32]>,
    right: u32,
}

impl Interior {
    fn child_for(&self, rowid: i64) -> u32 {
        let i = self.keys.partition_point(|&key| key < rowid);
        self.children.get(i).copied().unwrap_or(self.right)
    }
}

/// Maps rowids of one rowid table to the leaf pages holding them, caching the table's interior pages.
#[derive(Debug, Clone)]
pub struct TableMap {
    root: u32,
    /// Number of interior levels above the leaves (0 when the root is a leaf).
    height: usize,
    /// Interior pages by number (FxHash: looked up once per level for every rowid of a scan).
    interiors: FxHashMap<u32, Interior>,
    /// Leaves of the table as its left-most path tells (the product of the fan-outs met on the way down).
    estimated_leaves: u64,
    /// Whether every interior page was read ([`TableMap::read_interiors`]).
    complete: bool,
}

impl TableMap {
    /// Prepares the map of the table rooted at `root`: reads only its left-most path (its height pages),
    /// which tells its height and, from the fan-outs on the way, its size ([`TableMap::estimated_leaves`]);
    /// the other interior pages are read when a rowid needs them or by [`TableMap::read_interiors`].
    pub fn new<S: PageSource + ?Sized>(db: &Database<S>, root: u32) -> ReadResult<TableMap> {
        let mut map = TableMap {
            root,
            height: 0,
            interiors: FxHashMap::default(),
            estimated_leaves: 1,
            complete: false,
        };
        let mut number = root;
        loop {
            match db.page_kind(number)? {
                PageKind::TableLeaf => break,
                PageKind::TableInterior if map.height < MAX_DEPTH => {
                    let interior = map.interior(db, number)?;
                    let fan_out = interior.children.len() as u64 + 1;
                    number = interior.children.first().copied().unwrap_or(interior.right);
                    map.estimated_leaves = map.estimated_leaves.saturating_mul(fan_out);
                    map.height += 1;
                }
                _ => {
                    return Err(ReadError::Corrupt(format!(
                        "page {number}: not a table b-tree page"
                    )))
                }
            }
        }
        Ok(map)
    }

    /// Reads every interior page not read yet, a level at a time with the level advised first (a scan
    /// that is followed needs nearly all of them, and they are few: one per few hundred leaves).
    pub fn read_interiors<S: PageSource + ?Sized>(&mut self, db: &Database<S>) -> ReadResult<()> {
        if !self.complete && self.height > 0 {
            self.load_interiors(db)?;
            self.complete = true;
        }
        Ok(())
    }

    /// Reads every interior page, level by level down to the parents of the leaves.
    fn load_interiors<S: PageSource + ?Sized>(&mut self, db: &Database<S>) -> ReadResult<()> {
        let mut level = vec![self.root];
        for _ in 1..self.height {
            let mut next = Vec::new();
            db.will_need(&level);
            for number in level {
                let interior = self.interior(db, number)?;
                next.extend(interior.children.iter().copied().chain([interior.right]));
            }
            if next.len() > db.page_count() as usize {
                return Err(ReadError::Corrupt(
                    "table b-tree has more pages than the file".into(),
                ));
            }
            level = next;
        }
        db.will_need(&level);
        for number in level {
            self.interior(db, number)?;
        }
        Ok(())
    }

    fn interior<S: PageSource + ?Sized>(
        &mut self,
        db: &Database<S>,
        number: u32,
    ) -> ReadResult<&Interior> {
        Ok(match self.interiors.entry(number) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(parse_interior(db, number)?),
        })
    }

    /// The leaf page that holds `rowid` (or would hold it), reading interior pages not yet cached.
    pub fn leaf_for<S: PageSource + ?Sized>(
        &mut self,
        db: &Database<S>,
        rowid: i64,
    ) -> ReadResult<u32> {
        let mut number = self.root;
        for _ in 0..self.height {
            number = match self.interiors.get(&number) {
                Some(interior) => interior.child_for(rowid),
                None => self.interior(db, number)?.child_for(rowid),
            };
        }
        Ok(number)
    }

    /// Every leaf page of the table, reading the interior pages not read yet
    /// ([`TableMap::read_interiors`]).
    pub fn leaf_pages<S: PageSource + ?Sized>(&mut self, db: &Database<S>) -> ReadResult<Vec<u32>> {
        self.read_interiors(db)?;
        let mut level = vec![self.root];
        for _ in 0..self.height {
            let mut next = Vec::with_capacity(level.len());
            for number in level {
                let interior = self.interior(db, number)?;
                next.extend(interior.children.iter().copied().chain([interior.right]));
            }
            level = next;
        }
        Ok(level)
    }

    /// Leaves of the table, estimated from its left-most path: exact for a table of two levels whose
    /// first child is as full as the others, and within one child's share of the root otherwise as
    /// long as the left-most pages are about as full as the rest.
    pub fn estimated_leaves(&self) -> u64 {
        self.estimated_leaves
    }

    /// Whether `page` is one of the table's interior pages read so far.
    pub fn is_cached_interior(&self, page: u32) -> bool {
        self.interiors.contains_key(&page)
    }
}

/// Whether a `CREATE TABLE` statement's table options (after its last closing parenthesis) hold
/// `WITHOUT ROWID` (SQL "CREATE TABLE", table-options), in any case and spacing.
fn declares_without_rowid(sql: &[u8]) -> bool {
    let Some(close) = sql.iter().rposition(|&b| b == b')') else {
        return false;
    };
    let options = String::from_utf8_lossy(&sql[close + 1..]).to_ascii_uppercase();
    let words: Vec<&str> = options
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| w == ["WITHOUT", "ROWID"])
}

/// The left-most child of interior page `page` (its right child when it has no cell).
fn leftmost_child(page: &BtreePage<'_>) -> ReadResult<u32> {
    Ok(if page.cell_count() > 0 {
        page.left_child(0)?
    } else {
        page.right_child.unwrap_or(0)
    })
}

fn parse_interior<S: PageSource + ?Sized>(db: &Database<S>, number: u32) -> ReadResult<Interior> {
    let bytes = db.read_page(number)?;
    let page = BtreePage::parse(number, &bytes, db.header().usable_size)?;
    if page.kind != PageKind::TableInterior {
        return Err(ReadError::Corrupt(format!(
            "page {number}: expected a table interior page"
        )));
    }
    let cells = page.cell_count();
    let mut keys = Vec::with_capacity(cells);
    let mut children = Vec::with_capacity(cells);
    for cell in 0..cells {
        children.push(page.left_child(cell)?);
        keys.push(page.int_key(cell)?);
    }
    Ok(Interior {
        keys: keys.into_boxed_slice(),
        children: children.into_boxed_slice(),
        right: page.right_child.unwrap_or(0),
    })
}

//! The access list: the application's future reads, in order, with marks.
//!
//! Follows libprefetch (ATC 2009) section 4.2 and Figure 6. The application
//! hands over entries with `PF_SET` (replace the list), `PF_APPEND` (extend
//! it) or `PF_SET_FROM_MARK` (replace what follows the last marked entry the
//! application has passed). The list has a bounded capacity: once full, a
//! request accepts only a prefix of its entries and the short count tells the
//! application so.
//!
//! Entries are addressed by a *sequence number* that never goes backwards, so
//! positions held elsewhere (the current window, the last mark) stay valid
//! while consumed entries are dropped from the front.
//!
//! ```text
//!   first_seq        last_mark   position                     end_seq
//!      |  consumed ...   *  ...     |  future entries ...        |
//! ```
//!
//! Deviations: the paper does not say what happens to the current position
//! on `PF_SET_FROM_MARK`. Consumed entries are dropped (they would otherwise
//! fill the bounded list), so everything after the last mark that is still
//! stored is the unconsumed part: the new entries start at the current
//! position, and entries the application re-sends from its last mark are
//! skipped as it reads past them (`Planner` accepts reads further ahead in
//! the window). `PF_SET` and `PF_SET_FROM_MARK` therefore differ only in
//! intent, which the paper's callbacks express through the mark they get.

use std::collections::VecDeque;

/// A page of a file: the unit the planner reasons about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageKey {
    /// File descriptor (or any file identifier chosen by the caller).
    pub fd: i32,
    /// Page index within the file (byte offset / page size).
    pub page: u64,
}

/// One access-list entry: a page the application will read, maybe marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The page to be read.
    pub key: PageKey,
    /// A landmark the application wants reported back (section 4.1).
    pub mark: bool,
}

/// How `AccessList::request` combines new entries with the list
/// (the paper's `PF_*` values; `PF_DONE` may be or-ed with any of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Mode(u32);

impl Mode {
    /// `PF_APPEND`: add the entries after the current list.
    pub const APPEND: Mode = Mode(1);
    /// `PF_SET`: replace the whole list; the new list starts at the current position.
    pub const SET: Mode = Mode(2);
    /// `PF_SET_FROM_MARK`: replace the part of the list after the last passed mark.
    pub const SET_FROM_MARK: Mode = Mode(4);
    /// `PF_DONE`: the application has finished updating the list.
    pub const DONE: Mode = Mode(8);
    /// `PF_WHOLE_LIST`: the application will read the whole list it gives,
    /// so the window starts at the paper's 90% of memory instead of small
    /// (an abandoned list is the reason a window starts small).
    pub const WHOLE_LIST: Mode = Mode(16);
    /// `PF_SHARED_EDGES`: the pages the list's reads begin or end inside are
    /// on other processes' lists too (records packed back to back and shared
    /// out among workers), so once read they are left to the kernel rather
    /// than dropped ([`crate::evict::partly_read`]).
    pub const SHARED_EDGES: Mode = Mode(32);

    /// Mode from the paper's integer flags; `None` if unknown bits are set or
    /// more than one of APPEND / SET / SET_FROM_MARK is given.
    pub fn from_bits(bits: u32) -> Option<Mode> {
        if bits & !0x3f != 0 || (bits & 0x7).count_ones() > 1 {
            return None;
        }
        Some(Mode(bits))
    }

    /// The raw `PF_*` bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// `self` with the bits of `other` cleared.
    pub fn without(self, other: Mode) -> Mode {
        Mode(self.0 & !other.0)
    }

    /// True if every bit of `other` is set in `self`.
    pub fn contains(self, other: Mode) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Mode {
    type Output = Mode;
    fn bitor(self, rhs: Mode) -> Mode {
        Mode(self.0 | rhs.0)
    }
}

/// An entry as the list stores it: 12 bytes rather than an `Entry`'s 24
/// (the list is the bulk of the planner's memory when it is several
/// budgets long). The page is kept as two halves so that the entry is
/// aligned to 4 bytes, and the mark in the top bit of the descriptor.
/// Descriptors are kept between `-2^30` and `2^30` (Linux's are below
/// `2^30`); one outside is stored as `-2^30`, never a real descriptor.
#[derive(Clone, Copy, Debug)]
struct Stored {
    page: [u32; 2],
    fd_and_mark: u32,
}

const MARK_BIT: u32 = 1 << 31;

/// What a descriptor outside the stored range reads back as.
const FD_OUT_OF_RANGE: i32 = -(1 << 30);

impl From<&Entry> for Stored {
    fn from(entry: &Entry) -> Stored {
        let fd = Some(entry.key.fd)
            .filter(|fd| (FD_OUT_OF_RANGE..-FD_OUT_OF_RANGE).contains(fd))
            .unwrap_or(FD_OUT_OF_RANGE);
        let page = entry.key.page;
        Stored {
            page: [page as u32, (page >> 32) as u32],
            fd_and_mark: (fd as u32 & !MARK_BIT) | if entry.mark { MARK_BIT } else { 0 },
        }
    }
}

impl From<&Stored> for Entry {
    fn from(stored: &Stored) -> Entry {
        // Bit 30 is the descriptor's sign: copied into bit 31.
        let fd = ((stored.fd_and_mark << 1) as i32) >> 1;
        Entry {
            key: PageKey {
                fd,
                page: u64::from(stored.page[0]) | (u64::from(stored.page[1]) << 32),
            },
            mark: stored.fd_and_mark & MARK_BIT != 0,
        }
    }
}

/// The bounded access list with the application's current position.
#[derive(Debug)]
pub struct AccessList {
    entries: VecDeque<Stored>,
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    /// Sequence number of the next entry the application is expected to read.
    position: u64,
    /// Consumed entries from this one on are kept (a window indexes them
    /// and reads their pages back); `u64::MAX` when nothing does.
    kept_from: u64,
    /// Sequence number of the last marked entry the application has passed.
    last_mark_seq: Option<u64>,
    /// The last marked entry passed (kept for the callback even after the
    /// entry itself has been dropped or the list replaced).
    last_mark: Option<PageKey>,
    capacity: usize,
}

impl AccessList {
    /// An empty list holding at most `capacity` entries.
    pub fn with_capacity(capacity: usize) -> AccessList {
        AccessList {
            entries: VecDeque::new(),
            first_seq: 0,
            position: 0,
            kept_from: u64::MAX,
            last_mark_seq: None,
            last_mark: None,
            capacity,
        }
    }

    /// Maximum number of entries not yet consumed the list holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Changes the capacity; entries already on the list stay (a lower
    /// capacity only refuses further entries).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// Applies a request; returns how many of `new` were accepted (fewer than
    /// `new.len()` when the list is full). `mode` must hold at most one of
    /// APPEND / SET / SET_FROM_MARK; with none of them it only appends.
    pub fn request(&mut self, new: &[Entry], mode: Mode) -> usize {
        self.drop_consumed();
        if mode.contains(Mode::SET) {
            self.replace_from(self.position);
        } else if mode.contains(Mode::SET_FROM_MARK) {
            let cut = match self.last_mark_seq {
                Some(mark) => (mark + 1).max(self.position),
                None => self.position,
            };
            self.position = cut;
            self.replace_from(cut);
        }
        let room = self.capacity.saturating_sub(self.remaining() as usize);
        let accepted = new.len().min(room);
        reserve_within(&mut self.entries, accepted, self.capacity);
        self.entries
            .extend(new[..accepted].iter().map(Stored::from));
        accepted
    }

    /// Drops every entry from `seq` on (`seq` >= first stored entry).
    fn replace_from(&mut self, seq: u64) {
        let keep = seq.saturating_sub(self.first_seq) as usize;
        self.entries.truncate(keep);
        if self.end_seq() < self.position {
            self.position = self.end_seq();
        }
    }

    /// Forgets consumed entries, except those kept for a window
    /// ([`AccessList::keep_from`]). The last mark is kept as a sequence
    /// number, which is all that `PF_SET_FROM_MARK` needs.
    fn drop_consumed(&mut self) {
        let until = self.position.min(self.kept_from).max(self.first_seq);
        self.entries.drain(..(until - self.first_seq) as usize);
        self.first_seq = until;
    }

    /// Keeps the consumed entries from `seq` on until the next call: a
    /// window indexes them. They do not count against the capacity,
    /// which bounds the entries not yet consumed.
    pub fn keep_from(&mut self, seq: u64) {
        self.kept_from = seq;
    }

    /// Sequence number one past the last entry.
    pub fn end_seq(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    /// Sequence number of the next expected read.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Entries not yet consumed.
    pub fn remaining(&self) -> u64 {
        self.end_seq() - self.position
    }

    /// Entries stored (consumed ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry with sequence number `seq`, if stored.
    pub fn get(&self, seq: u64) -> Option<Entry> {
        let index = seq.checked_sub(self.first_seq)?;
        self.entries
            .get(usize::try_from(index).ok()?)
            .map(Entry::from)
    }

    /// The last marked page the application has passed, if any.
    pub fn last_mark(&self) -> Option<PageKey> {
        self.last_mark
    }

    /// Records that the application has read the entry `seq` (and so passed
    /// every entry before it): the position moves to `seq + 1` and the last
    /// marked entry at or before `seq` becomes the last mark.
    pub fn consume_through(&mut self, seq: u64) {
        if seq < self.position || seq >= self.end_seq() {
            return;
        }
        for s in (self.position..=seq).rev() {
            if let Some(entry) = self.get(s).filter(|e| e.mark) {
                self.last_mark_seq = Some(s);
                self.last_mark = Some(entry.key);
                break;
            }
        }
        self.position = seq + 1;
    }

    /// Consumes the entry at the position if it is `key` (as
    /// [`AccessList::consume_through`] of the position would); true if it was.
    pub fn consume_next(&mut self, key: PageKey) -> bool {
        let seq = self.position;
        let Some(entry) = self.get(seq).filter(|e| e.key == key) else {
            return false;
        };
        if entry.mark {
            self.last_mark_seq = Some(seq);
            self.last_mark = Some(key);
        }
        self.position = seq + 1;
        true
    }

    /// Iterates `(seq, entry)` from `from` to the end.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = (u64, Entry)> + '_ {
        let skip = from.saturating_sub(self.first_seq) as usize;
        self.entries
            .iter()
            .enumerate()
            .skip(skip)
            .map(move |(i, e)| (self.first_seq + i as u64, Entry::from(e)))
    }

    /// How many entries from `seq` on (at most `most`) continue a run of
    /// adjacent pages after `after`: each the page after the entry before,
    /// in the same file. 0 when `seq` is not on the list.
    pub fn adjacent_after(&self, seq: u64, after: PageKey, most: u64) -> u64 {
        let Some(index) = seq
            .checked_sub(self.first_seq)
            .and_then(|index| usize::try_from(index).ok())
            .filter(|&index| index < self.entries.len())
        else {
            return 0;
        };
        let most = usize::try_from(most).unwrap_or(usize::MAX);
        let mut next = after;
        let mut count = 0;
        for stored in self.entries.range(index..).take(most) {
            let key = Entry::from(stored).key;
            if key.fd != next.fd || key.page != next.page.wrapping_add(1) {
                break;
            }
            next = key;
            count += 1;
        }
        count
    }
}

/// Makes room in `deque` for `additional` more, doubling its capacity as
/// a push would but never beyond `limit`, the most it will hold: a full
/// list (or a window over all of it) then takes its size, not up to twice
/// that.
pub(crate) fn reserve_within<T>(deque: &mut VecDeque<T>, additional: usize, limit: usize) {
    let needed = deque.len().saturating_add(additional);
    if needed <= deque.capacity() {
        return;
    }
    let doubled = deque.capacity().saturating_mul(2).min(limit);
    deque.reserve_exact(doubled.max(needed) - deque.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(page: u64, mark: bool) -> Entry {
        Entry {
            key: PageKey { fd: 3, page },
            mark,
        }
    }

    /// Pages 5 6 7 7 8 20 21 of fd 3, then page 22 of fd 4: the run after
    /// page 4 is 5 6 7 (the repeat of 7 ends it), the one after 20 is 21
    /// (fd 4's page 22 is another file's), and `most` and the list's end
    /// bound the count.
    #[test]
    fn adjacent_after_counts_the_run_of_next_pages() {
        let mut list = AccessList::with_capacity(16);
        let mut batch: Vec<Entry> = [5, 6, 7, 7, 8, 20, 21].map(|p| entry(p, false)).to_vec();
        batch.push(Entry {
            key: PageKey { fd: 4, page: 22 },
            mark: false,
        });
        list.request(&batch, Mode::SET);
        let key = |page| PageKey { fd: 3, page };
        assert_eq!(list.adjacent_after(0, key(4), 100), 3);
        assert_eq!(list.adjacent_after(0, key(4), 2), 2);
        assert_eq!(list.adjacent_after(0, key(5), 100), 0);
        assert_eq!(list.adjacent_after(6, key(20), 100), 1);
        assert_eq!(list.adjacent_after(8, key(21), 100), 0, "past the end");
    }

    #[test]
    fn full_list_gives_short_count() {
        let mut list = AccessList::with_capacity(3);
        let batch: Vec<Entry> = (0..5).map(|p| entry(p, false)).collect();
        assert_eq!(list.request(&batch, Mode::SET), 3);
        assert_eq!(list.request(&batch, Mode::APPEND), 0);
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn consumed_entries_free_capacity() {
        let mut list = AccessList::with_capacity(3);
        let batch: Vec<Entry> = (0..3).map(|p| entry(p, false)).collect();
        list.request(&batch, Mode::SET);
        list.consume_through(1);
        assert_eq!(
            list.request(&[entry(9, false), entry(10, false)], Mode::APPEND),
            2
        );
        assert_eq!(list.remaining(), 3);
    }

    #[test]
    fn set_from_mark_replaces_after_last_passed_mark() {
        let mut list = AccessList::with_capacity(100);
        let batch = [
            entry(0, true),
            entry(1, false),
            entry(2, true),
            entry(3, false),
            entry(4, false),
        ];
        list.request(&batch, Mode::SET);
        list.consume_through(3);
        assert_eq!(list.last_mark(), Some(PageKey { fd: 3, page: 2 }));
        list.request(&[entry(3, false), entry(7, false)], Mode::SET_FROM_MARK);
        let rest: Vec<u64> = list
            .iter_from(list.position())
            .map(|(_, e)| e.key.page)
            .collect();
        assert_eq!(rest, vec![3, 7]);
    }

    #[test]
    fn set_starts_new_list_at_position() {
        let mut list = AccessList::with_capacity(100);
        list.request(&[entry(0, true), entry(1, false)], Mode::SET);
        list.consume_through(0);
        list.request(&[entry(5, false)], Mode::SET);
        assert_eq!(list.get(list.position()).map(|e| e.key.page), Some(5));
        assert_eq!(list.remaining(), 1);
        assert_eq!(list.last_mark(), Some(PageKey { fd: 3, page: 0 }));
    }

    #[test]
    fn mark_skipped_over_still_counts_as_passed() {
        let mut list = AccessList::with_capacity(100);
        list.request(
            &[entry(0, false), entry(1, true), entry(2, false)],
            Mode::SET,
        );
        list.consume_through(2);
        assert_eq!(list.last_mark(), Some(PageKey { fd: 3, page: 1 }));
    }

    #[test]
    fn an_entry_is_stored_in_twelve_bytes_and_read_back_whole() {
        assert_eq!(std::mem::size_of::<Stored>(), 12);
        for fd in [0, 3, -1, (1 << 30) - 1, -(1 << 30)] {
            for page in [0, 7, u64::MAX, 1 << 40] {
                for mark in [false, true] {
                    let entry = Entry {
                        key: PageKey { fd, page },
                        mark,
                    };
                    assert_eq!(Entry::from(&Stored::from(&entry)), entry);
                }
            }
        }
        for fd in [i32::MIN, i32::MIN + 3, 1 << 30, i32::MAX] {
            let entry = Entry {
                key: PageKey { fd, page: 1 },
                mark: true,
            };
            let back = Entry::from(&Stored::from(&entry));
            assert_eq!(
                (back.key.fd, back.key.page, back.mark),
                (FD_OUT_OF_RANGE, 1, true)
            );
        }
    }

    #[test]
    fn mode_rejects_conflicting_flags() {
        assert!(Mode::from_bits(1 | 2).is_none());
        assert!(Mode::from_bits(64).is_none());
        assert_eq!(Mode::from_bits(2 | 16), Some(Mode::SET | Mode::WHOLE_LIST));
        assert_eq!(
            Mode::from_bits(1 | 32),
            Some(Mode::APPEND | Mode::SHARED_EDGES)
        );
        assert_eq!(Mode::from_bits(2 | 8), Some(Mode::SET | Mode::DONE));
    }
}

//! The readers of one access list: where each thread of a program that
//! reads one list from several threads has got to, and so where the
//! window must start ([`Readers::floor`]): at the slowest reader still
//! reading, not at the list's position, which the fastest one moves.
//!
//! The problem: a program whose threads take the next item from one queue
//! (`git grep`'s workers, a pool of loaders) reads one recorded order
//! from several places at once. The list's position follows the reader
//! furthest ahead (a read later in the window is consumed, libprefetch ATC
//! 2009 section 4.1); the window then slid from there, and the pages a
//! slower thread had taken but not yet read left it and were dropped as
//! unneeded (Cao et al., SIGMETRICS 1995, section 2.2 rule 2), to be read
//! again one page a request when that thread got to them.
//!
//! ```text
//!   list      ... a a a b b c c c d d e e e ...
//!   readers         ^slow      ^fast
//!   window          [== kept: slow's next pages ==|== ahead ==)
//!                   floor                position
//! ```
//!
//! Each reader's place is one past the last entry it read. A reader whose
//! read moved the position holds the position (its further pages move it
//! too); a reader that read behind the position holds that entry's place.
//! A reader more than half a window behind the position (`lag`) is
//! forgotten: a thread that stopped reading the list (it finished, or read
//! once at start-up) must not hold the window, and half of it stays for
//! the pages ahead. The floor never goes back (the entries before it may
//! be gone), and a replaced list puts every reader at its start.
//!
//! With one reader the floor is the position: a single-threaded program
//! and the simulator's streams plan as before.
//!
//! Deviations: the paper's list has one reader.

/// A read told on the program's behalf by none of its threads (a
/// recording's reads made before the replay was ready, the pages a
/// program faults in): it moves the position but is no reader's. The
/// planner's only reader, too, when its caller names none.
pub const NO_READER: u64 = 0;

/// At most this many readers are remembered; a new one then takes the
/// place of the one furthest behind.
const MAX_READERS: usize = 64;

/// The readers of one list and their places.
#[derive(Debug, Default)]
pub(crate) struct Readers {
    /// (reader, one past the last entry it read), unordered.
    places: Vec<(u64, u64)>,
    /// The reader whose read last moved the position: its place is the
    /// position until another reader reads.
    leading: Option<u64>,
    /// The last floor computed; the floor never goes back.
    floor: u64,
}

impl Readers {
    /// `reader`'s read moved the list's position to `position`.
    pub(crate) fn moved(&mut self, reader: u64, position: u64) {
        self.settle(position);
        self.leading = None;
        if reader != NO_READER {
            self.set(reader, position);
            self.leading = Some(reader);
        }
    }

    /// `reader` read entry `seq`, behind the list's position `position`
    /// (`None`: a page the list does not place there, which moves no place).
    pub(crate) fn read_behind(&mut self, reader: u64, seq: Option<u64>, position: u64) {
        self.settle(position);
        self.leading = None;
        if let (Some(seq), false) = (seq, reader == NO_READER) {
            self.set(reader, seq + 1);
        }
    }

    /// Where `reader` is (one past the last entry it read), if known.
    pub(crate) fn place(&self, reader: u64) -> Option<u64> {
        self.places
            .iter()
            .find(|&&(r, _)| r == reader)
            .map(|&(_, place)| place)
    }

    /// True if two readers or more are at most `lag` entries behind
    /// `position`.
    pub(crate) fn several(&self, position: u64, lag: u64) -> bool {
        let recent = self.places.iter().filter(|&&(reader, place)| {
            self.leading == Some(reader) || place.saturating_add(lag) >= position
        });
        recent.count() >= 2
    }

    /// The floor last computed by [`Readers::floor`].
    pub(crate) fn last_floor(&self) -> u64 {
        self.floor
    }

    /// The list was replaced at `position`: every reader starts there
    /// (the readers stay known: a restart does not make a program's
    /// threads one).
    pub(crate) fn restart(&mut self, position: u64) {
        for (_, place) in &mut self.places {
            *place = position;
        }
        self.leading = None;
        self.floor = position;
    }

    /// Where the window starts: the place of the slowest reader at most
    /// `lag` entries behind `position` (the others are forgotten), or
    /// `position` with fewer than two readers; never before the last floor.
    pub(crate) fn floor(&mut self, position: u64, lag: u64) -> u64 {
        self.settle(position);
        self.places
            .retain(|&(_, place)| place.saturating_add(lag) >= position);
        let slowest = match self.places.len() {
            0 | 1 => position,
            _ => self
                .places
                .iter()
                .map(|&(_, place)| place)
                .min()
                .unwrap_or(position),
        };
        self.floor = slowest.max(self.floor).min(position);
        self.floor
    }

    /// The leading reader's place is the position (its further pages,
    /// consumed as next entries, moved it too).
    fn settle(&mut self, position: u64) {
        if let Some(reader) = self.leading {
            self.set(reader, position);
        }
    }

    fn set(&mut self, reader: u64, place: u64) {
        if let Some(slot) = self.places.iter_mut().find(|(r, _)| *r == reader) {
            slot.1 = slot.1.max(place);
            return;
        }
        if self.places.len() == MAX_READERS {
            let slowest = (0..self.places.len()).min_by_key(|&i| self.places[i].1);
            if let Some(i) = slowest {
                self.places.swap_remove(i);
            }
        }
        self.places.push((reader, place));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_the_slowest_recent_reader_and_never_goes_back() {
        let mut readers = Readers::default();
        readers.moved(1, 10);
        readers.read_behind(2, Some(5), 10);
        assert_eq!(readers.floor(10, 8), 6);
        readers.moved(1, 13);
        assert_eq!(readers.floor(13, 8), 6);
        readers.read_behind(2, Some(8), 13);
        assert_eq!(readers.floor(13, 8), 9);
        readers.moved(1, 20);
        assert_eq!(readers.floor(20, 8), 20, "reader 2 is 11 behind: forgotten");
        readers.read_behind(2, Some(15), 20);
        assert_eq!(readers.floor(20, 8), 20, "the floor never goes back");
        readers.restart(25);
        assert_eq!(readers.place(2), Some(25));
        assert!(readers.several(25, 8), "both stay known");
        assert_eq!(readers.floor(25, 8), 25);
    }

    #[test]
    fn reads_by_no_reader_hold_no_place() {
        let mut readers = Readers::default();
        readers.read_behind(NO_READER, Some(2), 10);
        readers.moved(1, 11);
        readers.moved(NO_READER, 12);
        assert_eq!(readers.place(NO_READER), None);
        assert!(!readers.several(12, 8));
        assert_eq!(readers.floor(12, 8), 12);
    }

    #[test]
    fn one_reader_reading_behind_leaves_the_floor_at_the_position() {
        let mut readers = Readers::default();
        readers.moved(1, 10);
        readers.read_behind(1, Some(3), 10);
        assert_eq!(readers.floor(10, 8), 10);
    }
}

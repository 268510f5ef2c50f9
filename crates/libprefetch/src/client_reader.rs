//! Which reader of a list a tracked read is (libprefetch, ATC 2009, section
//! 4.5: following the application's progress through its reads): the
//! calling thread, so that threads reading one list at their own places
//! (`plan`'s `readers`) keep each other's pages.

use std::cell::Cell;

/// The calling thread, as the planner's reader of a list (`plan`'s
/// `readers`: threads reading one list at their own places): the address
/// of a thread-local, unique among the live threads and read with no
/// system call.
pub(super) fn this_thread() -> u64 {
    thread_local! {
        static READER: u8 = const { 0 };
    }
    if ON_BEHALF.try_with(Cell::get).unwrap_or(false) {
        return plan::readers::NO_READER;
    }
    READER
        .try_with(|reader| std::ptr::from_ref(reader) as u64)
        .unwrap_or(plan::readers::NO_READER)
}

thread_local! {
    static ON_BEHALF: Cell<bool> = const { Cell::new(false) };
}

/// The calling thread tells reads on the program's behalf (the replay's
/// thread: reads remembered before it was ready, pages faulted in): they
/// move the list but are no reader's place.
pub(crate) fn reads_on_behalf() {
    let _ = ON_BEHALF.try_with(|flag| flag.set(true));
}

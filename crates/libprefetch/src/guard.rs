//! Re-entrancy guard and errno preservation for code that runs inside an
//! application's read call.
//!
//! The library runs inside the application's `read`: its own I/O (the
//! residency probe, `/proc` reads, advice calls) and the application's
//! callback must not be tracked again, and whatever errno those calls leave
//! must not reach the application. Nor may a pthread_cancel() land inside
//! the library's own cancellation points (a /proc read, a callback's read):
//! glibc cancels by unwinding, which catch_unwind would swallow and abort
//! the process; cancellation is held off until the application's own read.

use std::cell::Cell;

thread_local! {
    static INSIDE_LIBRARY: Cell<bool> = const { Cell::new(false) };
}

/// Held while this thread runs library code; reads it makes meanwhile
/// (including the application's callback) are not tracked.
pub struct Reentry(());

impl Reentry {
    /// Enters the library, or `None` if this thread is already inside it
    /// (or its thread-local storage is being torn down).
    ///
    /// The guard is built only on entry (`then`, not `then_some`): a guard
    /// built and dropped by a nested, refused entry would clear the flag of
    /// the outer one, and the library's next own read would be tracked.
    pub fn enter() -> Option<Reentry> {
        INSIDE_LIBRARY
            .try_with(|inside| (!inside.replace(true)).then(|| Reentry(())))
            .ok()
            .flatten()
    }

    /// True if this thread is inside the library (e.g. in a callback).
    pub fn is_inside() -> bool {
        INSIDE_LIBRARY.try_with(Cell::get).unwrap_or(true)
    }
}

impl Drop for Reentry {
    fn drop(&mut self) {
        let _ = INSIDE_LIBRARY.try_with(|inside| inside.set(false));
    }
}

/// Saves errno on creation and restores it on drop.
pub struct ErrnoGuard(i32);

impl ErrnoGuard {
    /// Remembers the current errno.
    pub fn save() -> ErrnoGuard {
        // SAFETY: __errno_location always returns this thread's errno slot.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Drop for ErrnoGuard {
    fn drop(&mut self) {
        // SAFETY: as above; writing the saved value back.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

extern "C" {
    // Not bound by the libc crate for linux-gnu; glibc's signature.
    fn pthread_setcancelstate(state: libc::c_int, oldstate: *mut libc::c_int) -> libc::c_int;
}

/// glibc's PTHREAD_CANCEL_DISABLE.
const PTHREAD_CANCEL_DISABLE: libc::c_int = 1;

/// Disables thread cancellation until dropped (then restores the previous
/// state; a pending cancel then acts at the caller's next cancellation point).
pub struct CancelGuard(libc::c_int);

impl CancelGuard {
    /// Holds cancellation off.
    pub fn hold() -> CancelGuard {
        let mut previous = 0;
        // SAFETY: valid state constant and a live out-pointer.
        unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut previous) };
        CancelGuard(previous)
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let mut ignored = 0;
        // SAFETY: restores the state saved by hold().
        unsafe { pthread_setcancelstate(self.0, &mut ignored) };
    }
}

/// Runs `work` as the library's own work inside an interposed call: not
/// when the library is already inside (re-entry), with the application's
/// errno kept, cancellation held off, and a panic stopped at the boundary.
pub fn as_library(work: impl FnOnce()) {
    let Some(_inside) = Reentry::enter() else {
        return;
    };
    let _errno = ErrnoGuard::save();
    let _no_cancel = CancelGuard::hold();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_nested_entry_keeps_the_outer_one() {
        let outer = Reentry::enter().expect("first entry");
        assert!(Reentry::enter().is_none(), "nested entry must be refused");
        assert!(Reentry::is_inside(), "a refused entry cleared the flag");
        assert!(Reentry::enter().is_none(), "second nested entry let in");
        drop(outer);
        assert!(!Reentry::is_inside());
        assert!(Reentry::enter().is_some());
    }
}

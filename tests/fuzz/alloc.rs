//! A global allocator that records the largest single allocation of the current thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

struct Recording;

// SAFETY: every call is forwarded to `System` unchanged; the thread-local `Cell` is only
// read and written (no allocation: it is const-initialised), and `try_with` does nothing
// while the thread is torn down.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` and `layout` are the caller's, from `System`; `new_size` per contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static RECORDING: Recording = Recording;

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

/// Starts recording anew on this thread.
pub fn reset() {
    let _ = LARGEST.try_with(|l| l.set(0));
}

/// The largest allocation on this thread since [`reset`], in bytes.
pub fn largest() -> usize {
    LARGEST.try_with(Cell::get).unwrap_or(0)
}

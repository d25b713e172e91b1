//! [`keep_freed_memory`]: an opt-in allocator setting for training loops and benchmarks.

/// Asks the C allocator (glibc) to keep freed memory instead of returning it to the OS.
///
/// Tensor ops allocate and free megabyte-sized buffers every step. By default glibc serves
/// buffers above a (dynamic) threshold with fresh `mmap`s and trims the heap when its top is
/// free, so the next step touches new pages and pays a page fault per 4 KiB; inside a virtual
/// machine that cost dominates small ops (measured: the first MNIST convolution, forward and
/// backward, 7–9 ms by default against 1.5–2 ms with this setting). This raises the `mmap`
/// and trim thresholds to 1 GiB, so freed buffers are reused, and turns off glibc's fastbins
/// (small freed chunks that every larger request first consolidates: about 7% of the time of
/// the RNN step of `benches/steps.rs`, which makes many small tensors; small chunks still go
/// through glibc's per-thread cache). Measured: RNN step 578 → 556 µs, MLP and CNN unchanged.
///
/// The setting is process-wide, which is why the backend never applies it on its own: call it
/// once at the start of a training program or benchmark. Returns whether it took effect
/// (always `false` off Linux/glibc).
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const GIB: libc::c_int = 1 << 30;
        // SAFETY: `mallopt` only changes allocator parameters; any value is valid.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, GIB) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, GIB) == 1
                && libc::mallopt(libc::M_MXFAST, 0) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

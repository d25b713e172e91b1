//! How a convolution spreads its batch over the threads, on either path.

/// How a batch is spread: `(images per range, serial GEMMs)`. With at least as many images
/// as threads, one contiguous range per thread whose GEMMs run serially; with fewer, the
/// whole batch as one range whose GEMMs are split across the threads
/// ([`gemm_parallel`](crate::ops::gemm::gemm_parallel)).
pub(super) fn split(batch: usize) -> (usize, bool) {
    let threads = rayon::current_num_threads();
    if batch >= threads {
        (batch.div_ceil(threads), true)
    } else {
        (batch.max(1), false)
    }
}

//! Every kernel file, as its op family declares it (`ops/*.rs`, each beside the launches of its
//! kernels), and what needs all of them: opening a device ([`CudaDevice::new`] compiles and
//! loads them all) and compiling them for one architecture ([`compile_kernels`], which CI runs
//! without a GPU).

use crate::compile::{CompiledKernels, Module, compile};
use crate::device::CudaDevice;
use crate::error::CudaError;
use crate::ops::{conv, elementwise, index, layout, random, reduce, update};

/// The kernel files, in the order they are compiled and reported: one per op family with
/// kernels of its own (matrix products run on cuBLAS, pooling on `conv.cu`'s kernels).
const ALL: [&Module; 7] = [
    &elementwise::KERNELS,
    &reduce::KERNELS,
    &layout::KERNELS,
    &index::KERNELS,
    &conv::KERNELS,
    &random::KERNELS,
    &update::KERNELS,
];

impl CudaDevice {
    /// Opens GPU `ordinal` (0 is the first): loads the driver, cuBLAS and NVRTC, creates the
    /// stream and the cuBLAS handle, and compiles the kernels for the device's architecture
    /// (once per process, in parallel). Opening an opened device returns it again.
    ///
    /// # Errors
    /// [`CudaError::NoDriver`] on a machine without the NVIDIA driver,
    /// [`CudaError::MissingLibrary`] without cuBLAS or NVRTC on the library path,
    /// [`CudaError::NoSuchDevice`] for an ordinal past the last GPU, and driver, cuBLAS or
    /// NVRTC failures.
    pub fn new(ordinal: usize) -> Result<CudaDevice, CudaError> {
        CudaDevice::open(ordinal, &ALL)
    }
}

/// Compiles every kernel file for `arch` (e.g. `"sm_90"`); needs NVRTC but no GPU.
///
/// # Errors
/// [`CudaError::MissingLibrary`] without NVRTC, [`CudaError::Compile`] with NVRTC's log when a
/// file does not compile.
pub fn compile_kernels(arch: &str) -> Result<Vec<CompiledKernels>, CudaError> {
    ALL.iter().map(|&m| compile(m, arch)).collect()
}

#[cfg(test)]
mod tests {
    use super::ALL;
    use crate::launch::STRIDED;

    /// Every kernel file is listed once, and asserts the layout of the strided-index map its
    /// header `common.cuh` defines, first (as before each op declared its own file).
    #[test]
    fn every_kernel_file_is_listed_once_and_checks_the_strided_map() {
        let mut files: Vec<_> = ALL.iter().map(|m| m.file).collect();
        files.sort_unstable();
        files.dedup();
        assert_eq!(files.len(), ALL.len());
        for module in ALL {
            let first = module.mirrors.first().map(|m| m.name);
            assert_eq!(first, Some(STRIDED.name), "kernels/{}", module.file);
        }
    }
}

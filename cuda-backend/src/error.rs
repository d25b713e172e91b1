//! [`CudaError`]: why a CUDA device could not be opened or a kernel could not be built.

use cudarc::cublas::result::CublasError;
use cudarc::driver::DriverError;

/// Why [`CudaDevice::new`](crate::CudaDevice::new) or [`compile_kernels`](crate::compile_kernels)
/// failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    /// The CUDA driver library could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA device: libcuda.so not found (is the NVIDIA driver installed?)")]
    NoDriver,
    /// A shared library other than the driver (cuBLAS, NVRTC) could not be loaded.
    #[error(
        "no CUDA device: {0} not found (put the folder holding it on LD_LIBRARY_PATH, e.g. the \
         `nvidia/*/lib` folders of a Python environment with PyTorch for CUDA 13)"
    )]
    MissingLibrary(&'static str),
    /// The driver loaded but has no device of this ordinal.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s)")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver sees.
        count: usize,
    },
    /// A driver call failed.
    #[error("CUDA driver error while {context}: {source}")]
    Driver {
        /// What was being done.
        context: &'static str,
        /// The driver's error.
        source: DriverError,
    },
    /// A cuBLAS call failed.
    #[error("cuBLAS error while {context}: {source}")]
    Blas {
        /// What was being done.
        context: &'static str,
        /// cuBLAS's error.
        source: CublasError,
    },
    /// NVRTC rejected a kernel file.
    #[error("NVRTC could not compile kernels/{file} for {arch}:\n{log}")]
    Compile {
        /// The kernel file.
        file: &'static str,
        /// The target architecture (`sm_90`).
        arch: String,
        /// NVRTC's log.
        log: String,
    },
}

impl CudaError {
    pub(crate) fn driver(context: &'static str) -> impl FnOnce(DriverError) -> CudaError {
        move |source| CudaError::Driver { context, source }
    }
}

//! [`CudaStorage`]: a device buffer of one run-time dtype, and the element types.

use crate::CudaDevice;
use adjoint_backend::DType;
use cudarc::cublas::result::CublasError;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, DriverError, ValidAsZeroBits,
};
use std::fmt;
use std::sync::Arc;

/// A contiguous device buffer of elements of one [`DType`], on one [`CudaDevice`]. Dropping it
/// returns the memory to the device's pool in stream order.
pub struct CudaStorage {
    pub(crate) device: CudaDevice,
    pub(crate) buf: Buffer,
    /// The largest id of a `u32` buffer uploaded from the host, taken from the host copy
    /// during the upload, so that validating ids (labels of a batch) needs no device round
    /// trip. `None` for buffers computed on the device.
    pub(crate) uploaded_max: Option<u32>,
}

/// The typed buffer inside a [`CudaStorage`].
pub(crate) enum Buffer {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    U32(CudaSlice<u32>),
}

impl CudaStorage {
    pub(crate) fn new(device: CudaDevice, buf: Buffer) -> CudaStorage {
        CudaStorage {
            device,
            buf,
            uploaded_max: None,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self.buf {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::U32(_) => DType::U32,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match &self.buf {
            Buffer::F32(s) => s.len(),
            Buffer::F64(s) => s.len(),
            Buffer::U32(s) => s.len(),
        }
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `u32` buffer of ids.
    ///
    /// # Panics
    /// If the buffer holds floats: `op` takes ids.
    pub(crate) fn ids(&self, op: &str) -> &CudaSlice<u32> {
        match &self.buf {
            Buffer::U32(s) => s,
            _ => panic!("{op}: ids must be u32, got {:?}", self.dtype()),
        }
    }
}

impl fmt::Debug for CudaStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CudaStorage({:?} x {} on {:?})",
            self.dtype(),
            self.len(),
            self.device
        )
    }
}

/// An element type of device buffers.
pub(crate) trait Element:
    DeviceRepr + ValidAsZeroBits + Copy + Default + Unpin + 'static
{
    /// The suffix of this type's kernels (`f32`, `f64`, `u32`).
    const SUFFIX: &'static str;
    fn wrap(slice: CudaSlice<Self>) -> Buffer;
    /// The typed slice of `buf`, if it holds this type.
    fn slice(buf: &Buffer) -> Option<&CudaSlice<Self>>;
    /// The typed mutable slice of `buf`, if it holds this type.
    fn slice_mut(buf: &mut Buffer) -> Option<&mut CudaSlice<Self>>;
}

macro_rules! element_impl {
    ($t:ty, $variant:ident, $suffix:literal) => {
        impl Element for $t {
            const SUFFIX: &'static str = $suffix;
            fn wrap(slice: CudaSlice<$t>) -> Buffer {
                Buffer::$variant(slice)
            }
            fn slice(buf: &Buffer) -> Option<&CudaSlice<$t>> {
                match buf {
                    Buffer::$variant(s) => Some(s),
                    _ => None,
                }
            }
            fn slice_mut(buf: &mut Buffer) -> Option<&mut CudaSlice<$t>> {
                match buf {
                    Buffer::$variant(s) => Some(s),
                    _ => None,
                }
            }
        }
    };
}
element_impl!(f32, F32, "f32");
element_impl!(f64, F64, "f64");
element_impl!(u32, U32, "u32");

/// A float element type: cuBLAS has its GEMM.
pub(crate) trait Float: Element {
    fn from_f64(v: f64) -> Self;

    /// cuBLAS's GEMM for this type.
    ///
    /// # Safety
    /// The configuration must describe matrices inside the given buffers.
    unsafe fn gemm(
        blas: &CudaBlas,
        cfg: GemmConfig<Self>,
        a: &CudaView<'_, Self>,
        b: &CudaView<'_, Self>,
        c: &mut CudaViewMut<'_, Self>,
    ) -> Result<(), CublasError>;

    /// cuBLAS's strided batched GEMM for this type.
    ///
    /// # Safety
    /// The configuration must describe matrices inside the given buffers.
    unsafe fn gemm_batched(
        blas: &CudaBlas,
        cfg: StridedBatchedConfig<Self>,
        a: &CudaView<'_, Self>,
        b: &CudaView<'_, Self>,
        c: &mut CudaViewMut<'_, Self>,
    ) -> Result<(), CublasError>;
}

macro_rules! float_impl {
    ($t:ty) => {
        impl Float for $t {
            fn from_f64(v: f64) -> $t {
                v as $t
            }
            unsafe fn gemm(
                blas: &CudaBlas,
                cfg: GemmConfig<$t>,
                a: &CudaView<'_, $t>,
                b: &CudaView<'_, $t>,
                c: &mut CudaViewMut<'_, $t>,
            ) -> Result<(), CublasError> {
                // SAFETY: forwarded from the caller.
                unsafe { blas.gemm(cfg, a, b, c) }
            }
            unsafe fn gemm_batched(
                blas: &CudaBlas,
                cfg: StridedBatchedConfig<$t>,
                a: &CudaView<'_, $t>,
                b: &CudaView<'_, $t>,
                c: &mut CudaViewMut<'_, $t>,
            ) -> Result<(), CublasError> {
                // SAFETY: forwarded from the caller.
                unsafe { blas.gemm_strided_batched(cfg, a, b, c) }
            }
        }
    };
}
float_impl!(f32);
float_impl!(f64);

/// Fails an op whose driver call failed: the `Backend` trait has no error channel, and a
/// device that fails mid-op (out of memory, a faulted kernel) cannot continue.
pub(crate) fn check<T>(result: Result<T, DriverError>, op: &str) -> T {
    result.unwrap_or_else(|e| panic!("CUDA {op}: {e}"))
}

/// `len` uninitialized elements on `stream` (the caller writes every one before reading).
pub(crate) fn alloc<T: Element>(stream: &Arc<CudaStream>, len: usize, op: &str) -> CudaSlice<T> {
    if len == 0 {
        return check(stream.null(), op);
    }
    // SAFETY: every caller fills all `len` elements (a kernel writing each output element, a
    // copy or a GEMM with beta = 0) before the buffer is read.
    check(unsafe { stream.alloc::<T>(len) }, op)
}

/// `len` zeroed elements on `stream`.
pub(crate) fn zeros<T: Element>(stream: &Arc<CudaStream>, len: usize, op: &str) -> CudaSlice<T> {
    if len == 0 {
        return check(stream.null(), op);
    }
    check(stream.alloc_zeros::<T>(len), op)
}

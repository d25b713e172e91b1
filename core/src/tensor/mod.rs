//! [`Tensor`]: an n-dimensional array on a [`Backend`], with derivative rules for its ops.
//!
//! * Storage is shared (`Arc`), so `clone` is cheap; ops never modify their inputs.
//! * Shapes are run-time, row-major, and the buffer is always contiguous: layout ops that move
//!   data (`transpose`, `permute`, `broadcast_to`) copy, those that do not (`reshape`,
//!   `squeeze`, `unsqueeze`) share the buffer.
//! * The element type is a run-time [`DType`]: `F32` for training, `F64` for gradient checks,
//!   `U32` for ids. Mixing dtypes in one op panics (`try_` variants return the error).
//! * The tangent of a tensor is a [`TensorTangent`], which is either a tensor of the same shape
//!   or a symbolic zero that costs nothing.
//!
//! See `docs/tensors.md` for the design and the broadcasting rules.

mod create;
pub(crate) mod error;
mod outer;
pub(crate) mod shape;
mod tangent;

pub use adjoint_backend::{Backend, Conv2dGeometry, DType, MatmulSpec, UpdateOp};
pub use adjoint_cpu::{Cpu, CpuStorage, keep_freed_memory, matmul_calls};
pub use create::Element;
pub use error::TensorError;
pub use outer::OuterSum;
pub use shape::broadcast_shapes;
pub use tangent::TensorTangent;

use smallvec::SmallVec;

/// A shape, inline up to rank 4.
pub(crate) type Shape = SmallVec<[usize; 4]>;

use std::fmt;
use std::sync::Arc;

/// `shape` as a [`Shape`]. Up to rank 4 the four slots are filled by selects, not by
/// `SmallVec::from_slice`, whose copy of a run-time length is a call to `memcpy` that writes
/// in pieces the next reads of the shape then wait for (under perf, the largest cost of
/// `Tensor`'s constructor, part of every op's fixed cost).
#[inline(always)]
pub(crate) fn shape_of(shape: &[usize]) -> Shape {
    if shape.len() > 4 {
        return Shape::from_slice(shape);
    }
    let slots = std::array::from_fn(|i| shape.get(i).copied().unwrap_or(0));
    Shape::from_buf_and_len(slots, shape.len())
}

/// An n-dimensional array of numbers on backend `B` (the CPU by default).
///
/// Cheap to clone (the buffer is shared). Operators `+ - * /` and unary `-` work between
/// tensors (owned or borrowed, with NumPy broadcasting) and with `f32`/`f64` scalars.
///
/// ```
/// use adjoint::prelude::*;
/// let x = Tensor::from_vec(vec![1.0_f32, 2.0, 3.0, 4.0], &[2, 2]);
/// let w = Tensor::ones(&[2, 1]);
/// let y = (x.matmul(&w) + 1.0).relu();
/// assert_eq!(y.to_vec_f32(), vec![4.0, 8.0]);
/// ```
pub struct Tensor<B: Backend = Cpu> {
    storage: Arc<B::Storage>,
    /// Inline up to rank 4 (no allocation per op for the common ranks).
    shape: Shape,
}

impl<B: Backend> Clone for Tensor<B> {
    fn clone(&self) -> Self {
        Tensor {
            storage: Arc::clone(&self.storage),
            shape: shape_of(&self.shape),
        }
    }
}

impl<B: Backend> Tensor<B> {
    /// A tensor of `shape` (a slice, array or `Vec`) on an existing buffer (`shape` must match
    /// its length). The shape is stored inline up to rank 4.
    pub fn from_storage(storage: B::Storage, shape: impl AsRef<[usize]>) -> Self {
        let shape = shape_of(shape.as_ref());
        assert_eq!(
            B::len(&storage),
            shape.iter().product::<usize>(),
            "from_storage: buffer length does not match shape {shape:?}"
        );
        Tensor {
            storage: Arc::new(storage),
            shape,
        }
    }

    /// The same buffer viewed with another shape of the same length (no check).
    pub(crate) fn with_shape(&self, shape: impl AsRef<[usize]>) -> Self {
        let shape = shape_of(shape.as_ref());
        Tensor {
            storage: Arc::clone(&self.storage),
            shape,
        }
    }

    /// The device buffer.
    pub fn storage(&self) -> &B::Storage {
        &self.storage
    }

    /// The device buffer, for writing in place (what the optimizers' fused update uses).
    ///
    /// Copy-on-write: if another tensor shares the buffer (a clone, a reshaped view, a value
    /// captured by a pullback still alive), the buffer is copied first and `self` gets the
    /// copy, so no other tensor ever sees the write. A uniquely held buffer is returned as is,
    /// without allocating.
    pub fn storage_mut(&mut self) -> &mut B::Storage {
        if Arc::get_mut(&mut self.storage).is_none() {
            let copy = B::cast(&self.storage, self.dtype());
            self.storage = Arc::new(copy);
        }
        Arc::get_mut(&mut self.storage).expect("the buffer is held uniquely after the copy")
    }

    /// The device buffer for writing in place if no other tensor shares it, else `None`.
    pub(crate) fn unique_storage_mut(&mut self) -> Option<&mut B::Storage> {
        Arc::get_mut(&mut self.storage)
    }

    /// The size of each axis.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The shape as an owned value that stays inline up to rank 4 (for pullbacks that keep a
    /// shape: no allocation per op).
    pub(crate) fn shape_owned(&self) -> Shape {
        // By selects, not `SmallVec::clone`, which extends one element at a time.
        shape_of(&self.shape)
    }

    /// The number of axes.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements (the product of the shape; 1 for a rank-0 tensor).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        B::dtype(&self.storage)
    }

    /// The device holding the buffer.
    pub fn device(&self) -> B::Device {
        B::device(&self.storage)
    }

    /// The elements in row-major order as `f64` (copies to the host).
    pub fn to_vec_f64(&self) -> Vec<f64> {
        B::download_f64(&self.storage)
    }

    /// The elements in row-major order as `f32` (copies to the host).
    pub fn to_vec_f32(&self) -> Vec<f32> {
        B::download_f32(&self.storage)
    }

    /// The ids of a `U32` tensor in row-major order (copies to the host).
    pub fn to_vec_u32(&self) -> Vec<u32> {
        B::download_u32(&self.storage)
    }

    /// The single element of a one-element tensor, as `f64`.
    ///
    /// # Panics
    /// If the tensor does not have exactly one element.
    #[track_caller]
    pub fn to_scalar(&self) -> f64 {
        assert!(
            self.len() == 1,
            "to_scalar: tensor of shape {:?} has {} elements, not 1",
            self.shape,
            self.len()
        );
        self.to_vec_f64()[0]
    }

    /// The values converted to `dtype` (a shared clone if already of that type).
    pub fn to_dtype(&self, dtype: DType) -> Self {
        if self.dtype() == dtype {
            return self.clone();
        }
        Tensor::from_storage(B::cast(&self.storage, dtype), self.shape.clone())
    }

    /// A copy of the tensor on `device` of backend `B2` (same shape and dtype), through the
    /// host: `x.to_device::<Cuda>(&gpu)` uploads, `y.to_device::<Cpu>(&Cpu)` downloads.
    ///
    /// ```
    /// use adjoint_core::tensor::{Cpu, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]);
    /// assert_eq!(x.to_device::<Cpu>(&Cpu), x);
    /// ```
    pub fn to_device<B2: Backend>(&self, device: &B2::Device) -> Tensor<B2> {
        let storage = match self.dtype() {
            DType::F32 => B2::upload_f32(device, &self.to_vec_f32()),
            DType::F64 => B2::upload_f64(device, &self.to_vec_f64(), DType::F64),
            DType::U32 => B2::upload_u32(device, &self.to_vec_u32()),
        };
        Tensor::from_storage(storage, self.shape.clone())
    }

    /// Whether both tensors share one buffer.
    pub fn shares_storage_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }
}

impl<B: Backend> fmt::Debug for Tensor<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Tensor");
        d.field("shape", &self.shape).field("dtype", &self.dtype());
        if self.len() <= 64 {
            if self.dtype() == DType::U32 {
                d.field("data", &self.to_vec_u32());
            } else {
                d.field("data", &self.to_vec_f64());
            }
        }
        d.finish()
    }
}

impl<B: Backend> PartialEq for Tensor<B> {
    /// Same shape, same dtype and equal elements.
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape
            && self.dtype() == other.dtype()
            && self.to_vec_f64() == other.to_vec_f64()
    }
}

//! Creation ops. Each has a generic `_on` form that takes a device and a dtype, and a short
//! form on `Tensor<Cpu>` that makes `f32` tensors on the CPU (or infers the dtype from the data).
//!
//! Created tensors are constants: they have no derivative rule because they have no
//! differentiable input.

use super::error::{TensorError, ensure, or_panic};
use super::{Backend, Cpu, DType, Tensor};
use ndarray::{ArrayBase, Data, Dimension};

/// A host element type that can fill a tensor: `f32`, `f64` (floats) or `u32` (ids).
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype of tensors made from this type.
    const DTYPE: DType;
    /// Uploads host values to a new device buffer.
    fn upload<B: Backend>(device: &B::Device, data: &[Self]) -> B::Storage;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn upload<B: Backend>(device: &B::Device, data: &[f32]) -> B::Storage {
        B::upload_f32(device, data)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    fn upload<B: Backend>(device: &B::Device, data: &[f64]) -> B::Storage {
        B::upload_f64(device, data, DType::F64)
    }
}

impl Element for u32 {
    const DTYPE: DType = DType::U32;
    fn upload<B: Backend>(device: &B::Device, data: &[u32]) -> B::Storage {
        B::upload_u32(device, data)
    }
}

impl<B: Backend> Tensor<B> {
    /// A tensor of `shape` holding `data` in row-major order, on `device`.
    ///
    /// # Panics
    /// If `data.len()` is not the product of `shape`.
    #[track_caller]
    pub fn from_vec_on<T: Element>(data: Vec<T>, shape: &[usize], device: &B::Device) -> Self {
        or_panic(Self::try_from_vec_on(data, shape, device))
    }

    /// [`from_vec_on`](Tensor::from_vec_on) returning an error on a length mismatch.
    pub fn try_from_vec_on<T: Element>(
        data: Vec<T>,
        shape: &[usize],
        device: &B::Device,
    ) -> Result<Self, TensorError> {
        let n: usize = shape.iter().product();
        ensure(data.len() == n, "from_vec", || {
            format!(
                "{} values do not fill shape {shape:?} ({n} elements)",
                data.len()
            )
        })?;
        Ok(Tensor::from_storage(T::upload::<B>(device, &data), shape))
    }

    /// A tensor of `shape` with every element `value`: `xᵢ = value`.
    pub fn full_on(shape: &[usize], value: f64, dtype: DType, device: &B::Device) -> Self {
        let n = shape.iter().product();
        Tensor::from_storage(B::fill(device, n, value, dtype), shape)
    }

    /// Zeros of `shape`.
    pub fn zeros_on(shape: &[usize], dtype: DType, device: &B::Device) -> Self {
        Self::full_on(shape, 0.0, dtype, device)
    }

    /// Ones of `shape`.
    pub fn ones_on(shape: &[usize], dtype: DType, device: &B::Device) -> Self {
        Self::full_on(shape, 1.0, dtype, device)
    }

    /// `start, start + step, …` up to (excluding) `end`, as a rank-1 tensor.
    ///
    /// # Panics
    /// If `step` is zero or not finite.
    #[track_caller]
    pub fn arange_on(start: f64, end: f64, step: f64, dtype: DType, device: &B::Device) -> Self {
        assert!(
            step != 0.0 && step.is_finite(),
            "arange: step must be finite and non-zero, got {step}"
        );
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        Tensor::from_storage(B::arange(device, start, step, n, dtype), vec![n])
    }

    /// i.i.d. samples of `U[low, high)`, reproducible from `seed`.
    #[track_caller]
    pub fn rand_uniform_on(
        shape: &[usize],
        low: f64,
        high: f64,
        seed: u64,
        dtype: DType,
        device: &B::Device,
    ) -> Self {
        assert!(
            low < high,
            "rand_uniform: low {low} must be below high {high}"
        );
        let n = shape.iter().product();
        Tensor::from_storage(B::random(device, n, seed, (low, high), false, dtype), shape)
    }

    /// i.i.d. samples of `N(mean, std²)`, reproducible from `seed`.
    #[track_caller]
    pub fn rand_normal_on(
        shape: &[usize],
        mean: f64,
        std: f64,
        seed: u64,
        dtype: DType,
        device: &B::Device,
    ) -> Self {
        assert!(
            std >= 0.0 && std.is_finite(),
            "rand_normal: std {std} must be finite and ≥ 0"
        );
        let n = shape.iter().product();
        Tensor::from_storage(B::random(device, n, seed, (mean, std), true, dtype), shape)
    }

    /// Zeros of the shape, dtype and device of `self`.
    pub fn zeros_like(&self) -> Self {
        Self::full_on(&self.shape, 0.0, self.dtype(), &self.device())
    }

    /// Ones of the shape, dtype and device of `self`.
    pub fn ones_like(&self) -> Self {
        Self::full_on(&self.shape, 1.0, self.dtype(), &self.device())
    }

    /// A tensor of the shape, dtype and device of `self` filled with `value`.
    pub fn full_like(&self, value: f64) -> Self {
        Self::full_on(&self.shape, value, self.dtype(), &self.device())
    }

    /// A rank-0 tensor holding `value`, of `self`'s dtype and device.
    pub fn scalar_like(&self, value: f64) -> Self {
        Self::full_on(&[], value, self.dtype(), &self.device())
    }
}

/// The short forms on the CPU: `f32` unless the data says otherwise.
impl Tensor<Cpu> {
    /// A tensor of `shape` holding `data` (of `f32`, `f64` or `u32`) in row-major order.
    ///
    /// # Panics
    /// If `data.len()` is not the product of `shape`.
    #[track_caller]
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Self {
        Self::from_vec_on(data, shape, &Cpu)
    }

    /// [`from_vec`](Tensor::from_vec) returning an error on a length mismatch.
    pub fn try_from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Self, TensorError> {
        Self::try_from_vec_on(data, shape, &Cpu)
    }

    /// A copy of an `ndarray` array (any layout), with its shape.
    pub fn from_array<T: Element, S: Data<Elem = T>, D: Dimension>(
        array: &ArrayBase<S, D>,
    ) -> Self {
        let data: Vec<T> = array.iter().copied().collect();
        Self::from_vec(data, array.shape())
    }

    /// The elements as an `ndarray` array of `f64` with this shape.
    pub fn to_array_f64(&self) -> ndarray::ArrayD<f64> {
        ndarray::ArrayD::from_shape_vec(self.shape.to_vec(), self.to_vec_f64())
            .expect("length matches shape")
    }

    /// The elements as an `ndarray` array of `f32` with this shape.
    pub fn to_array_f32(&self) -> ndarray::ArrayD<f32> {
        ndarray::ArrayD::from_shape_vec(self.shape.to_vec(), self.to_vec_f32())
            .expect("length matches shape")
    }

    /// An `f32` tensor of `shape` with every element `value`.
    pub fn full(shape: &[usize], value: f64) -> Self {
        Self::full_on(shape, value, DType::F32, &Cpu)
    }

    /// `f32` zeros of `shape`.
    pub fn zeros(shape: &[usize]) -> Self {
        Self::full(shape, 0.0)
    }

    /// `f32` ones of `shape`.
    pub fn ones(shape: &[usize]) -> Self {
        Self::full(shape, 1.0)
    }

    /// A rank-0 `f32` tensor.
    pub fn scalar(value: f64) -> Self {
        Self::full(&[], value)
    }

    /// `f32` values `start, start + step, …` below `end`.
    #[track_caller]
    pub fn arange(start: f64, end: f64, step: f64) -> Self {
        Self::arange_on(start, end, step, DType::F32, &Cpu)
    }

    /// `f32` samples of `U[low, high)` from a generator seeded with `seed`.
    #[track_caller]
    pub fn rand_uniform(shape: &[usize], low: f64, high: f64, seed: u64) -> Self {
        Self::rand_uniform_on(shape, low, high, seed, DType::F32, &Cpu)
    }

    /// `f32` samples of `N(mean, std²)` from a generator seeded with `seed`.
    #[track_caller]
    pub fn rand_normal(shape: &[usize], mean: f64, std: f64, seed: u64) -> Self {
        Self::rand_normal_on(shape, mean, std, seed, DType::F32, &Cpu)
    }
}

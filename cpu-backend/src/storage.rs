//! [`CpuStorage`]: a host buffer of one run-time dtype.

use adjoint_backend::DType;

/// A contiguous host buffer of elements of one [`DType`].
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
    /// `u32` elements (ids).
    U32(Vec<u32>),
}

impl CpuStorage {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
            CpuStorage::U32(_) => DType::U32,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            CpuStorage::F32(v) => v.len(),
            CpuStorage::F64(v) => v.len(),
            CpuStorage::U32(v) => v.len(),
        }
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A buffer of `dtype` holding `data` converted.
    pub fn from_f64(data: &[f64], dtype: DType) -> Self {
        match dtype {
            DType::F32 => CpuStorage::F32(data.iter().map(|&v| v as f32).collect()),
            DType::F64 => CpuStorage::F64(data.to_vec()),
            DType::U32 => CpuStorage::U32(data.iter().map(|&v| v as u32).collect()),
        }
    }

    /// The elements converted to `f64`.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            CpuStorage::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            CpuStorage::F64(v) => v.clone(),
            CpuStorage::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        }
    }

    /// The ids of a `U32` buffer.
    ///
    /// # Panics
    /// If the buffer is not `U32`.
    pub fn as_u32(&self) -> &[u32] {
        match self {
            CpuStorage::U32(v) => v,
            other => panic!("expected a U32 buffer of ids, got {:?}", other.dtype()),
        }
    }
}

/// Matches a `CpuStorage`: the float arms run `$body` with `$v` bound to the `Vec` and `$wrap`
/// to the variant constructor of its type; the `U32` arm is given by the caller.
macro_rules! storage_match {
    ($s:expr, |$v:ident, $wrap:ident| $body:expr, $($u32_arm:tt)*) => {
        match $s {
            $crate::CpuStorage::F32($v) => {
                #[allow(unused_imports)]
                use $crate::CpuStorage::F32 as $wrap;
                $body
            }
            $crate::CpuStorage::F64($v) => {
                #[allow(unused_imports)]
                use $crate::CpuStorage::F64 as $wrap;
                $body
            }
            $($u32_arm)*
        }
    };
}
pub(crate) use storage_match;

/// Runs `$body` with `$v` bound to the `Vec` of a float buffer and `$T` to its element type;
/// `$wrap` is the `CpuStorage` variant constructor of that type.
macro_rules! float_match {
    ($s:expr, |$v:ident, $wrap:ident| $body:expr) => {
        $crate::storage::storage_match!($s, |$v, $wrap| $body, $crate::CpuStorage::U32(_) => {
            panic!("this operation needs a float buffer, got U32 ids")
        })
    };
}
pub(crate) use float_match;

/// Like [`float_match`], for any dtype (layout ops that only move elements).
macro_rules! any_match {
    ($s:expr, |$v:ident, $wrap:ident| $body:expr) => {
        $crate::storage::storage_match!($s, |$v, $wrap| $body, $crate::CpuStorage::U32($v) => {
            #[allow(unused_imports)]
            use $crate::CpuStorage::U32 as $wrap;
            $body
        })
    };
}
pub(crate) use any_match;

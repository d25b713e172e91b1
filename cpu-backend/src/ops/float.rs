//! The float element types of [`CpuStorage`], for kernels written once over both.

use super::gemm::Gemm;
use super::math::Elementary;
use crate::CpuStorage;

/// A float element type of [`CpuStorage`] (`f32`, `f64`).
pub(crate) trait Float: Gemm + Elementary {
    /// The elements of a buffer of this type; `None` for a buffer of another type.
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    /// A buffer of this type.
    fn storage(v: Vec<Self>) -> CpuStorage;
}

macro_rules! float_impl {
    ($t:ty, $variant:ident) => {
        impl Float for $t {
            fn slice(s: &CpuStorage) -> Option<&[$t]> {
                match s {
                    CpuStorage::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn storage(v: Vec<$t>) -> CpuStorage {
                CpuStorage::$variant(v)
            }
        }
    };
}
float_impl!(f32, F32);
float_impl!(f64, F64);

//! The primitives of [`Backend`](adjoint_backend::Backend) on the device, one file per
//! family; each quotes the signature of the kernel it launches.

pub(crate) mod conv;
pub(crate) mod elementwise;
pub(crate) mod index;
pub(crate) mod layout;
pub(crate) mod matmul;
pub(crate) mod pool;
pub(crate) mod random;
pub(crate) mod reduce;
pub(crate) mod update;

/// Applies a generic expression to the typed float buffer of one storage, wrapping the result
/// in a storage on the same device: `float_map!(storage, "op", |x| expr)`.
macro_rules! float_map {
    ($storage:expr, $op:expr, |$x:ident| $body:expr) => {{
        let storage: &$crate::CudaStorage = $storage;
        let buf = match &storage.buf {
            $crate::storage::Buffer::F32($x) => $crate::storage::Buffer::F32($body),
            $crate::storage::Buffer::F64($x) => $crate::storage::Buffer::F64($body),
            $crate::storage::Buffer::U32(_) => {
                panic!("{}: expected a float tensor, got u32", $op)
            }
        };
        $crate::CudaStorage::new(storage.device, buf)
    }};
}

/// [`float_map!`] over two storages of the same float dtype.
macro_rules! float_map2 {
    ($a:expr, $b:expr, $op:expr, |$x:ident, $y:ident| $body:expr) => {{
        let (a, b): (&$crate::CudaStorage, &$crate::CudaStorage) = ($a, $b);
        use $crate::storage::Buffer;
        let buf = match (&a.buf, &b.buf) {
            (Buffer::F32($x), Buffer::F32($y)) => Buffer::F32($body),
            (Buffer::F64($x), Buffer::F64($y)) => Buffer::F64($body),
            _ => panic!(
                "{}: dtypes {:?} and {:?} differ or are not float",
                $op,
                a.dtype(),
                b.dtype()
            ),
        };
        $crate::CudaStorage::new(a.device, buf)
    }};
}

/// [`float_map!`] for an expression that gives a float buffer and a `u32` buffer (a result and
/// an index per element of it): `(result, ids)` as storages on the same device.
macro_rules! float_map_with_ids {
    ($storage:expr, $op:expr, |$x:ident| $body:expr) => {{
        let storage: &$crate::CudaStorage = $storage;
        use $crate::storage::Buffer;
        let (buf, ids) = match &storage.buf {
            Buffer::F32($x) => {
                let (y, ids) = $body;
                (Buffer::F32(y), ids)
            }
            Buffer::F64($x) => {
                let (y, ids) = $body;
                (Buffer::F64(y), ids)
            }
            Buffer::U32(_) => panic!("{}: expected a float tensor, got u32", $op),
        };
        (
            $crate::CudaStorage::new(storage.device, buf),
            $crate::CudaStorage::new(storage.device, Buffer::U32(ids)),
        )
    }};
}

/// [`float_map!`] for buffers of any element type.
macro_rules! any_map {
    ($storage:expr, |$x:ident| $body:expr) => {{
        let storage: &$crate::CudaStorage = $storage;
        use $crate::storage::Buffer;
        let buf = match &storage.buf {
            Buffer::F32($x) => Buffer::F32($body),
            Buffer::F64($x) => Buffer::F64($body),
            Buffer::U32($x) => Buffer::U32($body),
        };
        $crate::CudaStorage::new(storage.device, buf)
    }};
}

/// A new [`Buffer`](crate::storage::Buffer) of run-time `dtype` from a constructor generic over
/// the element type: `by_dtype!(dtype, make(args...))` calls `make::<f32>(args...)` etc.
macro_rules! by_dtype {
    ($dtype:expr, $make:ident($($arg:expr),* $(,)?)) => {
        match $dtype {
            adjoint_backend::DType::F32 => $crate::storage::Buffer::F32($make::<f32>($($arg),*)),
            adjoint_backend::DType::F64 => $crate::storage::Buffer::F64($make::<f64>($($arg),*)),
            adjoint_backend::DType::U32 => $crate::storage::Buffer::U32($make::<u32>($($arg),*)),
        }
    };
}

pub(crate) use {any_map, by_dtype, float_map, float_map_with_ids, float_map2};

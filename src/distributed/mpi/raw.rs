//! The MPI C calls this module makes itself (through rsmpi's `ffi`): the non-blocking
//! collectives and point-to-point messages, whose requests the communicator polls against
//! its timeout. rsmpi's safe requests panic when dropped incomplete, which a timeout must do.
//!
//! Every call holds [`lock`]: MPI is initialized with `MPI_THREAD_SERIALIZED`, which lets
//! any thread call MPI provided no two do at once, and the lock is what makes that true
//! for every communicator of the process.

use super::super::DistError;
use crate::tensor::CpuStorage;
use mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

/// The process-wide lock held around every MPI call (see the module docs).
static MPI_LOCK: Mutex<()> = Mutex::new(());

/// Takes [`MPI_LOCK`] (a panic while it was held leaves nothing inconsistent: it guards no
/// data).
pub(super) fn lock() -> MutexGuard<'static, ()> {
    MPI_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `Ok` for `MPI_SUCCESS` (0 in every MPI), else the error with the library's message.
pub(super) fn check(op: &'static str, code: c_int) -> Result<(), DistError> {
    if code == 0 {
        return Ok(());
    }
    let mut text = vec![0u8; 512];
    let mut len: c_int = 0;
    // SAFETY: `text` has room for MPI_MAX_ERROR_STRING (256 in Open MPI and MPICH) bytes, and
    // `len` receives the length written.
    unsafe { ffi::MPI_Error_string(code, text.as_mut_ptr().cast(), &mut len) };
    text.truncate(usize::try_from(len).unwrap_or(0));
    Err(DistError::Mpi {
        op,
        code,
        message: String::from_utf8_lossy(&text).into_owned(),
    })
}

/// A buffer as MPI takes it: address, element count and datatype.
pub(super) struct Raw {
    pub ptr: *mut c_void,
    pub count: c_int,
    pub datatype: ffi::MPI_Datatype,
}

/// `buf` as MPI sees it; an error if it holds more elements than an MPI count (`i32`).
pub(super) fn raw(op: &'static str, buf: &mut CpuStorage) -> Result<Raw, DistError> {
    let count = c_int::try_from(buf.len()).map_err(|_| DistError::InvalidArgument {
        op,
        detail: format!("{} elements are more than an MPI count can hold", buf.len()),
    })?;
    // SAFETY: the RSMPI_* datatypes are constants set when the C shim is loaded.
    let (ptr, datatype) = unsafe {
        match buf {
            CpuStorage::F32(v) => (v.as_mut_ptr().cast(), ffi::RSMPI_FLOAT),
            CpuStorage::F64(v) => (v.as_mut_ptr().cast(), ffi::RSMPI_DOUBLE),
            CpuStorage::U32(v) => (v.as_mut_ptr().cast(), ffi::RSMPI_UINT32_T),
        }
    };
    Ok(Raw {
        ptr,
        count,
        datatype,
    })
}

/// `MPI_Test`: whether `request` has completed (it is then `MPI_REQUEST_NULL`).
pub(super) fn test(op: &'static str, request: &mut ffi::MPI_Request) -> Result<bool, DistError> {
    let mut flag: c_int = 0;
    let _guard = lock();
    // SAFETY: `request` is a live request of this process (or MPI_REQUEST_NULL, which tests
    // as complete); the status is ignored.
    let code = unsafe { ffi::MPI_Test(request, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
    check(op, code)?;
    Ok(flag != 0)
}

/// `MPI_REQUEST_NULL`, the value a request is initialized with.
pub(super) fn null_request() -> ffi::MPI_Request {
    // SAFETY: a constant of the C shim.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// An operation started on buffers that MPI reads and writes until its request completes:
/// they are owned here, so that a request given up on a timeout keeps them alive.
pub(super) struct InFlight {
    pub request: ffi::MPI_Request,
    /// What MPI reads (all-reduce, all-gather) or reads and writes (broadcast).
    pub send: CpuStorage,
    /// What MPI writes (all-reduce, all-gather); empty for a broadcast or barrier.
    pub recv: CpuStorage,
}

/// Starts `MPI_Iallreduce(send → recv, MPI_SUM)`; `recv` has `send`'s dtype and length.
pub(super) fn all_reduce_sum(
    comm: ffi::MPI_Comm,
    mut send: CpuStorage,
    mut recv: CpuStorage,
) -> Result<InFlight, DistError> {
    const OP: &str = "MPI_Iallreduce";
    let (s, r) = (raw(OP, &mut send)?, raw(OP, &mut recv)?);
    let mut request = null_request();
    let _guard = lock();
    // SAFETY: both buffers hold `count` elements of `datatype` and live in the returned
    // `InFlight` until the request completes or is given up (then they are leaked).
    let code = unsafe {
        ffi::MPI_Iallreduce(
            s.ptr,
            r.ptr,
            s.count,
            s.datatype,
            ffi::RSMPI_SUM,
            comm,
            &mut request,
        )
    };
    check(OP, code)?;
    Ok(InFlight {
        request,
        send,
        recv,
    })
}

/// Starts `MPI_Ibcast` of `buf` from `root`.
pub(super) fn broadcast(
    comm: ffi::MPI_Comm,
    mut buf: CpuStorage,
    root: c_int,
) -> Result<InFlight, DistError> {
    const OP: &str = "MPI_Ibcast";
    let b = raw(OP, &mut buf)?;
    let mut request = null_request();
    let _guard = lock();
    // SAFETY: as in `all_reduce_sum`; `root` is a rank of `comm` (checked by the caller).
    let code = unsafe { ffi::MPI_Ibcast(b.ptr, b.count, b.datatype, root, comm, &mut request) };
    check(OP, code)?;
    Ok(InFlight {
        request,
        send: buf,
        recv: CpuStorage::F32(Vec::new()),
    })
}

/// Starts `MPI_Iallgather` of `send` into `recv` (`world size × send.len()` elements).
pub(super) fn all_gather(
    comm: ffi::MPI_Comm,
    mut send: CpuStorage,
    mut recv: CpuStorage,
) -> Result<InFlight, DistError> {
    const OP: &str = "MPI_Iallgather";
    let (s, r) = (raw(OP, &mut send)?, raw(OP, &mut recv)?);
    let mut request = null_request();
    let _guard = lock();
    // SAFETY: as in `all_reduce_sum`; each rank contributes `s.count` elements and `recv`
    // has room for all of them.
    let code = unsafe {
        ffi::MPI_Iallgather(
            s.ptr,
            s.count,
            s.datatype,
            r.ptr,
            s.count,
            r.datatype,
            comm,
            &mut request,
        )
    };
    check(OP, code)?;
    Ok(InFlight {
        request,
        send,
        recv,
    })
}

/// Starts `MPI_Ibarrier`.
pub(super) fn barrier(comm: ffi::MPI_Comm) -> Result<InFlight, DistError> {
    let mut request = null_request();
    let _guard = lock();
    // SAFETY: `comm` is a live communicator; no buffers.
    let code = unsafe { ffi::MPI_Ibarrier(comm, &mut request) };
    check("MPI_Ibarrier", code)?;
    Ok(InFlight {
        request,
        send: CpuStorage::F32(Vec::new()),
        recv: CpuStorage::F32(Vec::new()),
    })
}

/// Sets `comm` to return error codes instead of aborting the job (MPI's default).
pub(super) fn errors_return(comm: ffi::MPI_Comm) -> Result<(), DistError> {
    let _guard = lock();
    // SAFETY: `comm` is a live communicator; the handler is a constant of the C shim.
    let code = unsafe { ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN) };
    check("MPI_Comm_set_errhandler", code)
}

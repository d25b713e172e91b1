//! [`MpiCommunicator`]: the collectives of an MPI library (Debian's Open MPI here, through
//! the `rsmpi` crate), over `Tensor<Cpu>`, with a timeout. Feature `mpi`.
//!
//! ```no_run
//! use adjoint::distributed::Communicator;
//! use adjoint::distributed::mpi::Mpi;
//! use adjoint::prelude::*;
//! use std::time::Duration;
//!
//! // Run as `mpirun -np 2 ./program`.
//! let mpi = Mpi::init()?;
//! let mut world = mpi.world(Duration::from_secs(60))?;
//! let mut t = Tensor::from_vec(vec![world.rank() as f32], &[1]);
//! world.all_reduce_sum(&mut t)?; // 0 + 1 on every rank
//! assert_eq!(t.to_vec_f32(), [1.0]);
//! # Ok::<(), adjoint::distributed::DistError>(())
//! ```
//!
//! # Faults
//! Every collective is started non-blocking (`MPI_Iallreduce`, `MPI_Ibcast`, ...) and polled
//! until it completes or the timeout passes; a timeout is [`DistError::Timeout`] naming the
//! ranks that never reached the collective (each rank tells the others when it enters one,
//! see `arrivals.rs`). The communicator then refuses further collectives
//! ([`DistError::Failed`]). A rank that *exits* (a panic, a kill) is noticed by `mpirun`
//! itself, which ends the whole job and names the rank; MPI without fault tolerance cannot
//! let the others go on, and they need no timeout for it. After a timeout, call
//! [`Mpi::abort`] rather than returning normally: `MPI_Finalize` would wait for the hung rank.

mod arrivals;
mod raw;

use super::{Communicator, DistError, ReduceOp};
use crate::tensor::{CpuStorage, DType};
use crate::{Cpu, Tensor};
use arrivals::Arrivals;
use mpi::Threading;
use mpi::environment::Universe;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator as _;
use raw::{InFlight, lock};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

/// The MPI library, initialized for this process (`MPI_Init_thread` with
/// `MPI_THREAD_SERIALIZED`) and finalized when dropped. Communicators borrow it.
pub struct Mpi {
    universe: Universe,
}

impl Mpi {
    /// Initializes MPI. An error if it already is (once per process), or if the library
    /// cannot call MPI from several threads one at a time (`MPI_THREAD_SERIALIZED`: the CPU
    /// backend may run a training step on a worker thread).
    pub fn init() -> Result<Mpi, DistError> {
        let fail = |detail: String| DistError::InvalidArgument {
            op: "Mpi::init",
            detail,
        };
        let _guard = lock();
        let (universe, level) = mpi::initialize_with_threading(Threading::Serialized)
            .ok_or_else(|| fail("MPI is already initialized in this process".into()))?;
        if level < Threading::Serialized {
            return Err(fail(format!(
                "the MPI library gives {level:?} threading, MPI_THREAD_SERIALIZED is needed"
            )));
        }
        Ok(Mpi { universe })
    }

    /// A communicator over all the processes of the job (a duplicate of `MPI_COMM_WORLD`,
    /// returning errors instead of aborting), whose collectives give up after `timeout`.
    /// Every rank must call it (it is collective).
    pub fn world(&self, timeout: Duration) -> Result<MpiCommunicator<'_>, DistError> {
        let (comm, side) = {
            let _guard = lock();
            let world = self.universe.world();
            (world.duplicate(), world.duplicate())
        };
        raw::errors_return(comm.as_raw())?;
        let (rank, size) = (comm.rank() as usize, comm.size() as usize);
        Ok(MpiCommunicator {
            arrivals: ManuallyDrop::new(Arrivals::new(side, rank, size)?),
            comm: ManuallyDrop::new(comm),
            rank,
            size,
            timeout,
            seq: 0,
            failed: None,
            abandoned: Vec::new(),
            _env: PhantomData,
        })
    }

    /// Ends every process of the job with exit status `code` (`MPI_Abort`): what to do after
    /// a [`DistError`], since the ranks are no longer in step.
    pub fn abort(&self, code: i32) -> ! {
        self.universe.world().abort(code)
    }

    /// The MPI library's version string (`MPI_Get_library_version`).
    pub fn library_version(&self) -> String {
        mpi::environment::library_version().unwrap_or_default()
    }
}

/// A [`Communicator`] over MPI processes for `Tensor<Cpu>`; see the [module docs](self).
///
/// Reductions run in the tensors' dtype (`f32` sums in `f32`, as `MPI_SUM` on `MPI_FLOAT`);
/// the mean is the sum times `1/N`. Tensors of one call travel as one message.
pub struct MpiCommunicator<'a> {
    comm: ManuallyDrop<SimpleCommunicator>,
    arrivals: ManuallyDrop<Arrivals>,
    rank: usize,
    size: usize,
    timeout: Duration,
    /// The number of collectives started so far.
    seq: u64,
    /// The first timeout, after which the communicator refuses collectives.
    failed: Option<String>,
    /// Operations given up on a timeout: their buffers stay alive (MPI may still write).
    abandoned: Vec<InFlight>,
    _env: PhantomData<&'a Mpi>,
}

// SAFETY: MPI runs with MPI_THREAD_SERIALIZED and every MPI call of this module holds the
// process-wide lock (`raw::lock`), so moving the communicator's handles to another thread
// and calling MPI from there never makes two MPI calls at once.
unsafe impl Send for MpiCommunicator<'_> {}

impl MpiCommunicator<'_> {
    /// The timeout of every collective.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets the timeout of every later collective.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Refuses a collective after a failure, and announces the next one to the peers.
    fn begin(&mut self, op: &'static str) -> Result<(), DistError> {
        if let Some(earlier) = &self.failed {
            return Err(DistError::Failed {
                op,
                earlier: earlier.clone(),
            });
        }
        self.arrivals.announce(self.seq)
    }

    /// Polls `op` until it completes (its buffers back) or the timeout passes (the error
    /// names the ranks that never arrived).
    fn finish(&mut self, name: &'static str, mut op: InFlight) -> Result<InFlight, DistError> {
        let start = Instant::now();
        let seq = self.seq;
        self.seq += 1;
        let mut polls = 0u64;
        loop {
            if raw::test(name, &mut op.request)? {
                return Ok(op);
            }
            let waited = start.elapsed();
            if waited >= self.timeout {
                let missing = self.arrivals.missing(seq)?;
                self.abandoned.push(op);
                let error = DistError::Timeout {
                    op: name,
                    seq,
                    rank: self.rank,
                    waited,
                    missing,
                };
                self.failed = Some(error.to_string());
                return Err(error);
            }
            polls += 1;
            if polls.is_multiple_of(256) {
                self.arrivals.poll()?;
            }
            back_off(waited);
        }
    }
}

/// Between two polls: spin for the first 100 µs (a collective of a step is short), then
/// yield the core, then sleep 100 µs at a time once it has waited 5 ms.
fn back_off(waited: Duration) {
    if waited < Duration::from_micros(100) {
        std::hint::spin_loop();
    } else if waited < Duration::from_millis(5) {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// The tensors' elements, one after the other, in one buffer of their common dtype.
fn concat(op: &'static str, tensors: &[Tensor<Cpu>]) -> Result<CpuStorage, DistError> {
    let dtype = tensors.first().map_or(DType::F32, Tensor::dtype);
    if let Some(t) = tensors.iter().find(|t| t.dtype() != dtype) {
        return Err(DistError::InvalidArgument {
            op,
            detail: format!("tensors of {dtype:?} and {:?} in one call", t.dtype()),
        });
    }
    let total = tensors.iter().map(Tensor::len).sum();
    let mut buf = empty(dtype, 0);
    match &mut buf {
        CpuStorage::F32(v) => v.reserve(total),
        CpuStorage::F64(v) => v.reserve(total),
        CpuStorage::U32(v) => v.reserve(total),
    }
    for t in tensors {
        match (&mut buf, t.storage()) {
            (CpuStorage::F32(v), CpuStorage::F32(s)) => v.extend_from_slice(s),
            (CpuStorage::F64(v), CpuStorage::F64(s)) => v.extend_from_slice(s),
            (CpuStorage::U32(v), CpuStorage::U32(s)) => v.extend_from_slice(s),
            _ => unreachable!("the dtypes were checked equal"),
        }
    }
    Ok(buf)
}

/// Writes `buf` back into the tensors, in [`concat`]'s order.
fn split_into(buf: &CpuStorage, tensors: &mut [Tensor<Cpu>]) {
    let mut offset = 0;
    for t in tensors {
        let n = t.len();
        match (t.storage_mut(), buf) {
            (CpuStorage::F32(d), CpuStorage::F32(s)) => d.copy_from_slice(&s[offset..offset + n]),
            (CpuStorage::F64(d), CpuStorage::F64(s)) => d.copy_from_slice(&s[offset..offset + n]),
            (CpuStorage::U32(d), CpuStorage::U32(s)) => d.copy_from_slice(&s[offset..offset + n]),
            _ => unreachable!("the buffer has the tensors' dtype"),
        }
        offset += n;
    }
}

/// `n` zeros of `dtype`.
fn empty(dtype: DType, n: usize) -> CpuStorage {
    match dtype {
        DType::F32 => CpuStorage::F32(vec![0.0; n]),
        DType::F64 => CpuStorage::F64(vec![0.0; n]),
        DType::U32 => CpuStorage::U32(vec![0; n]),
    }
}

impl Communicator<Cpu> for MpiCommunicator<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.size
    }

    fn all_reduce(&mut self, tensors: &mut [Tensor<Cpu>], op: ReduceOp) -> Result<(), DistError> {
        let send = concat("all_reduce", tensors)?;
        if op == ReduceOp::Mean && !send.dtype().is_float() {
            return Err(DistError::InvalidArgument {
                op: "all_reduce",
                detail: format!("the mean of {:?} tensors is not defined", send.dtype()),
            });
        }
        self.begin("all_reduce")?;
        let recv = empty(send.dtype(), send.len());
        let started = raw::all_reduce_sum(self.comm.as_raw(), send, recv)?;
        let mut done = self.finish("all_reduce", started)?;
        if op == ReduceOp::Mean {
            let scale = 1.0 / self.size as f64;
            match &mut done.recv {
                CpuStorage::F32(v) => v.iter_mut().for_each(|x| *x *= scale as f32),
                CpuStorage::F64(v) => v.iter_mut().for_each(|x| *x *= scale),
                CpuStorage::U32(_) => unreachable!("checked to be a float dtype"),
            }
        }
        split_into(&done.recv, tensors);
        Ok(())
    }

    fn broadcast(&mut self, tensors: &mut [Tensor<Cpu>], root: usize) -> Result<(), DistError> {
        if root >= self.size {
            return Err(DistError::InvalidArgument {
                op: "broadcast",
                detail: format!("root {root} is not a rank of a world of {}", self.size),
            });
        }
        let buf = concat("broadcast", tensors)?;
        self.begin("broadcast")?;
        let started = raw::broadcast(self.comm.as_raw(), buf, root as i32)?;
        let done = self.finish("broadcast", started)?;
        split_into(&done.send, tensors);
        Ok(())
    }

    fn all_gather(&mut self, tensor: &Tensor<Cpu>) -> Result<Tensor<Cpu>, DistError> {
        let send = concat("all_gather", std::slice::from_ref(tensor))?;
        self.begin("all_gather")?;
        let recv = empty(send.dtype(), send.len() * self.size);
        let started = raw::all_gather(self.comm.as_raw(), send, recv)?;
        let done = self.finish("all_gather", started)?;
        let shape: Vec<usize> = std::iter::once(self.size)
            .chain(tensor.shape().iter().copied())
            .collect();
        Ok(Tensor::from_storage(done.recv, shape))
    }

    fn barrier(&mut self) -> Result<(), DistError> {
        self.begin("barrier")?;
        let started = raw::barrier(self.comm.as_raw())?;
        self.finish("barrier", started).map(drop)
    }
}

impl Drop for MpiCommunicator<'_> {
    /// Gives operations abandoned on a timeout one more timeout to complete (a rank that was
    /// only slow), and leaks the buffers of those that do not; then frees the communicators.
    fn drop(&mut self) {
        let deadline = Instant::now() + self.timeout;
        for mut op in std::mem::take(&mut self.abandoned) {
            let complete = loop {
                match raw::test("MPI_Test", &mut op.request) {
                    Ok(true) => break true,
                    Ok(false) if Instant::now() < deadline => back_off(self.timeout),
                    _ => break false,
                }
            };
            if !complete {
                std::mem::forget(op);
            }
        }
        // SAFETY: each field is dropped once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.arrivals) };
        let _guard = lock();
        // SAFETY: as above; `MPI_Comm_free` runs under the MPI lock.
        unsafe { ManuallyDrop::drop(&mut self.comm) };
    }
}

//! Running an example as one rank of an MPI job (`mpirun -np N ... -- --distributed`).

use adjoint::distributed::Communicator;
use adjoint::distributed::mpi::{Mpi, MpiCommunicator};
use std::error::Error;
use std::process::ExitCode;
use std::time::Duration;

/// Gives each rank its share of the cores, unless `RAYON_NUM_THREADS` says otherwise: the
/// cores divided by the ranks on this node (`OMPI_COMM_WORLD_LOCAL_SIZE`, set by Open MPI's
/// `mpirun`), at least one. Without it every rank's thread pool would take every core, and
/// the ranks' polling workers would fight over them.
///
/// Called first thing in `main`, before any thread exists (MPI's own among them).
pub fn share_cores() {
    let local: usize = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    if std::env::var_os("RAYON_NUM_THREADS").is_none() && local > 1 {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let threads = (cores / local).max(1).to_string();
        // SAFETY: called at the start of `main`, before this process has started any thread,
        // so nothing reads the environment concurrently.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", threads) };
    }
}

/// Starts MPI and runs `job` on the world communicator (collectives time out after
/// `timeout`). On an error, rank by rank: the error is printed with the rank, and the job is
/// aborted (`MPI_Abort`), since the ranks are out of step and `MPI_Finalize` would wait for
/// a hung one.
pub fn run(
    timeout: Duration,
    job: impl FnOnce(MpiCommunicator<'_>) -> Result<(), Box<dyn Error>>,
) -> ExitCode {
    let mpi = match Mpi::init() {
        Ok(mpi) => mpi,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (rank, result) = match mpi.world(timeout) {
        Ok(comm) => (comm.rank(), job(comm)),
        Err(error) => (0, Err(error.into())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error on rank {rank}: {error}");
            mpi.abort(1)
        }
    }
}

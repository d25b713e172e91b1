//! [`DistError`]: what a collective or the start of data-parallel training reports.

use std::fmt;
use std::time::Duration;

/// A failed collective operation, or ranks that do not agree on the model.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DistError {
    /// A collective did not complete within the communicator's timeout.
    Timeout {
        /// The operation (`"all_reduce"`, `"broadcast"`, ...).
        op: &'static str,
        /// Its number among this communicator's collectives (0 for the first).
        seq: u64,
        /// The rank reporting it.
        rank: usize,
        /// How long it waited.
        waited: Duration,
        /// The ranks that had not reached this collective (empty if all had, which means
        /// the MPI library itself made no progress).
        missing: Vec<usize>,
    },
    /// Two ranks disagree on the model's parameters (checked when data parallelism starts).
    ParameterMismatch {
        /// The rank whose parameters differ from rank 0's (the lowest such rank).
        rank: usize,
        /// What differs: the first parameter that does (its dotted path and both shapes and
        /// dtypes, or both names), or the two parameter counts.
        detail: String,
    },
    /// An argument the operation cannot take (mixed dtypes in one call, a root that is not a
    /// rank, integers to average, more elements than MPI counts).
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The MPI library returned an error code.
    Mpi {
        /// The MPI function.
        op: &'static str,
        /// Its error code.
        code: i32,
        /// The library's message for the code.
        message: String,
    },
    /// The communicator failed earlier (a timeout) and cannot be used again: the ranks are
    /// no longer in step.
    Failed {
        /// The operation refused.
        op: &'static str,
        /// The earlier failure.
        earlier: String,
    },
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Timeout {
                op,
                seq,
                rank,
                waited,
                missing,
            } => {
                write!(
                    f,
                    "{op} (collective #{seq}) timed out on rank {rank} after {:.1} s: ",
                    waited.as_secs_f64()
                )?;
                match missing.as_slice() {
                    [] => write!(f, "every rank reached it, but it did not complete"),
                    [r] => write!(f, "rank {r} never reached it (dead or hung)"),
                    many => write!(f, "ranks {many:?} never reached it (dead or hung)"),
                }
            }
            DistError::ParameterMismatch { rank, detail } => write!(
                f,
                "data parallel: the parameters of rank {rank} differ from rank 0's: {detail}"
            ),
            DistError::InvalidArgument { op, detail } => write!(f, "{op}: {detail}"),
            DistError::Mpi { op, code, message } => {
                write!(f, "{op} failed with MPI error {code}: {message}")
            }
            DistError::Failed { op, earlier } => write!(
                f,
                "{op}: the communicator failed earlier and cannot be used ({earlier})"
            ),
        }
    }
}

impl std::error::Error for DistError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_names_the_missing_rank() {
        let e = DistError::Timeout {
            op: "all_reduce",
            seq: 7,
            rank: 0,
            waited: Duration::from_millis(1500),
            missing: vec![1],
        };
        assert_eq!(
            e.to_string(),
            "all_reduce (collective #7) timed out on rank 0 after 1.5 s: rank 1 never reached \
             it (dead or hung)"
        );
    }
}

//! The check, when data parallelism starts, that every rank has the same parameters: the
//! same count, and for each (in [`Parameters::visit`](crate::Parameters::visit)'s order) the
//! same dotted path, shape and dtype.
//!
//! Each rank describes each parameter by a fixed number of `u32` words (a hash of its name,
//! its dtype, its rank and its dimensions) and the ranks all-gather those descriptions, so
//! that every rank finds the same first difference and reports the same error.

use super::{Communicator, DistError};
use crate::{Backend, DType, Tensor};

/// A parameter as the ranks compare it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ParamInfo {
    /// Its dotted path.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its dtype.
    pub dtype: DType,
}

/// Dimensions described one by one; those past the eighth are folded into the last word.
const MAX_DIMS: usize = 8;
/// Words per parameter: the name's hash, the dtype, the number of dimensions, the dimensions.
const WORDS: usize = 3 + MAX_DIMS;

/// The 32-bit FNV-1a hash of a name.
fn fnv1a(name: &str) -> u32 {
    name.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn dtype_code(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::U32 => 2,
    }
}

/// The words that describe `p`.
fn describe(p: &ParamInfo) -> [u32; WORDS] {
    let mut words = [0; WORDS];
    words[0] = fnv1a(&p.name);
    words[1] = dtype_code(p.dtype);
    words[2] = p.shape.len() as u32;
    for (i, &d) in p.shape.iter().enumerate() {
        let slot = 3 + i.min(MAX_DIMS - 1);
        let d = u32::try_from(d).unwrap_or(u32::MAX);
        words[slot] = if i < MAX_DIMS {
            d
        } else {
            words[slot].wrapping_mul(d)
        };
    }
    words
}

/// `[d0, d1, ..] (dtype)` read back from a description.
fn shape_of(words: &[u32]) -> String {
    let dims = (words[2] as usize).min(MAX_DIMS);
    let dtype = ["f32", "f64", "u32"].get(words[1] as usize).unwrap_or(&"?");
    format!("{:?} ({dtype})", &words[3..3 + dims])
}

/// Checks that every rank of `comm` has the parameters `params`; `device` holds the small
/// tensors the descriptions travel in. Every rank returns the same error.
pub(super) fn check<B: Backend, C: Communicator<B>>(
    comm: &mut C,
    params: &[ParamInfo],
    device: &B::Device,
) -> Result<(), DistError> {
    if comm.world_size() == 1 {
        return Ok(());
    }
    let count = Tensor::<B>::from_vec_on(vec![params.len() as u32], &[1], device);
    let counts = comm.all_gather(&count)?.to_vec_u32();
    if let Some(rank) = counts.iter().position(|&c| c != counts[0]) {
        return Err(DistError::ParameterMismatch {
            rank,
            detail: format!(
                "rank 0 has {} parameter tensors, rank {rank} has {}",
                counts[0], counts[rank]
            ),
        });
    }
    let words: Vec<u32> = params.iter().flat_map(describe).collect();
    let n = words.len();
    let all = comm
        .all_gather(&Tensor::<B>::from_vec_on(words, &[n], device))?
        .to_vec_u32();
    let per_rank: Vec<&[u32]> = all.chunks(n.max(1)).collect();
    first_difference(&per_rank, params, comm.rank())
}

/// The first parameter (lowest index, then lowest rank) whose description differs from rank
/// 0's, as an error; `params` are this rank's (`me`).
fn first_difference(per_rank: &[&[u32]], params: &[ParamInfo], me: usize) -> Result<(), DistError> {
    for (i, p) in params.iter().enumerate() {
        let at = |r: usize| &per_rank[r][i * WORDS..(i + 1) * WORDS];
        let Some(rank) = (1..per_rank.len()).find(|&r| at(r) != at(0)) else {
            continue;
        };
        let (ours, theirs) = (at(0), at(rank));
        let detail = if ours[0] != theirs[0] {
            format!(
                "parameter #{i} is `{}` on rank {me}, and named otherwise on rank {}",
                p.name,
                if me == 0 { rank } else { 0 }
            )
        } else {
            format!(
                "`{}` is {} on rank 0 and {} on rank {rank}",
                p.name,
                shape_of(ours),
                shape_of(theirs)
            )
        };
        return Err(DistError::ParameterMismatch { rank, detail });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, shape: &[usize]) -> ParamInfo {
        ParamInfo {
            name: name.into(),
            shape: shape.to_vec(),
            dtype: DType::F32,
        }
    }

    #[test]
    fn the_first_differing_shape_is_named_with_both_shapes() {
        let a = [
            info("hidden.weight", &[784, 512]),
            info("out.weight", &[512, 10]),
        ];
        let b = [
            info("hidden.weight", &[784, 512]),
            info("out.weight", &[512, 9]),
        ];
        let (wa, wb): (Vec<u32>, Vec<u32>) = (
            a.iter().flat_map(describe).collect(),
            b.iter().flat_map(describe).collect(),
        );
        let err = first_difference(&[&wa, &wa, &wb], &a, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "data parallel: the parameters of rank 2 differ from rank 0's: `out.weight` is \
             [512, 10] (f32) on rank 0 and [512, 9] (f32) on rank 2"
        );
        assert_eq!(first_difference(&[&wa, &wa], &a, 1), Ok(()));
    }

    #[test]
    fn a_different_name_or_dtype_is_a_difference() {
        let a = [info("w", &[3])];
        let mut b = [info("v", &[3])];
        let wa: Vec<u32> = a.iter().flat_map(describe).collect();
        let wb: Vec<u32> = b.iter().flat_map(describe).collect();
        let err = first_difference(&[&wa, &wb], &a, 0)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("parameter #0 is `w` on rank 0, and named otherwise on rank 1"));
        b[0] = ParamInfo {
            dtype: DType::F64,
            ..info("w", &[3])
        };
        let wb: Vec<u32> = b.iter().flat_map(describe).collect();
        let err = first_difference(&[&wa, &wb], &a, 0)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("`w` is [3] (f32) on rank 0 and [3] (f64) on rank 1"),
            "{err}"
        );
    }
}

//! [`DistributedSampler`]: each rank's share of every batch of a seeded shuffle.

use crate::data::{BatchSampler, DataError};

/// Batches of example indices for one rank of `world_size`, reshuffled every epoch, with
/// PyTorch's `DistributedSampler(shuffle=True, drop_last=True)` semantics.
///
/// Every rank draws the same permutation of `0..len` each epoch (a [`BatchSampler`] of
/// global batches of `world_size · batch_size`, seeded with `seed`); rank `r` takes the
/// elements `r, r + N, r + 2N, …` of each global batch. So the ranks' batches are disjoint,
/// of equal sizes, and together they are exactly the batches of one process with a batch of
/// `N · batch_size`. The last global batch of an epoch, when shorter, is cut to a multiple of
/// `N` (the `len mod N` examples left out are those PyTorch leaves out), and skipped if
/// that leaves nothing.
///
/// ```
/// use adjoint::distributed::DistributedSampler;
/// use adjoint::data::BatchSampler;
///
/// let mut rank0 = DistributedSampler::new(10, 2, 7, 0, 2)?;
/// let mut rank1 = DistributedSampler::new(10, 2, 7, 1, 2)?;
/// let mut alone = BatchSampler::new(10, 4, 7)?;
/// let (a, b) = (rank0.epoch(), rank1.epoch());
/// for ((x, y), whole) in a.iter().zip(&b).zip(alone.epoch()) {
///     // The two shards interleave to the batch of 4 of one process.
///     let both: Vec<usize> = x.iter().zip(y).flat_map(|(&i, &j)| [i, j]).collect();
///     assert_eq!(both, whole);
/// }
/// assert_eq!(a.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
#[derive(Clone, Debug)]
pub struct DistributedSampler {
    global: BatchSampler,
    rank: usize,
    world_size: usize,
}

impl DistributedSampler {
    /// The sampler of rank `rank` of `world_size` over `len` examples, in batches of
    /// `batch_size` per rank, seeded with `seed` (the same on every rank).
    ///
    /// Returns [`DataError::InvalidBatchSize`] if `batch_size` is zero.
    ///
    /// # Panics
    /// If `world_size` is zero or `rank >= world_size`.
    #[track_caller]
    pub fn new(
        len: usize,
        batch_size: usize,
        seed: u64,
        rank: usize,
        world_size: usize,
    ) -> Result<Self, DataError> {
        assert!(
            rank < world_size,
            "DistributedSampler: rank {rank} is not in a world of {world_size}"
        );
        if batch_size == 0 {
            return Err(DataError::InvalidBatchSize);
        }
        Ok(DistributedSampler {
            global: BatchSampler::new(len, batch_size * world_size, seed)?,
            rank,
            world_size,
        })
    }

    /// The number of batches each epoch yields (the same on every rank).
    pub fn batches_per_epoch(&self) -> usize {
        let (len, global) = (self.global.len(), self.global.batch_size());
        len / global + usize::from(len % global >= self.world_size)
    }

    /// This rank's batches of the next epoch (a fresh shuffle, the same on every rank).
    pub fn epoch(&mut self) -> Vec<Vec<usize>> {
        let (rank, world) = (self.rank, self.world_size);
        self.global
            .epoch()
            .filter_map(|batch| {
                let usable = batch.len() - batch.len() % world;
                (usable > 0).then(|| {
                    batch[..usable]
                        .iter()
                        .skip(rank)
                        .step_by(world)
                        .copied()
                        .collect()
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_equal_and_cover_all_but_len_mod_world() {
        let (len, world) = (103, 3);
        let mut samplers: Vec<_> = (0..world)
            .map(|r| DistributedSampler::new(len, 8, 5, r, world).unwrap())
            .collect();
        for _ in 0..2 {
            let epochs: Vec<Vec<Vec<usize>>> = samplers.iter_mut().map(|s| s.epoch()).collect();
            let counts: Vec<usize> = epochs.iter().map(Vec::len).collect();
            assert_eq!(counts, [samplers[0].batches_per_epoch(); 3]);
            for step in 0..counts[0] {
                let sizes: Vec<usize> = epochs.iter().map(|e| e[step].len()).collect();
                assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
            }
            let mut all: Vec<usize> = epochs.concat().concat();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), len - len % world);
        }
    }

    #[test]
    fn epochs_reshuffle_and_seeds_matter() {
        let mut s = DistributedSampler::new(50, 5, 1, 1, 2).unwrap();
        let (a, b) = (s.epoch(), s.epoch());
        assert_ne!(a, b);
        assert_ne!(a, DistributedSampler::new(50, 5, 2, 1, 2).unwrap().epoch());
        assert_eq!(a, DistributedSampler::new(50, 5, 1, 1, 2).unwrap().epoch());
    }

    #[test]
    #[should_panic(expected = "rank 2 is not in a world of 2")]
    fn a_rank_outside_the_world_panics() {
        let _ = DistributedSampler::new(10, 2, 0, 2, 2);
    }
}

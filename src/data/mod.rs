//! Data sets for examples and benchmarks: an [IDX](idx) file reader, the [MNIST](Mnist) loader,
//! a seeded, shuffled [batch sampler](BatchSampler), and [character-level text](text) for
//! language models.
//!
//! The repository ships the four MNIST files under `data/mnist/` (gzipped IDX, CC BY-SA 3.0:
//! see `data/mnist/README.md`), so a fresh clone trains with no download. Any folder holding the
//! four standard file names, gzipped or plain, loads the same way, Fashion-MNIST included.
//!
//! ```
//! use adjoint::data::{Normalization, Split};
//!
//! let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");
//! let test = Split::load(
//!     format!("{dir}/t10k-images-idx3-ubyte.gz"),
//!     format!("{dir}/t10k-labels-idx1-ubyte.gz"),
//! )?;
//! assert_eq!(test.shape(), [10_000, 28, 28]);
//!
//! let mut sampler = test.sampler(128, 42)?;
//! for indices in sampler.epoch() {
//!     let batch = test.batch(indices, Normalization::Standard)?;
//!     assert_eq!(batch.images.len(), indices.len() * 28 * 28);
//!     assert_eq!(batch.labels.len(), indices.len());
//! }
//! # Ok::<(), adjoint::data::DataError>(())
//! ```
//!
//! Every failure (a missing, truncated or corrupt file, a wrong file type, inconsistent counts) is
//! reported as a [`DataError`] naming the file; nothing here panics on bad input.

pub mod idx;
pub mod mnist;
pub mod text;

pub use idx::{IdxArray, IdxType};
pub use mnist::{Batch, MNIST_MEAN, MNIST_STD, Mnist, Normalization, Split};

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while loading or batching a data set.
///
/// Each file-related variant carries the path of the offending file; [`Display`](fmt::Display)
/// gives a one-line message with the path and what was wrong.
///
/// ```
/// use adjoint::data::{DataError, Mnist};
///
/// let err = Mnist::load("/no/such/folder").unwrap_err();
/// assert!(matches!(err, DataError::Missing { .. }));
/// assert!(err.to_string().contains("/no/such/folder/train-images-idx3-ubyte"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DataError {
    /// The file does not exist.
    Missing {
        /// The path looked for.
        path: PathBuf,
        /// A second name tried for the same file (the plain name next to a `.gz` one).
        also_tried: Option<PathBuf>,
    },
    /// Reading a plain (uncompressed) file failed.
    Io {
        /// The file being read.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The file starts with the gzip magic bytes but its compressed stream is damaged or cut
    /// short (bad header, bad deflate data, CRC or length mismatch, missing trailer).
    CorruptGzip {
        /// The file being read.
        path: PathBuf,
        /// The decompressor's error.
        source: io::Error,
    },
    /// The (decompressed) file ends inside the IDX header.
    TruncatedHeader {
        /// The file being read.
        path: PathBuf,
        /// Header size in bytes: 4 for the magic number plus 4 per dimension.
        expected: usize,
        /// Bytes actually present.
        actual: usize,
    },
    /// The (decompressed) file ends before all the elements announced by the header.
    TruncatedPayload {
        /// The file being read.
        path: PathBuf,
        /// Payload size in bytes implied by the header's dimensions.
        expected: u64,
        /// Payload bytes actually present.
        actual: u64,
    },
    /// The (decompressed) file has more payload bytes than the header announces.
    TrailingData {
        /// The file being read.
        path: PathBuf,
        /// Payload size in bytes implied by the header's dimensions.
        expected: u64,
        /// Payload bytes actually present.
        actual: u64,
    },
    /// The first four bytes are not an IDX magic number (two zero bytes, a known type code, the
    /// rank).
    BadMagic {
        /// The file being read.
        path: PathBuf,
        /// The first four bytes, big-endian.
        found: u32,
    },
    /// A valid IDX file of the wrong element type or rank, e.g. a label file (`0x00000801`) where
    /// images (`0x00000803`) were expected.
    WrongKind {
        /// The file being read.
        path: PathBuf,
        /// The magic number wanted.
        expected: u32,
        /// The magic number found.
        found: u32,
    },
    /// The header's dimensions are unusable (zero-sized images, a size overflowing memory).
    BadDimensions {
        /// The file being read.
        path: PathBuf,
        /// The dimensions from the header.
        dims: Vec<usize>,
        /// What is wrong with them.
        reason: &'static str,
    },
    /// An image file and its label file hold different numbers of examples.
    CountMismatch {
        /// The image file.
        images: PathBuf,
        /// The label file.
        labels: PathBuf,
        /// Number of images.
        image_count: usize,
        /// Number of labels.
        label_count: usize,
    },
    /// The training and test images have different sizes.
    ShapeMismatch {
        /// The training image file.
        train: PathBuf,
        /// The test image file.
        test: PathBuf,
        /// Rows and columns of a training image.
        train_dims: (usize, usize),
        /// Rows and columns of a test image.
        test_dims: (usize, usize),
    },
    /// An example index past the end of the data set.
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The number of examples.
        len: usize,
    },
    /// A batch size of zero.
    InvalidBatchSize,
}

impl DataError {
    /// The file the error is about, if it is about one file.
    ///
    /// ```
    /// use adjoint::data::idx;
    ///
    /// let err = idx::read_u8("/no/such/file", 1).unwrap_err();
    /// assert_eq!(err.path(), Some(std::path::Path::new("/no/such/file")));
    /// ```
    pub fn path(&self) -> Option<&Path> {
        match self {
            DataError::Missing { path, .. }
            | DataError::Io { path, .. }
            | DataError::CorruptGzip { path, .. }
            | DataError::TruncatedHeader { path, .. }
            | DataError::TruncatedPayload { path, .. }
            | DataError::TrailingData { path, .. }
            | DataError::BadMagic { path, .. }
            | DataError::WrongKind { path, .. }
            | DataError::BadDimensions { path, .. } => Some(path),
            DataError::CountMismatch { .. }
            | DataError::ShapeMismatch { .. }
            | DataError::IndexOutOfRange { .. }
            | DataError::InvalidBatchSize => None,
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::Missing { path, also_tried } => {
                write!(f, "{}: file not found", path.display())?;
                if let Some(other) = also_tried {
                    write!(f, " (nor {})", other.display())?;
                }
                Ok(())
            }
            DataError::Io { path, source } => {
                write!(f, "{}: read error: {source}", path.display())
            }
            DataError::CorruptGzip { path, source } => {
                write!(f, "{}: corrupt gzip data: {source}", path.display())
            }
            DataError::TruncatedHeader {
                path,
                expected,
                actual,
            } => write!(
                f,
                "{}: truncated IDX header: expected {expected} bytes, found {actual}",
                path.display()
            ),
            DataError::TruncatedPayload {
                path,
                expected,
                actual,
            } => write!(
                f,
                "{}: truncated IDX payload: expected {expected} bytes, found {actual}",
                path.display()
            ),
            DataError::TrailingData {
                path,
                expected,
                actual,
            } => write!(
                f,
                "{}: IDX payload too long: expected {expected} bytes, found {actual}",
                path.display()
            ),
            DataError::BadMagic { path, found } => write!(
                f,
                "{}: not an IDX file: bad magic number {found:#010x}",
                path.display()
            ),
            DataError::WrongKind {
                path,
                expected,
                found,
            } => write!(
                f,
                "{}: wrong IDX element type or rank: expected magic {expected:#010x} ({}), \
                 found {found:#010x} ({})",
                path.display(),
                idx::describe_magic(*expected),
                idx::describe_magic(*found),
            ),
            DataError::BadDimensions { path, dims, reason } => write!(
                f,
                "{}: bad IDX dimensions {dims:?}: {reason}",
                path.display()
            ),
            DataError::CountMismatch {
                images,
                labels,
                image_count,
                label_count,
            } => write!(
                f,
                "count mismatch: {} holds {image_count} images but {} holds {label_count} labels",
                images.display(),
                labels.display()
            ),
            DataError::ShapeMismatch {
                train,
                test,
                train_dims,
                test_dims,
            } => write!(
                f,
                "image size mismatch: {} has {}x{} images, {} has {}x{}",
                train.display(),
                train_dims.0,
                train_dims.1,
                test.display(),
                test_dims.0,
                test_dims.1
            ),
            DataError::IndexOutOfRange { index, len } => write!(
                f,
                "example index {index} out of range for a data set of {len} examples"
            ),
            DataError::InvalidBatchSize => write!(f, "batch size must be at least 1"),
        }
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataError::Io { source, .. } | DataError::CorruptGzip { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A small deterministic random number generator: PCG32 (XSH-RR, O'Neill 2014).
///
/// Used for shuffling only; it is not meant for cryptography or for statistics that need more
/// than 64 bits of state.
#[derive(Clone, Debug)]
struct Pcg32 {
    state: u64,
    inc: u64,
}

impl Pcg32 {
    const MULTIPLIER: u64 = 6_364_136_223_846_793_005;

    fn new(seed: u64) -> Self {
        // The reference `pcg32_srandom_r` with a fixed stream.
        let mut rng = Pcg32 {
            state: 0,
            inc: (0xda3e_39cb_94b9_5bdb << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }

    fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(Self::MULTIPLIER).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    fn next_u64(&mut self) -> u64 {
        (u64::from(self.next_u32()) << 32) | u64::from(self.next_u32())
    }

    /// A uniform integer in `0..bound` (`bound > 0`), without modulo bias (Lemire 2019).
    fn below(&mut self, bound: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(bound);
        if (m as u64) < bound {
            let threshold = bound.wrapping_neg() % bound;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(bound);
            }
        }
        (m >> 64) as u64
    }

    /// Fisher–Yates shuffle.
    fn shuffle(&mut self, items: &mut [usize]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// Yields shuffled batches of example indices, reshuffled every epoch, fully determined by a
/// seed.
///
/// Each call to [`epoch`](BatchSampler::epoch) draws a fresh permutation of `0..len` from the
/// sampler's PCG32 generator and iterates over it in chunks of `batch_size`; the last batch is
/// shorter unless [`drop_last`](BatchSampler::drop_last) is set. Two samplers built with the
/// same arguments produce the same batches, epoch after epoch.
///
/// ```
/// use adjoint::data::BatchSampler;
///
/// let mut sampler = BatchSampler::new(10, 4, 7)?;
/// let batches: Vec<Vec<usize>> = sampler.epoch().map(|b| b.to_vec()).collect();
/// assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 2]);
///
/// // Every index appears exactly once per epoch.
/// let mut all: Vec<usize> = batches.concat();
/// all.sort();
/// assert_eq!(all, (0..10).collect::<Vec<_>>());
///
/// // Same seed, same batches.
/// let mut again = BatchSampler::new(10, 4, 7)?;
/// assert_eq!(again.epoch().map(|b| b.to_vec()).collect::<Vec<_>>(), batches);
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
#[derive(Clone, Debug)]
pub struct BatchSampler {
    order: Vec<usize>,
    batch_size: usize,
    drop_last: bool,
    rng: Pcg32,
}

impl BatchSampler {
    /// A sampler over `len` examples in batches of `batch_size`, seeded with `seed`.
    ///
    /// Returns [`DataError::InvalidBatchSize`] if `batch_size` is zero.
    ///
    /// ```
    /// use adjoint::data::{BatchSampler, DataError};
    ///
    /// assert!(BatchSampler::new(100, 32, 0).is_ok());
    /// assert!(matches!(BatchSampler::new(100, 0, 0), Err(DataError::InvalidBatchSize)));
    /// ```
    pub fn new(len: usize, batch_size: usize, seed: u64) -> Result<Self, DataError> {
        if batch_size == 0 {
            return Err(DataError::InvalidBatchSize);
        }
        Ok(BatchSampler {
            order: (0..len).collect(),
            batch_size,
            drop_last: false,
            rng: Pcg32::new(seed),
        })
    }

    /// Whether to skip the last batch of an epoch when it is shorter than `batch_size`
    /// (default `false`, as in PyTorch's `DataLoader`).
    ///
    /// ```
    /// use adjoint::data::BatchSampler;
    ///
    /// let mut sampler = BatchSampler::new(10, 4, 0)?.drop_last(true);
    /// assert_eq!(sampler.batches_per_epoch(), 2);
    /// assert!(sampler.epoch().all(|batch| batch.len() == 4));
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// The number of examples sampled from.
    ///
    /// ```
    /// # use adjoint::data::BatchSampler;
    /// assert_eq!(BatchSampler::new(10, 4, 0)?.len(), 10);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there are no examples to sample.
    ///
    /// ```
    /// # use adjoint::data::BatchSampler;
    /// let mut sampler = BatchSampler::new(0, 4, 0)?;
    /// assert!(sampler.is_empty());
    /// assert_eq!(sampler.epoch().count(), 0);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The batch size.
    ///
    /// ```
    /// # use adjoint::data::BatchSampler;
    /// assert_eq!(BatchSampler::new(10, 4, 0)?.batch_size(), 4);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The number of batches each epoch yields.
    ///
    /// ```
    /// # use adjoint::data::BatchSampler;
    /// assert_eq!(BatchSampler::new(60_000, 128, 0)?.batches_per_epoch(), 469);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn batches_per_epoch(&self) -> usize {
        if self.drop_last {
            self.order.len() / self.batch_size
        } else {
            self.order.len().div_ceil(self.batch_size)
        }
    }

    /// Shuffles the examples and returns an iterator over this epoch's batches of indices.
    ///
    /// ```
    /// # use adjoint::data::BatchSampler;
    /// let mut sampler = BatchSampler::new(1000, 100, 1)?;
    /// let first: Vec<usize> = sampler.epoch().flatten().copied().collect();
    /// let second: Vec<usize> = sampler.epoch().flatten().copied().collect();
    /// assert_ne!(first, second); // reshuffled
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn epoch(&mut self) -> Batches<'_> {
        self.rng.shuffle(&mut self.order);
        let end = if self.drop_last {
            self.order.len() - self.order.len() % self.batch_size
        } else {
            self.order.len()
        };
        Batches {
            rest: &self.order[..end],
            batch_size: self.batch_size,
        }
    }
}

/// The batches of one epoch, as slices of example indices: see [`BatchSampler::epoch`].
#[derive(Clone, Debug)]
pub struct Batches<'a> {
    rest: &'a [usize],
    batch_size: usize,
}

impl<'a> Iterator for Batches<'a> {
    type Item = &'a [usize];

    fn next(&mut self) -> Option<&'a [usize]> {
        if self.rest.is_empty() {
            return None;
        }
        let (batch, rest) = self.rest.split_at(self.batch_size.min(self.rest.len()));
        self.rest = rest;
        Some(batch)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len().div_ceil(self.batch_size);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Batches<'_> {}

impl std::iter::FusedIterator for Batches<'_> {}

#[cfg(test)]
mod tests {
    use super::Pcg32;

    #[test]
    fn pcg32_matches_reference() {
        // pcg32-global-demo with `pcg32_srandom(42, 54)` prints 0xa15c02b7 0x7b47f409 ...
        let mut rng = Pcg32 {
            state: 0,
            inc: (54 << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(42);
        rng.next_u32();
        let out: Vec<u32> = (0..3).map(|_| rng.next_u32()).collect();
        assert_eq!(out, [0xa15c_02b7, 0x7b47_f409, 0xba1d_3330]);
    }

    #[test]
    fn below_is_in_range() {
        let mut rng = Pcg32::new(3);
        for bound in [1u64, 2, 3, 7, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(rng.below(bound) < bound);
            }
        }
    }
}

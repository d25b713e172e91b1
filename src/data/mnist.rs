//! The MNIST loader: the four standard IDX files of a folder, gzipped or plain.
//!
//! Works for any data set in the MNIST layout (Fashion-MNIST, KMNIST, ...): 8-bit grayscale
//! images in `*-images-idx3-ubyte` and 8-bit labels in `*-labels-idx1-ubyte`.
//!
//! ```no_run
//! use adjoint::data::{Mnist, Normalization};
//!
//! let mnist = Mnist::load("data/mnist")?;
//! assert_eq!(mnist.train.len(), 60_000);
//! assert_eq!(mnist.test.shape(), [10_000, 28, 28]);
//! let x: Vec<f32> = mnist.train.images_f32(Normalization::Standard);
//! # Ok::<(), adjoint::data::DataError>(())
//! ```

use std::path::{Path, PathBuf};

use super::{BatchSampler, DataError, idx};

/// File name of the training images (without `.gz`).
pub const TRAIN_IMAGES: &str = "train-images-idx3-ubyte";
/// File name of the training labels (without `.gz`).
pub const TRAIN_LABELS: &str = "train-labels-idx1-ubyte";
/// File name of the test images (without `.gz`).
pub const TEST_IMAGES: &str = "t10k-images-idx3-ubyte";
/// File name of the test labels (without `.gz`).
pub const TEST_LABELS: &str = "t10k-labels-idx1-ubyte";

/// Mean pixel value of the MNIST training set after scaling to `[0, 1]`, as used by PyTorch's
/// `examples/mnist` (`transforms.Normalize((0.1307,), (0.3081,))`).
pub const MNIST_MEAN: f32 = 0.1307;
/// Standard deviation of the MNIST training pixels after scaling to `[0, 1]`, as used by
/// PyTorch's `examples/mnist`.
pub const MNIST_STD: f32 = 0.3081;

/// How to turn 8-bit pixels into `f32` inputs.
///
/// ```
/// use adjoint::data::Normalization;
///
/// assert_eq!(Normalization::Unit.apply(255), 1.0);
/// assert_eq!(Normalization::Standard.apply(0), -0.1307 / 0.3081);
/// let n = Normalization::MeanStd { mean: 0.5, std: 0.5 };
/// assert_eq!(n.apply(0), -1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Normalization {
    /// `x / 255`, in `[0, 1]`.
    Unit,
    /// `(x / 255 - MNIST_MEAN) / MNIST_STD`: mean about 0 and standard deviation about 1 on
    /// MNIST, as in PyTorch's `examples/mnist`.
    Standard,
    /// `(x / 255 - mean) / std`, for other data sets (Fashion-MNIST: about 0.2860 and 0.3530).
    MeanStd {
        /// Mean of the `[0, 1]`-scaled pixels.
        mean: f32,
        /// Standard deviation of the `[0, 1]`-scaled pixels.
        std: f32,
    },
}

impl Normalization {
    /// The normalized value of one pixel.
    ///
    /// ```
    /// # use adjoint::data::Normalization;
    /// assert_eq!(Normalization::Unit.apply(51), 0.2);
    /// ```
    pub fn apply(self, pixel: u8) -> f32 {
        let x = f32::from(pixel) / 255.0;
        match self {
            Normalization::Unit => x,
            Normalization::Standard => (x - MNIST_MEAN) / MNIST_STD,
            Normalization::MeanStd { mean, std } => (x - mean) / std,
        }
    }

    /// All 256 values, for converting many pixels by lookup.
    fn table(self) -> [f32; 256] {
        std::array::from_fn(|i| self.apply(i as u8))
    }
}

/// One part (training or test) of an MNIST-style data set: `len` images of `rows × cols` 8-bit
/// pixels, row-major, and one label per image.
///
/// ```
/// use adjoint::data::Split;
///
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");
/// let test = Split::load(
///     format!("{dir}/t10k-images-idx3-ubyte.gz"),
///     format!("{dir}/t10k-labels-idx1-ubyte.gz"),
/// )?;
/// assert_eq!(test.len(), 10_000);
/// assert_eq!((test.rows(), test.cols()), (28, 28));
/// assert_eq!(test.labels()[0], 7);
/// assert_eq!(test.image(0).map(<[u8]>::len), Some(784));
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    images: Vec<u8>,
    labels: Vec<u8>,
    rows: usize,
    cols: usize,
}

impl Split {
    /// Loads an image file (`u8`, rank 3) and its label file (`u8`, rank 1), each gzipped or
    /// plain.
    ///
    /// Besides the errors of [`idx::read_u8`], returns
    /// [`CountMismatch`](DataError::CountMismatch) if the files hold different numbers of
    /// examples and [`BadDimensions`](DataError::BadDimensions) for zero-sized images.
    ///
    /// ```
    /// use adjoint::data::{DataError, Split};
    ///
    /// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");
    /// let err = Split::load(
    ///     format!("{dir}/t10k-images-idx3-ubyte.gz"),
    ///     format!("{dir}/train-labels-idx1-ubyte.gz"),
    /// )
    /// .unwrap_err();
    /// assert!(matches!(
    ///     err,
    ///     DataError::CountMismatch { image_count: 10_000, label_count: 60_000, .. }
    /// ));
    /// ```
    pub fn load(images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Result<Split, DataError> {
        let (images_path, labels_path) = (images.as_ref(), labels.as_ref());
        let images = idx::read_u8(images_path, 3)?;
        let labels = idx::read_u8(labels_path, 1)?;
        let [count, rows, cols] = images.dims[..] else {
            // `read_u8` checked the rank; kept as an error rather than a panic.
            return Err(DataError::BadDimensions {
                path: images_path.to_path_buf(),
                dims: images.dims,
                reason: "images need exactly 3 dimensions",
            });
        };
        if rows == 0 || cols == 0 {
            return Err(DataError::BadDimensions {
                path: images_path.to_path_buf(),
                dims: images.dims,
                reason: "images must have at least one row and one column",
            });
        }
        if count != labels.data.len() {
            return Err(DataError::CountMismatch {
                images: images_path.to_path_buf(),
                labels: labels_path.to_path_buf(),
                image_count: count,
                label_count: labels.data.len(),
            });
        }
        Ok(Split {
            images: images.data,
            labels: labels.data,
            rows,
            cols,
        })
    }

    /// The number of examples.
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// assert_eq!(Mnist::load("data/mnist")?.train.len(), 60_000);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no examples.
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// assert!(!Mnist::load("data/mnist")?.test.is_empty());
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Rows of one image (28 for MNIST).
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// assert_eq!(Mnist::load("data/mnist")?.test.rows(), 28);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of one image (28 for MNIST).
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// assert_eq!(Mnist::load("data/mnist")?.test.cols(), 28);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Pixels per image, `rows * cols` (784 for MNIST).
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// assert_eq!(Mnist::load("data/mnist")?.test.image_size(), 784);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn image_size(&self) -> usize {
        self.rows * self.cols
    }

    /// `[len, rows, cols]`, the shape of [`images`](Split::images).
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// assert_eq!(Mnist::load("data/mnist")?.train.shape(), [60_000, 28, 28]);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn shape(&self) -> [usize; 3] {
        [self.len(), self.rows, self.cols]
    }

    /// All pixels, image after image, each image row-major: `len * rows * cols` bytes.
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// let test = Mnist::load("data/mnist")?.test;
    /// assert_eq!(test.images().len(), 10_000 * 784);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn images(&self) -> &[u8] {
        &self.images
    }

    /// All labels, one per image (digits 0 to 9 for MNIST).
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// let train = Mnist::load("data/mnist")?.train;
    /// assert_eq!(train.labels()[..4], [5, 0, 4, 1]);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn labels(&self) -> &[u8] {
        &self.labels
    }

    /// The pixels of image `i`, `None` past the end.
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// let test = Mnist::load("data/mnist")?.test;
    /// assert_eq!(test.image(0).unwrap().len(), 784);
    /// assert!(test.image(10_000).is_none());
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn image(&self, i: usize) -> Option<&[u8]> {
        let size = self.image_size();
        self.images
            .get(i.checked_mul(size)?..i.checked_add(1)?.checked_mul(size)?)
    }

    /// All pixels converted to `f32` with `normalization`, in the layout of
    /// [`images`](Split::images).
    ///
    /// [`Normalization::Unit`] divides by 255; [`Normalization::Standard`] then subtracts
    /// [`MNIST_MEAN`] and divides by [`MNIST_STD`], like PyTorch's `examples/mnist`.
    ///
    /// ```no_run
    /// use adjoint::data::{Mnist, Normalization};
    ///
    /// let train = Mnist::load("data/mnist")?.train;
    /// let x = train.images_f32(Normalization::Standard);
    /// let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / x.len() as f64;
    /// assert!(mean.abs() < 1e-3);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn images_f32(&self, normalization: Normalization) -> Vec<f32> {
        let table = normalization.table();
        self.images.iter().map(|&p| table[usize::from(p)]).collect()
    }

    /// Gathers the examples at `indices` (for instance a batch from a [`BatchSampler`]) into a
    /// [`Batch`] of normalized images and their labels.
    ///
    /// Returns [`DataError::IndexOutOfRange`] for an index `>= len`.
    ///
    /// ```
    /// use adjoint::data::{Normalization, Split};
    ///
    /// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");
    /// let test = Split::load(
    ///     format!("{dir}/t10k-images-idx3-ubyte.gz"),
    ///     format!("{dir}/t10k-labels-idx1-ubyte.gz"),
    /// )?;
    /// let batch = test.batch(&[2, 0, 1], Normalization::Unit)?;
    /// assert_eq!(batch.shape, [3, 28, 28]);
    /// assert_eq!(batch.labels, [1, 7, 2]);
    /// assert!(test.batch(&[10_000], Normalization::Unit).is_err());
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn batch(
        &self,
        indices: &[usize],
        normalization: Normalization,
    ) -> Result<Batch, DataError> {
        let table = normalization.table();
        let size = self.image_size();
        let mut images = Vec::with_capacity(indices.len() * size);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            let image = self.image(i).ok_or(DataError::IndexOutOfRange {
                index: i,
                len: self.len(),
            })?;
            images.extend(image.iter().map(|&p| table[usize::from(p)]));
            labels.push(self.labels[i]);
        }
        Ok(Batch {
            images,
            labels,
            shape: [indices.len(), self.rows, self.cols],
        })
    }

    /// A [`BatchSampler`] over this split's examples.
    ///
    /// ```no_run
    /// use adjoint::data::{Mnist, Normalization};
    ///
    /// let mnist = Mnist::load("data/mnist")?;
    /// let mut sampler = mnist.train.sampler(128, 0)?;
    /// for epoch in 0..2 {
    ///     for indices in sampler.epoch() {
    ///         let batch = mnist.train.batch(indices, Normalization::Standard)?;
    ///         // forward, loss, backward, update ...
    ///         # let _ = (epoch, batch);
    ///     }
    /// }
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn sampler(&self, batch_size: usize, seed: u64) -> Result<BatchSampler, DataError> {
        BatchSampler::new(self.len(), batch_size, seed)
    }

    /// The pixel and label vectors, giving up the split.
    ///
    /// ```no_run
    /// # use adjoint::data::Mnist;
    /// let (images, labels) = Mnist::load("data/mnist")?.test.into_parts();
    /// assert_eq!(images.len(), labels.len() * 784);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn into_parts(self) -> (Vec<u8>, Vec<u8>) {
        (self.images, self.labels)
    }
}

/// A batch of examples gathered by [`Split::batch`].
///
/// ```
/// # use adjoint::data::{Normalization, Split};
/// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");
/// # let test = Split::load(
/// #     format!("{dir}/t10k-images-idx3-ubyte.gz"),
/// #     format!("{dir}/t10k-labels-idx1-ubyte.gz"),
/// # )?;
/// let batch = test.batch(&[0, 1], Normalization::Standard)?;
/// let [n, rows, cols] = batch.shape;
/// assert_eq!(batch.images.len(), n * rows * cols);
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Normalized pixels, `shape[0]` images of `shape[1] × shape[2]`, row-major.
    pub images: Vec<f32>,
    /// One label per image.
    pub labels: Vec<u8>,
    /// `[batch size, rows, cols]`.
    pub shape: [usize; 3],
}

/// An MNIST-style data set: a training and a test [`Split`] with images of the same size.
///
/// ```no_run
/// use adjoint::data::Mnist;
///
/// let mnist = Mnist::load("data/mnist")?; // or a Fashion-MNIST folder
/// println!(
///     "{} training and {} test images of {}x{}",
///     mnist.train.len(),
///     mnist.test.len(),
///     mnist.train.rows(),
///     mnist.train.cols(),
/// );
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mnist {
    /// The training split (60,000 examples for MNIST).
    pub train: Split,
    /// The test split (10,000 examples for MNIST).
    pub test: Split,
}

impl Mnist {
    /// Loads the four standard files from `dir`: [`TRAIN_IMAGES`], [`TRAIN_LABELS`],
    /// [`TEST_IMAGES`], [`TEST_LABELS`], each as `NAME.gz` or, if that does not exist, `NAME`.
    ///
    /// Whether a file is compressed is decided by its first bytes, not its name. Errors name
    /// the offending file: [`Missing`](DataError::Missing) (with both names tried), the file
    /// errors of [`idx::read_u8`], [`CountMismatch`](DataError::CountMismatch) between images
    /// and labels, and [`ShapeMismatch`](DataError::ShapeMismatch) when training and test
    /// images differ in size.
    ///
    /// ```no_run
    /// use adjoint::data::Mnist;
    ///
    /// let mnist = Mnist::load(concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist"))?;
    /// assert_eq!(mnist.train.shape(), [60_000, 28, 28]);
    /// assert_eq!(mnist.test.shape(), [10_000, 28, 28]);
    /// # Ok::<(), adjoint::data::DataError>(())
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<Mnist, DataError> {
        let dir = dir.as_ref();
        let train_images = locate(dir, TRAIN_IMAGES)?;
        let train_labels = locate(dir, TRAIN_LABELS)?;
        let test_images = locate(dir, TEST_IMAGES)?;
        let test_labels = locate(dir, TEST_LABELS)?;
        let train = Split::load(&train_images, &train_labels)?;
        let test = Split::load(&test_images, &test_labels)?;
        if (train.rows, train.cols) != (test.rows, test.cols) {
            return Err(DataError::ShapeMismatch {
                train: train_images,
                test: test_images,
                train_dims: (train.rows, train.cols),
                test_dims: (test.rows, test.cols),
            });
        }
        Ok(Mnist { train, test })
    }
}

/// `dir/name.gz` if it exists, else `dir/name` if it exists, else [`DataError::Missing`].
fn locate(dir: &Path, name: &str) -> Result<PathBuf, DataError> {
    let gz = dir.join(format!("{name}.gz"));
    let plain = dir.join(name);
    if gz.is_file() {
        Ok(gz)
    } else if plain.is_file() {
        Ok(plain)
    } else {
        Err(DataError::Missing {
            path: plain,
            also_tried: Some(gz),
        })
    }
}

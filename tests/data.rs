//! Tests of `adjoint::data`: the shipped MNIST files, and one small hand-made file per error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use adjoint::data::{BatchSampler, DataError, Mnist, Normalization, Split, idx};
use flate2::Compression;
use flate2::write::GzEncoder;

const MNIST_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "adjoint-data-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// Writes `bytes` to `name` in the directory and returns its path.
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An IDX file: magic, big-endian dimensions, payload.
fn idx_bytes(magic: u32, dims: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(payload);
    out
}

fn images_file(count: u32, rows: u32, cols: u32) -> Vec<u8> {
    let payload: Vec<u8> = (0..count * rows * cols).map(|i| (i % 256) as u8).collect();
    idx_bytes(idx::IMAGES_MAGIC, &[count, rows, cols], &payload)
}

fn labels_file(count: u32) -> Vec<u8> {
    let payload: Vec<u8> = (0..count).map(|i| (i % 10) as u8).collect();
    idx_bytes(idx::LABELS_MAGIC, &[count], &payload)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Writes a small, consistent MNIST-style folder: train 5 and test 3 images of 4x3.
fn write_small_mnist(dir: &TempDir, gz: bool) {
    let files = [
        ("train-images-idx3-ubyte", images_file(5, 4, 3)),
        ("train-labels-idx1-ubyte", labels_file(5)),
        ("t10k-images-idx3-ubyte", images_file(3, 4, 3)),
        ("t10k-labels-idx1-ubyte", labels_file(3)),
    ];
    for (name, bytes) in files {
        if gz {
            dir.write(&format!("{name}.gz"), &gzip(&bytes));
        } else {
            dir.write(name, &bytes);
        }
    }
}

#[test]
fn shipped_mnist_loads() {
    let mnist = Mnist::load(MNIST_DIR).unwrap();
    assert_eq!(mnist.train.shape(), [60_000, 28, 28]);
    assert_eq!(mnist.test.shape(), [10_000, 28, 28]);
    assert_eq!(mnist.train.images().len(), 60_000 * 784);
    assert_eq!(mnist.test.images().len(), 10_000 * 784);
    assert_eq!(mnist.train.labels()[..10], [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]);
    assert_eq!(mnist.test.labels()[..10], [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]);

    let mut counts = [0usize; 10];
    for &label in mnist.train.labels() {
        counts[usize::from(label)] += 1;
    }
    assert_eq!(
        counts,
        [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    );
    let mut counts = [0usize; 10];
    for &label in mnist.test.labels() {
        counts[usize::from(label)] += 1;
    }
    assert_eq!(
        counts,
        [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    );

    // Pixel sums, checked independently with Python's gzip module.
    let sum = |px: &[u8]| px.iter().map(|&p| u64::from(p)).sum::<u64>();
    assert_eq!(sum(mnist.train.images()), 1_567_298_545);
    assert_eq!(sum(mnist.test.images()), 264_923_200);
    assert_eq!(sum(mnist.test.image(0).unwrap()), 18_454);

    // Standardized training pixels have mean about 0 and standard deviation about 1.
    let x = mnist.train.images_f32(Normalization::Standard);
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = x
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    assert!(mean.abs() < 1e-3, "mean {mean}");
    assert!((var.sqrt() - 1.0).abs() < 1e-3, "std {}", var.sqrt());

    let unit = mnist.test.images_f32(Normalization::Unit);
    assert!(unit.iter().all(|&v| (0.0..=1.0).contains(&v)));
    assert_eq!(unit.iter().copied().fold(0.0, f32::max), 1.0);
}

#[test]
fn shipped_test_split_batches() {
    let test = Split::load(
        Path::new(MNIST_DIR).join("t10k-images-idx3-ubyte.gz"),
        Path::new(MNIST_DIR).join("t10k-labels-idx1-ubyte.gz"),
    )
    .unwrap();
    let mut sampler = test.sampler(128, 42).unwrap();
    assert_eq!(sampler.batches_per_epoch(), 79);
    let mut seen = vec![false; test.len()];
    let mut batches = 0;
    for indices in sampler.epoch() {
        let batch = test.batch(indices, Normalization::Unit).unwrap();
        assert_eq!(batch.shape, [indices.len(), 28, 28]);
        assert_eq!(batch.images.len(), indices.len() * 784);
        for (k, &i) in indices.iter().enumerate() {
            assert!(!seen[i]);
            seen[i] = true;
            assert_eq!(batch.labels[k], test.labels()[i]);
            assert_eq!(
                batch.images[k * 784..(k + 1) * 784],
                test.image(i)
                    .unwrap()
                    .iter()
                    .map(|&p| f32::from(p) / 255.0)
                    .collect::<Vec<_>>()[..]
            );
        }
        batches += 1;
    }
    assert_eq!(batches, 79);
    assert!(seen.iter().all(|&s| s));

    let err = test.batch(&[0, 10_000], Normalization::Unit).unwrap_err();
    assert!(matches!(
        err,
        DataError::IndexOutOfRange {
            index: 10_000,
            len: 10_000
        }
    ));
}

#[test]
fn missing_file() {
    let dir = TempDir::new("missing");
    let err = Mnist::load(dir.path()).unwrap_err();
    let DataError::Missing { path, also_tried } = &err else {
        panic!("expected Missing, got {err:?}");
    };
    assert_eq!(path, &dir.path().join("train-images-idx3-ubyte"));
    assert_eq!(
        also_tried.as_deref(),
        Some(dir.path().join("train-images-idx3-ubyte.gz").as_path())
    );
    assert!(err.to_string().contains("train-images-idx3-ubyte"));
    assert!(err.to_string().contains(&*dir.path().to_string_lossy()));

    // Only the test labels missing: the error names that file.
    write_small_mnist(&dir, true);
    std::fs::remove_file(dir.path().join("t10k-labels-idx1-ubyte.gz")).unwrap();
    let err = Mnist::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, DataError::Missing { path, .. } if path.ends_with("t10k-labels-idx1-ubyte")),
        "{err:?}"
    );

    let missing = dir.path().join("nope");
    let err = idx::read_u8(&missing, 1).unwrap_err();
    assert!(matches!(&err, DataError::Missing { path, also_tried: None } if *path == missing));
    assert_eq!(err.path(), Some(missing.as_path()));
}

#[test]
fn truncated_header() {
    let dir = TempDir::new("header");
    let cases: [(&[u8], usize); 4] = [
        (&[], 0),
        (&[0, 0], 2),
        (&[0, 0, 8, 3], 4),
        (&[0, 0, 8, 3, 0, 0, 0, 2, 0, 0], 10),
    ];
    for (bytes, actual) in cases {
        for gz in [false, true] {
            let path = if gz {
                dir.write("images.gz", &gzip(bytes))
            } else {
                dir.write("images", bytes)
            };
            let err = idx::read_u8(&path, 3).unwrap_err();
            assert!(
                matches!(
                    &err,
                    DataError::TruncatedHeader { path: p, expected: 16, actual: a }
                        if *p == path && *a == actual
                ),
                "{bytes:?} gz={gz}: {err:?}"
            );
            assert!(err.to_string().contains("truncated IDX header"));
        }
    }
}

#[test]
fn truncated_payload() {
    let dir = TempDir::new("payload");
    let bytes = idx_bytes(idx::IMAGES_MAGIC, &[2, 3, 3], &[1; 10]);
    for gz in [false, true] {
        let path = if gz {
            dir.write("images.gz", &gzip(&bytes))
        } else {
            dir.write("images", &bytes)
        };
        let err = idx::read_u8(&path, 3).unwrap_err();
        assert!(
            matches!(
                &err,
                DataError::TruncatedPayload { path: p, expected: 18, actual: 10 } if *p == path
            ),
            "gz={gz}: {err:?}"
        );
        assert!(err.to_string().contains("expected 18 bytes, found 10"));
    }

    // A header claiming ~4 GB over a tiny payload fails cleanly, without allocating it all.
    let path = dir.write(
        "huge",
        &idx_bytes(idx::IMAGES_MAGIC, &[65_535, 65_535, 1], &[0; 100]),
    );
    let err = idx::read_u8(&path, 3).unwrap_err();
    assert!(
        matches!(err, DataError::TruncatedPayload { actual: 100, .. }),
        "{err:?}"
    );
}

#[test]
fn trailing_data() {
    let dir = TempDir::new("trailing");
    let path = dir.write(
        "labels",
        &idx_bytes(idx::LABELS_MAGIC, &[3], &[1, 2, 3, 4, 5]),
    );
    let err = idx::read_u8(&path, 1).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::TrailingData {
                expected: 3,
                actual: 5,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn bad_magic() {
    let dir = TempDir::new("magic");
    // Not starting with two zero bytes, and an undefined type code 0x0A.
    for magic in [0x1234_5678u32, 0x0000_0A01, 0x0100_0801] {
        let path = dir.write("labels", &idx_bytes(magic, &[1], &[0]));
        let err = idx::read_u8(&path, 1).unwrap_err();
        assert!(
            matches!(&err, DataError::BadMagic { path: p, found } if *p == path && *found == magic),
            "{magic:#x}: {err:?}"
        );
        assert!(err.to_string().contains("bad magic number"));
    }
}

#[test]
fn wrong_type_or_rank() {
    let dir = TempDir::new("kind");
    // A label file where images are expected, and f32 images.
    let labels = dir.write("labels", &labels_file(4));
    let err = idx::read_u8(&labels, 3).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::WrongKind {
                expected: 0x803,
                found: 0x801,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("u8, rank 1"));
    let floats = dir.write("floats", &idx_bytes(0x0D03, &[1, 1, 1], &[0; 4]));
    let err = idx::read_u8(&floats, 3).unwrap_err();
    assert!(
        matches!(err, DataError::WrongKind { found: 0x0D03, .. }),
        "{err:?}"
    );

    // Swapped files in an MNIST folder.
    write_small_mnist(&dir, false);
    std::fs::rename(
        dir.path().join("train-labels-idx1-ubyte"),
        dir.path().join("tmp"),
    )
    .unwrap();
    std::fs::rename(
        dir.path().join("train-images-idx3-ubyte"),
        dir.path().join("train-labels-idx1-ubyte"),
    )
    .unwrap();
    std::fs::rename(
        dir.path().join("tmp"),
        dir.path().join("train-images-idx3-ubyte"),
    )
    .unwrap();
    let err = Mnist::load(dir.path()).unwrap_err();
    assert!(matches!(err, DataError::WrongKind { .. }), "{err:?}");
}

#[test]
fn bad_dimensions() {
    let dir = TempDir::new("dims");
    let path = dir.write(
        "overflow",
        &idx_bytes(idx::IMAGES_MAGIC, &[u32::MAX; 3], &[]),
    );
    let err = idx::read_u8(&path, 3).unwrap_err();
    assert!(matches!(err, DataError::BadDimensions { .. }), "{err:?}");

    let images = dir.write("images", &idx_bytes(idx::IMAGES_MAGIC, &[2, 0, 5], &[]));
    let labels = dir.write("labels", &labels_file(2));
    let err = Split::load(&images, &labels).unwrap_err();
    let DataError::BadDimensions { path, dims, .. } = &err else {
        panic!("expected BadDimensions, got {err:?}");
    };
    assert_eq!((path, &dims[..]), (&images, &[2, 0, 5][..]));
}

#[test]
fn corrupt_gzip() {
    let dir = TempDir::new("gzip");
    let bytes = images_file(20, 8, 8);
    let good = gzip(&bytes);

    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    for b in &mut flipped[middle..middle + 4] {
        *b ^= 0x55;
    }
    let mut bad_crc = good.clone();
    let crc_at = bad_crc.len() - 8;
    bad_crc[crc_at] ^= 1;
    let cut = good[..good.len() - 10].to_vec();
    let mut bad_header = good.clone();
    bad_header[2] = 99; // compression method other than deflate
    let garbage = [0x1f, 0x8b, 1, 2, 3, 4, 5];

    for (what, file) in [
        ("flipped", &flipped[..]),
        ("crc", &bad_crc),
        ("cut", &cut),
        ("header", &bad_header),
        ("garbage", &garbage),
    ] {
        // The name says plain; the magic bytes say gzip.
        let path = dir.write("images", file);
        let err = idx::read_u8(&path, 3).unwrap_err();
        assert!(
            matches!(&err, DataError::CorruptGzip { path: p, .. } if *p == path),
            "{what}: {err:?}"
        );
        assert!(err.to_string().contains("corrupt gzip"), "{err}");
        assert!(std::error::Error::source(&err).is_some());
    }

    let path = dir.write("images", &good);
    assert_eq!(idx::read_u8(&path, 3).unwrap().data, bytes[16..]);
}

#[test]
fn plain_files_work() {
    let plain = TempDir::new("plain");
    write_small_mnist(&plain, false);
    let from_plain = Mnist::load(plain.path()).unwrap();
    assert_eq!(from_plain.train.shape(), [5, 4, 3]);
    assert_eq!(from_plain.test.shape(), [3, 4, 3]);
    assert_eq!(from_plain.train.labels(), [0, 1, 2, 3, 4]);
    assert_eq!(
        from_plain.train.image(1).unwrap(),
        (12..24).collect::<Vec<u8>>()
    );

    let gz = TempDir::new("gz");
    write_small_mnist(&gz, true);
    assert_eq!(Mnist::load(gz.path()).unwrap(), from_plain);

    // Detection by content, not by name: a plain file named `.gz`, a gzipped one without.
    let mixed = TempDir::new("mixed");
    write_small_mnist(&mixed, false);
    std::fs::rename(
        mixed.path().join("train-images-idx3-ubyte"),
        mixed.path().join("train-images-idx3-ubyte.gz"),
    )
    .unwrap();
    mixed.write("t10k-images-idx3-ubyte", &gzip(&images_file(3, 4, 3)));
    assert_eq!(Mnist::load(mixed.path()).unwrap(), from_plain);

    // In-memory input.
    let labels = idx::read_u8_from(&labels_file(3)[..], "memory", 1).unwrap();
    assert_eq!((labels.dims, labels.data), (vec![3], vec![0, 1, 2]));
}

#[test]
fn count_mismatch() {
    let dir = TempDir::new("count");
    write_small_mnist(&dir, false);
    dir.write("t10k-labels-idx1-ubyte", &labels_file(2));
    let err = Mnist::load(dir.path()).unwrap_err();
    let DataError::CountMismatch {
        images,
        labels,
        image_count,
        label_count,
    } = &err
    else {
        panic!("expected CountMismatch, got {err:?}");
    };
    assert_eq!(images, &dir.path().join("t10k-images-idx3-ubyte"));
    assert_eq!(labels, &dir.path().join("t10k-labels-idx1-ubyte"));
    assert_eq!((*image_count, *label_count), (3, 2));
    assert!(err.to_string().contains("3 images"));
    assert!(err.to_string().contains("2 labels"));
}

#[test]
fn shape_mismatch() {
    let dir = TempDir::new("shape");
    write_small_mnist(&dir, false);
    dir.write("t10k-images-idx3-ubyte", &images_file(3, 3, 4));
    let err = Mnist::load(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::ShapeMismatch {
                train_dims: (4, 3),
                test_dims: (3, 4),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn sampler_is_seeded_and_covers_every_index() {
    let epochs = |seed| {
        let mut sampler = BatchSampler::new(103, 10, seed).unwrap();
        (0..3)
            .map(|_| sampler.epoch().map(<[usize]>::to_vec).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    let a = epochs(7);
    assert_eq!(a, epochs(7));
    assert_ne!(a, epochs(8));
    assert_ne!(a[0], a[1]);
    for epoch in &a {
        assert_eq!(epoch.len(), 11);
        assert!(epoch[..10].iter().all(|b| b.len() == 10));
        assert_eq!(epoch[10].len(), 3);
        let mut all = epoch.concat();
        all.sort_unstable();
        assert_eq!(all, (0..103).collect::<Vec<_>>());
    }

    let mut sampler = BatchSampler::new(103, 10, 7).unwrap().drop_last(true);
    assert_eq!(sampler.batches_per_epoch(), 10);
    let batches = sampler.epoch();
    assert_eq!(batches.len(), 10);
    assert!(batches.into_iter().all(|b| b.len() == 10));

    let mut big = BatchSampler::new(3, 10, 0).unwrap();
    assert_eq!(big.epoch().map(<[usize]>::len).collect::<Vec<_>>(), [3]);
    let mut big = BatchSampler::new(3, 10, 0).unwrap().drop_last(true);
    assert_eq!(big.epoch().count(), 0);

    assert!(matches!(
        BatchSampler::new(10, 0, 0),
        Err(DataError::InvalidBatchSize)
    ));
}

//! Reading IDX files, the format of MNIST and Fashion-MNIST, gzipped or plain.
//!
//! An IDX file is a 4-byte magic number `0x00 0x00 TYPE RANK`, then `RANK` big-endian `u32`
//! dimensions, then the elements in row-major order. MNIST images are `0x00000803` (`u8`,
//! rank 3: count, rows, columns) and labels `0x00000801` (`u8`, rank 1: count).
//!
//! A file is decompressed when it starts with the gzip magic bytes `1f 8b`, whatever its name.
//! The reader checks the magic number, the element type and rank, and that the payload has
//! exactly the size the dimensions announce; see [`DataError`] for what is reported.
//!
//! ```
//! use adjoint::data::idx;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist/t10k-labels-idx1-ubyte.gz");
//! let labels = idx::read_u8(path, 1)?;
//! assert_eq!(labels.dims, [10_000]);
//! assert_eq!(labels.data[..3], [7, 2, 1]);
//! # Ok::<(), adjoint::data::DataError>(())
//! ```

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::DataError;

/// Magic number of an IDX file of `u8` with rank 3: MNIST images.
pub const IMAGES_MAGIC: u32 = 0x0000_0803;

/// Magic number of an IDX file of `u8` with rank 1: MNIST labels.
pub const LABELS_MAGIC: u32 = 0x0000_0801;

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Initial payload buffer cap: a header may claim any size (4 Gi elements per dimension), so
/// the buffer starts small and grows only as bytes actually arrive (`read_to_end` doubles
/// it), never beyond twice the data present. It was 64 MiB, which a 12-byte file claiming
/// 2³² labels got allocated at once.
const MAX_PREALLOCATION: u64 = 16 << 10;

/// Element types of the IDX format (the third byte of the magic number).
///
/// ```
/// use adjoint::data::IdxType;
///
/// assert_eq!(IdxType::from_code(0x08), Some(IdxType::U8));
/// assert_eq!(IdxType::F32.size(), 4);
/// assert_eq!(IdxType::from_code(0x42), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdxType {
    /// Unsigned byte, code `0x08`.
    U8,
    /// Signed byte, code `0x09`.
    I8,
    /// Big-endian `i16`, code `0x0B`.
    I16,
    /// Big-endian `i32`, code `0x0C`.
    I32,
    /// Big-endian `f32`, code `0x0D`.
    F32,
    /// Big-endian `f64`, code `0x0E`.
    F64,
}

impl IdxType {
    /// The type for a type code, `None` for a code the format does not define.
    ///
    /// ```
    /// # use adjoint::data::IdxType;
    /// assert_eq!(IdxType::from_code(0x0D), Some(IdxType::F32));
    /// ```
    pub fn from_code(code: u8) -> Option<IdxType> {
        match code {
            0x08 => Some(IdxType::U8),
            0x09 => Some(IdxType::I8),
            0x0B => Some(IdxType::I16),
            0x0C => Some(IdxType::I32),
            0x0D => Some(IdxType::F32),
            0x0E => Some(IdxType::F64),
            _ => None,
        }
    }

    /// The type code stored in the magic number.
    ///
    /// ```
    /// # use adjoint::data::IdxType;
    /// assert_eq!(IdxType::U8.code(), 0x08);
    /// ```
    pub fn code(self) -> u8 {
        match self {
            IdxType::U8 => 0x08,
            IdxType::I8 => 0x09,
            IdxType::I16 => 0x0B,
            IdxType::I32 => 0x0C,
            IdxType::F32 => 0x0D,
            IdxType::F64 => 0x0E,
        }
    }

    /// Size of one element in bytes.
    ///
    /// ```
    /// # use adjoint::data::IdxType;
    /// assert_eq!(IdxType::F64.size(), 8);
    /// ```
    pub fn size(self) -> usize {
        match self {
            IdxType::U8 | IdxType::I8 => 1,
            IdxType::I16 => 2,
            IdxType::I32 | IdxType::F32 => 4,
            IdxType::F64 => 8,
        }
    }

    /// The magic number of an IDX file of this type and rank.
    ///
    /// ```
    /// use adjoint::data::{IdxType, idx};
    ///
    /// assert_eq!(IdxType::U8.magic(3), idx::IMAGES_MAGIC);
    /// assert_eq!(IdxType::U8.magic(1), idx::LABELS_MAGIC);
    /// ```
    pub fn magic(self, rank: u8) -> u32 {
        (u32::from(self.code()) << 8) | u32::from(rank)
    }

    fn name(self) -> &'static str {
        match self {
            IdxType::U8 => "u8",
            IdxType::I8 => "i8",
            IdxType::I16 => "i16",
            IdxType::I32 => "i32",
            IdxType::F32 => "f32",
            IdxType::F64 => "f64",
        }
    }
}

/// "u8, rank 3" for a valid magic number, for error messages.
pub(super) fn describe_magic(magic: u32) -> String {
    let [_, _, code, rank] = magic.to_be_bytes();
    match IdxType::from_code(code) {
        Some(ty) => format!("{}, rank {rank}", ty.name()),
        None => format!("unknown type {code:#04x}, rank {rank}"),
    }
}

/// The contents of a `u8` IDX file: its dimensions and its elements in row-major order.
///
/// `data.len()` is always the product of `dims`.
///
/// ```
/// use adjoint::data::idx;
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist/t10k-images-idx3-ubyte.gz");
/// let images = idx::read_u8(path, 3)?;
/// assert_eq!(images.dims, [10_000, 28, 28]);
/// assert_eq!(images.data.len(), 10_000 * 28 * 28);
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxArray {
    /// The dimensions from the header, outermost first.
    pub dims: Vec<usize>,
    /// The elements, row-major.
    pub data: Vec<u8>,
}

/// Reads a `u8` IDX file of the given rank (3 for MNIST images, 1 for labels), gzipped or
/// plain.
///
/// Errors: [`Missing`](DataError::Missing) if the file does not exist,
/// [`CorruptGzip`](DataError::CorruptGzip) for a damaged gzip stream,
/// [`TruncatedHeader`](DataError::TruncatedHeader), [`BadMagic`](DataError::BadMagic),
/// [`WrongKind`](DataError::WrongKind) (another element type or rank),
/// [`BadDimensions`](DataError::BadDimensions) (a size that overflows `usize`),
/// [`TruncatedPayload`](DataError::TruncatedPayload) and
/// [`TrailingData`](DataError::TrailingData) when the payload is shorter or longer than the
/// dimensions say.
///
/// ```
/// use adjoint::data::{DataError, idx};
///
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist");
/// let labels = idx::read_u8(format!("{dir}/t10k-labels-idx1-ubyte.gz"), 1)?;
/// assert_eq!(labels.data.len(), 10_000);
///
/// // A label file is not an image file.
/// let err = idx::read_u8(format!("{dir}/t10k-labels-idx1-ubyte.gz"), 3).unwrap_err();
/// assert!(matches!(err, DataError::WrongKind { expected: 0x803, found: 0x801, .. }));
/// # Ok::<(), DataError>(())
/// ```
pub fn read_u8(path: impl AsRef<Path>, rank: u8) -> Result<IdxArray, DataError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| open_error(path, source))?;
    read_u8_from(BufReader::new(file), path, rank)
}

/// Like [`read_u8`], from any reader; `path` only names the source in errors.
///
/// The input may be gzipped (detected by its first two bytes) or plain.
///
/// ```
/// use adjoint::data::idx;
///
/// let bytes = [0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9];
/// let labels = idx::read_u8_from(&bytes[..], "in memory", 1)?;
/// assert_eq!(labels.dims, [3]);
/// assert_eq!(labels.data, [7, 8, 9]);
/// # Ok::<(), adjoint::data::DataError>(())
/// ```
pub fn read_u8_from(
    mut reader: impl Read,
    path: impl AsRef<Path>,
    rank: u8,
) -> Result<IdxArray, DataError> {
    let path = path.as_ref();
    let mut head = [0u8; 2];
    let n = read_full(&mut reader, &mut head).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = Cursor::new(head).take(n as u64).chain(reader);
    if n == 2 && head == GZIP_MAGIC {
        let mut decoder = MultiGzDecoder::new(reader);
        let corrupt = |path, source| DataError::CorruptGzip { path, source };
        match parse_u8(&mut decoder, path, rank, corrupt) {
            Ok(array) => Ok(array),
            Err(err @ DataError::CorruptGzip { .. }) => Err(err),
            Err(err) => {
                // Damaged compressed data can decode to a plausible but wrong IDX header or
                // size; report it as corrupt gzip when the stream fails its own checks.
                match io::copy(&mut decoder, &mut io::sink()) {
                    Err(source) => Err(corrupt(path.to_path_buf(), source)),
                    Ok(_) => Err(err),
                }
            }
        }
    } else {
        parse_u8(reader, path, rank, |path, source| DataError::Io {
            path,
            source,
        })
    }
}

/// The error for a failed `File::open`.
pub(super) fn open_error(path: &Path, source: io::Error) -> DataError {
    if source.kind() == io::ErrorKind::NotFound {
        DataError::Missing {
            path: path.to_path_buf(),
            also_tried: None,
        }
    } else {
        DataError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn parse_u8(
    mut reader: impl Read,
    path: &Path,
    rank: u8,
    read_error: impl Fn(std::path::PathBuf, io::Error) -> DataError,
) -> Result<IdxArray, DataError> {
    let err = |source| read_error(path.to_path_buf(), source);
    let header_len = 4 + 4 * usize::from(rank);

    let mut magic = [0u8; 4];
    let n = read_full(&mut reader, &mut magic).map_err(err)?;
    if n < magic.len() {
        return Err(DataError::TruncatedHeader {
            path: path.to_path_buf(),
            expected: header_len,
            actual: n,
        });
    }
    let found = u32::from_be_bytes(magic);
    if magic[0] != 0 || magic[1] != 0 || IdxType::from_code(magic[2]).is_none() {
        return Err(DataError::BadMagic {
            path: path.to_path_buf(),
            found,
        });
    }
    let expected = IdxType::U8.magic(rank);
    if found != expected {
        return Err(DataError::WrongKind {
            path: path.to_path_buf(),
            expected,
            found,
        });
    }

    let mut dim_bytes = vec![0u8; 4 * usize::from(rank)];
    let n = read_full(&mut reader, &mut dim_bytes).map_err(err)?;
    if n < dim_bytes.len() {
        return Err(DataError::TruncatedHeader {
            path: path.to_path_buf(),
            expected: header_len,
            actual: 4 + n,
        });
    }
    let dims: Vec<usize> = dim_bytes
        .chunks_exact(4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    let Some(len) = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) else {
        return Err(DataError::BadDimensions {
            path: path.to_path_buf(),
            dims,
            reason: "the element count overflows usize",
        });
    };
    let expected = len as u64;

    let mut data = Vec::with_capacity(expected.min(MAX_PREALLOCATION) as usize);
    let got = (&mut reader)
        .take(expected)
        .read_to_end(&mut data)
        .map_err(err)? as u64;
    if got < expected {
        return Err(DataError::TruncatedPayload {
            path: path.to_path_buf(),
            expected,
            actual: got,
        });
    }
    let extra = io::copy(&mut reader, &mut io::sink()).map_err(err)?;
    if extra > 0 {
        return Err(DataError::TrailingData {
            path: path.to_path_buf(),
            expected,
            actual: expected + extra,
        });
    }
    Ok(IdxArray { dims, data })
}

//! Checkpoints: a model's parameters saved to and loaded from [safetensors] files, the format
//! of PyTorch's `safetensors.torch.save_file` / `load_file`, so weights move between adjoint and
//! PyTorch.
//!
//! Each parameter tensor is stored under its dotted path from [`Parameters::visit`]
//! (`"layers.1.weight"`), with its shape and dtype (`F32`, `F64`, or `U32`), its elements in
//! row-major order, little-endian: the layout of a contiguous PyTorch tensor, so a model whose
//! field names follow a PyTorch module's `state_dict()` keys reads and writes the same files.
//! [`save`] also writes the header metadata `{"format": "pt"}`, as `transformers` does.
//!
//! [`load`] checks the whole file against the model before it changes anything: every
//! parameter must be present with its exact shape and dtype (no conversion: an `F64` tensor
//! does not load into an `F32` parameter), and the file may hold no other tensor (PyTorch's
//! `load_state_dict(strict=True)`; [`load_with`] and [`UnknownTensors::Ignore`] relax the
//! last rule). On any error the model is left exactly as it was, and the error names the
//! file and the tensor.
//!
//! ```
//! use adjoint::prelude::*;
//! use adjoint::checkpoint;
//!
//! #[derive(Differentiable)]
//! struct Affine {
//!     weight: Tensor,
//!     bias: Tensor,
//! }
//!
//! let path = std::env::temp_dir().join(format!("adjoint-doc-{}.safetensors", std::process::id()));
//! let a = Affine { weight: Tensor::rand_normal(&[3, 2], 0.0, 1.0, 7), bias: Tensor::ones(&[2]) };
//! checkpoint::save(&a, &path).unwrap();
//!
//! let mut b = Affine { weight: Tensor::zeros(&[3, 2]), bias: Tensor::zeros(&[2]) };
//! checkpoint::load(&mut b, &path).unwrap();
//! assert_eq!((b.weight, b.bias), (a.weight, a.bias));
//!
//! let mut wrong = Affine { weight: Tensor::zeros(&[2, 3]), bias: Tensor::zeros(&[2]) };
//! let err = checkpoint::load(&mut wrong, &path).unwrap_err();
//! assert!(err.to_string().contains("tensor `weight` has shape [3, 2]"));
//! # std::fs::remove_file(&path).unwrap();
//! ```
//!
//! [safetensors]: https://huggingface.co/docs/safetensors

use crate::tensor::{Backend, DType, Tensor};
use crate::{ParamPath, Parameters};
use safetensors::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a checkpoint could not be saved or loaded. Every variant names the file; those about
/// one tensor name it too (its dotted parameter path).
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The file could not be read or written.
    Io {
        /// The checkpoint file.
        file: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not a valid safetensors file (truncated, corrupt header, bad offsets).
    Corrupt {
        /// The checkpoint file.
        file: PathBuf,
        /// What the safetensors parser reported.
        message: String,
    },
    /// A parameter of the model has no tensor in the file.
    Missing {
        /// The checkpoint file.
        file: PathBuf,
        /// The parameter's path.
        tensor: String,
    },
    /// The file holds a tensor that is not a parameter of the model (strict loading).
    Unknown {
        /// The checkpoint file.
        file: PathBuf,
        /// The tensor's name in the file.
        tensor: String,
    },
    /// A tensor's shape differs from its parameter's.
    Shape {
        /// The checkpoint file.
        file: PathBuf,
        /// The parameter's path.
        tensor: String,
        /// The parameter's shape.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },
    /// A tensor's dtype differs from its parameter's.
    DType {
        /// The checkpoint file.
        file: PathBuf,
        /// The parameter's path.
        tensor: String,
        /// The parameter's dtype.
        expected: DType,
        /// The dtype in the file, as safetensors names it (`"F16"`, `"F64"`, ...).
        found: String,
    },
    /// Two parameters of the model have the same path, so a file cannot tell them apart.
    DuplicateName {
        /// The checkpoint file.
        file: PathBuf,
        /// The repeated path.
        tensor: String,
    },
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CheckpointError::*;
        match self {
            Io { file, source } => write!(f, "checkpoint {}: {source}", file.display()),
            Corrupt { file, message } => write!(
                f,
                "checkpoint {}: not a valid safetensors file: {message}",
                file.display()
            ),
            Missing { file, tensor } => write!(
                f,
                "checkpoint {}: no tensor `{tensor}` for the model's parameter of that name",
                file.display()
            ),
            Unknown { file, tensor } => write!(
                f,
                "checkpoint {}: tensor `{tensor}` is not a parameter of the model",
                file.display()
            ),
            Shape {
                file,
                tensor,
                expected,
                found,
            } => write!(
                f,
                "checkpoint {}: tensor `{tensor}` has shape {found:?} in the file, the model's parameter {expected:?}",
                file.display()
            ),
            DType {
                file,
                tensor,
                expected,
                found,
            } => write!(
                f,
                "checkpoint {}: tensor `{tensor}` is {found} in the file, the model's parameter {expected:?}",
                file.display()
            ),
            DuplicateName { file, tensor } => write!(
                f,
                "checkpoint {}: two parameters of the model are named `{tensor}`",
                file.display()
            ),
        }
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckpointError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What [`load_with`] does with tensors of the file that are not parameters of the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownTensors {
    /// Fail with [`CheckpointError::Unknown`] (PyTorch's `strict=True`; what [`load`] does).
    #[default]
    Error,
    /// Ignore them (load a backbone from a larger model's file).
    Ignore,
}

/// One parameter, serialized.
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn file_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::U32 => Dtype::U32,
    }
}

/// The elements of `t`, row-major, little-endian.
fn to_bytes<B: Backend>(t: &Tensor<B>) -> Vec<u8> {
    match t.dtype() {
        DType::F32 => t
            .to_vec_f32()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F64 => t
            .to_vec_f64()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::U32 => t
            .to_vec_u32()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    }
}

/// A tensor of `dtype` and `shape` on `device` from little-endian bytes of the right length.
fn from_bytes<B: Backend>(
    bytes: &[u8],
    dtype: DType,
    shape: &[usize],
    dev: &B::Device,
) -> Tensor<B> {
    fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        bytes
            .chunks_exact(N)
            .map(|c| c.try_into().expect("chunks of N bytes"))
    }
    match dtype {
        DType::F32 => {
            let v: Vec<f32> = words(bytes).map(f32::from_le_bytes).collect();
            Tensor::from_vec_on(v, shape, dev)
        }
        DType::F64 => {
            let v: Vec<f64> = words(bytes).map(f64::from_le_bytes).collect();
            Tensor::from_vec_on(v, shape, dev)
        }
        DType::U32 => {
            let v: Vec<u32> = words(bytes).map(u32::from_le_bytes).collect();
            Tensor::from_vec_on(v, shape, dev)
        }
    }
}

/// Saves the parameters of `model` to the safetensors file `path`, each under its dotted path
/// with its shape and dtype (see the [module documentation](self)).
///
/// The file is written to a temporary file beside `path` and renamed over it, so an existing
/// checkpoint is never left half-written.
///
/// # Errors
/// [`CheckpointError::Io`] if the file cannot be written, [`CheckpointError::DuplicateName`] if
/// two parameters share a path.
pub fn save<B: Backend, M: Parameters<B>>(
    model: &M,
    path: impl AsRef<Path>,
) -> Result<(), CheckpointError> {
    let file = path.as_ref();
    let mut entries: Vec<(String, Entry)> = Vec::new();
    model.visit(&mut ParamPath::new(), &mut |name, t| {
        let entry = Entry {
            dtype: file_dtype(t.dtype()),
            shape: t.shape().to_vec(),
            bytes: to_bytes(t),
        };
        entries.push((name.to_owned(), entry));
    });
    check_unique(entries.iter().map(|(n, _)| n.as_str()), file)?;
    let metadata = HashMap::from([("format".to_owned(), "pt".to_owned())]);
    let views = entries.iter().map(|(n, e)| (n.as_str(), e));
    safetensors::serialize_to_file(views, Some(metadata), file).map_err(|e| match e {
        safetensors::SafeTensorError::IoError(source) => CheckpointError::Io {
            file: file.to_owned(),
            source,
        },
        other => CheckpointError::Corrupt {
            file: file.to_owned(),
            message: other.to_string(),
        },
    })
}

/// Loads the parameters of `model` from the safetensors file `path`, strictly: every
/// parameter must be in the file with its shape and dtype, and the file may hold nothing else.
/// Nothing is assigned unless everything checks out.
///
/// Each loaded parameter is a new tensor on the parameter's device (clones of the model taken
/// before keep the old values).
///
/// # Errors
/// [`Io`](CheckpointError::Io), [`Corrupt`](CheckpointError::Corrupt),
/// [`Missing`](CheckpointError::Missing), [`Unknown`](CheckpointError::Unknown),
/// [`Shape`](CheckpointError::Shape), [`DType`](CheckpointError::DType) or
/// [`DuplicateName`](CheckpointError::DuplicateName), for the first problem found (parameters
/// in visit order, then unknown tensors by name); the model is then unchanged.
pub fn load<B: Backend, M: Parameters<B>>(
    model: &mut M,
    path: impl AsRef<Path>,
) -> Result<(), CheckpointError> {
    load_with(model, path, UnknownTensors::Error)
}

/// [`load`] with a choice of what to do with tensors of the file that the model does not have.
pub fn load_with<B: Backend, M: Parameters<B>>(
    model: &mut M,
    path: impl AsRef<Path>,
    unknown: UnknownTensors,
) -> Result<(), CheckpointError> {
    let file = path.as_ref();
    let bytes = std::fs::read(file).map_err(|source| CheckpointError::Io {
        file: file.to_owned(),
        source,
    })?;
    load_from_bytes(model, &bytes, file, unknown)
}

/// [`load_with`] from the bytes of a safetensors file already in memory (embedded with
/// `include_bytes!`, downloaded); `file` names it in the errors.
///
/// # Errors
/// As [`load`], except [`Io`](CheckpointError::Io).
pub fn load_from_bytes<B: Backend, M: Parameters<B>>(
    model: &mut M,
    bytes: &[u8],
    file: impl AsRef<Path>,
    unknown: UnknownTensors,
) -> Result<(), CheckpointError> {
    let file = file.as_ref();
    let st = SafeTensors::deserialize(bytes).map_err(|e| CheckpointError::Corrupt {
        file: file.to_owned(),
        message: e.to_string(),
    })?;

    // Check everything and decode into new tensors; the model is only read here.
    let mut loaded: Vec<(String, Tensor<B>)> = Vec::new();
    let mut first_error = None;
    model.visit(&mut ParamPath::new(), &mut |name, param| {
        if first_error.is_none() {
            match decode(&st, name, param, file) {
                Ok(t) => loaded.push((name.to_owned(), t)),
                Err(e) => first_error = Some(e),
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    check_unique(loaded.iter().map(|(n, _)| n.as_str()), file)?;
    if unknown == UnknownTensors::Error {
        let known: HashSet<&str> = loaded.iter().map(|(n, _)| n.as_str()).collect();
        let mut extra: Vec<&str> = st
            .names()
            .into_iter()
            .filter(|n| !known.contains(n))
            .collect();
        extra.sort_unstable();
        if let Some(name) = extra.first() {
            return Err(CheckpointError::Unknown {
                file: file.to_owned(),
                tensor: (*name).to_owned(),
            });
        }
    }

    // Assign, in the same visit order.
    let mut tensors = loaded.into_iter();
    model.visit_each_mut(&mut ParamPath::new(), &mut |name, param| {
        let (n, t) = tensors
            .next()
            .expect("the model visits the same parameters twice");
        debug_assert_eq!(n, name);
        *param = t;
    });
    Ok(())
}

/// The tensor `name` of the file as a tensor like `param`, after checking its dtype and shape.
fn decode<B: Backend>(
    st: &SafeTensors<'_>,
    name: &str,
    param: &Tensor<B>,
    file: &Path,
) -> Result<Tensor<B>, CheckpointError> {
    let view = st.tensor(name).map_err(|_| CheckpointError::Missing {
        file: file.to_owned(),
        tensor: name.to_owned(),
    })?;
    if view.dtype() != file_dtype(param.dtype()) {
        return Err(CheckpointError::DType {
            file: file.to_owned(),
            tensor: name.to_owned(),
            expected: param.dtype(),
            found: format!("{:?}", view.dtype()),
        });
    }
    if view.shape() != param.shape() {
        return Err(CheckpointError::Shape {
            file: file.to_owned(),
            tensor: name.to_owned(),
            expected: param.shape().to_vec(),
            found: view.shape().to_vec(),
        });
    }
    // The parser has checked that the byte length matches shape and dtype.
    Ok(from_bytes(
        view.data(),
        param.dtype(),
        param.shape(),
        &param.device(),
    ))
}

/// `Err(DuplicateName)` for the first name that repeats.
fn check_unique<'a>(
    names: impl Iterator<Item = &'a str>,
    file: &Path,
) -> Result<(), CheckpointError> {
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(CheckpointError::DuplicateName {
                file: file.to_owned(),
                tensor: n.to_owned(),
            });
        }
    }
    Ok(())
}

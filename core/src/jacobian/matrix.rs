//! [`Jacobian`]: the matrix `J = ∂f/∂x` of a function between flat `f64` element lists, and
//! [`JacobianError`], why one could not be computed.

use std::fmt;

/// The Jacobian `J = ∂f/∂x` of `f: ℝⁿ → ℝᵐ` at a point, as a dense `m × n` matrix: row `i` is
/// the gradient of output element `yᵢ`, column `j` the derivative of the output along input
/// element `xⱼ`, so `J[(i, j)] = ∂yᵢ/∂xⱼ`.
///
/// Inputs and outputs are numbered as [`Checkable`](crate::check::Checkable) flattens them: a
/// tuple's parts in order, a `Vec` or array element by element, a tensor in row-major order.
/// The entries are stored row-major (`J[(i, j)]` at `i·n + j`).
///
/// ```
/// use adjoint::Jacobian;
///
/// let j = Jacobian::from_row_major(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
/// assert_eq!((j.rows(), j.cols()), (2, 3));
/// assert_eq!(j[(1, 0)], 4.0);
/// assert_eq!(j.row(0), Some(&[1.0, 2.0, 3.0][..]));
/// assert_eq!(j.column(2), Some(vec![3.0, 6.0]));
/// assert_eq!(j.to_string(), "[[1, 2, 3],\n [4, 5, 6]]");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Jacobian {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Jacobian {
    /// The `rows × cols` matrix whose entries, row after row, are `data`.
    ///
    /// # Errors
    /// [`JacobianError::DataLength`] if `data` does not have `rows · cols` entries.
    pub fn from_row_major(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self, JacobianError> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(JacobianError::DataLength {
                rows,
                cols,
                len: data.len(),
            });
        }
        Ok(Jacobian { rows, cols, data })
    }

    /// The matrix whose columns, one after another, are `columns` (`rows` entries each).
    pub(crate) fn from_columns(rows: usize, cols: usize, columns: &[f64]) -> Self {
        debug_assert_eq!(columns.len(), rows * cols);
        let data = (0..rows * cols)
            .map(|k| columns[(k % cols) * rows + k / cols])
            .collect();
        Jacobian { rows, cols, data }
    }

    /// `m`, the number of output elements.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// `n`, the number of input elements.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// `∂yᵢ/∂xⱼ` with `i = row`, `j = col`, `None` outside the matrix.
    pub fn get(&self, row: usize, col: usize) -> Option<f64> {
        (row < self.rows && col < self.cols).then(|| self.data[row * self.cols + col])
    }

    /// Row `i`: the gradient `∇yᵢ` of output element `i`, `None` if `i ≥ m`.
    pub fn row(&self, i: usize) -> Option<&[f64]> {
        (i < self.rows).then(|| &self.data[i * self.cols..(i + 1) * self.cols])
    }

    /// Column `j`: the derivative `∂y/∂xⱼ` of every output element, `None` if `j ≥ n`.
    pub fn column(&self, j: usize) -> Option<Vec<f64>> {
        (j < self.cols).then(|| {
            (0..self.rows)
                .map(|i| self.data[i * self.cols + j])
                .collect()
        })
    }

    /// The entries, row-major.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// The entries, row-major, by value.
    pub fn into_vec(self) -> Vec<f64> {
        self.data
    }

    /// `Jᵀ`, the `n × m` matrix of the pullback (`Jᵀ[(j, i)] = J[(i, j)]`).
    pub fn transpose(&self) -> Jacobian {
        Jacobian::from_columns(self.cols, self.rows, &self.data)
    }

    /// `maxᵢⱼ |Aᵢⱼ − Bᵢⱼ|`, `None` if the shapes differ; NaN if an entry of either is NaN.
    pub fn max_abs_diff(&self, other: &Jacobian) -> Option<f64> {
        if (self.rows, self.cols) != (other.rows, other.cols) {
            return None;
        }
        Some(
            self.data
                .iter()
                .zip(&other.data)
                .fold(0.0, |worst, (a, b)| {
                    let d = (a - b).abs();
                    if d.is_nan() || worst.is_nan() {
                        f64::NAN
                    } else {
                        worst.max(d)
                    }
                }),
        )
    }
}

impl std::ops::Index<(usize, usize)> for Jacobian {
    type Output = f64;

    /// `J[(i, j)] = ∂yᵢ/∂xⱼ`.
    ///
    /// # Panics
    /// If `i ≥ rows()` or `j ≥ cols()` (use [`Jacobian::get`] for a checked read).
    fn index(&self, (i, j): (usize, usize)) -> &f64 {
        assert!(
            i < self.rows && j < self.cols,
            "Jacobian index ({i}, {j}) outside its {}×{} shape",
            self.rows,
            self.cols
        );
        &self.data[i * self.cols + j]
    }
}

/// Rows in brackets, one line each (`[[1, 2],\n [3, 4]]`); a precision (`{:.3}`) applies to
/// every entry.
impl fmt::Display for Jacobian {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for i in 0..self.rows {
            if i > 0 {
                write!(f, ",\n ")?;
            }
            write!(f, "[")?;
            for (j, x) in self.data[i * self.cols..(i + 1) * self.cols]
                .iter()
                .enumerate()
            {
                if j > 0 {
                    write!(f, ", ")?;
                }
                match f.precision() {
                    Some(p) => write!(f, "{x:.p$}")?,
                    None => write!(f, "{x}")?,
                }
            }
            write!(f, "]")?;
        }
        write!(f, "]")
    }
}

/// Why a [`jvp`](crate::jvp), [`jacfwd`](crate::jacfwd), [`jacrev`](crate::jacrev) or
/// [`jacobian`](crate::jacobian) could not be computed. Elements are numbered as
/// [`Checkable`](crate::check::Checkable) flattens the value.
#[derive(Clone, Debug, PartialEq)]
pub enum JacobianError {
    /// An input element is NaN or infinite.
    NonFiniteInput {
        /// The element, in flat order.
        element: usize,
        /// Its value.
        value: f64,
    },
    /// An element of the tangent given to [`jvp`](crate::jvp) is NaN or infinite.
    NonFiniteSeed {
        /// The element, in flat order.
        element: usize,
        /// Its value.
        value: f64,
    },
    /// The tangent given to [`jvp`](crate::jvp) does not have the input's structure (a longer
    /// `Vec`, a tensor tangent of another shape).
    SeedShape {
        /// What does not fit, naming the part.
        message: String,
    },
    /// The function returned a tangent that does not fit: the jvp's tangent does not have the
    /// output's structure, or the pullback's that of the input.
    TangentShape {
        /// Which tangent, and what does not fit.
        message: String,
    },
    /// The output's element count changed between two calls at the same input.
    OutputChanged {
        /// The count at the first call.
        first: usize,
        /// The count at a later call.
        now: usize,
    },
    /// [`Jacobian::from_row_major`] got a number of entries other than `rows · cols`.
    DataLength {
        /// The rows asked for.
        rows: usize,
        /// The columns asked for.
        cols: usize,
        /// The entries given.
        len: usize,
    },
}

impl fmt::Display for JacobianError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JacobianError::NonFiniteInput { element, value } => {
                write!(
                    f,
                    "jacobian: input element {element} is {value}; derivatives need finite inputs"
                )
            }
            JacobianError::NonFiniteSeed { element, value } => {
                write!(
                    f,
                    "jvp: tangent element {element} is {value}; a seed must be finite"
                )
            }
            JacobianError::SeedShape { message } => {
                write!(f, "jvp: the tangent does not fit the input: {message}")
            }
            JacobianError::TangentShape { message } => write!(f, "jacobian: {message}"),
            JacobianError::OutputChanged { first, now } => write!(
                f,
                "jacobian: the output had {first} elements at the first call and {now} at a later one at the same input; the function must be deterministic"
            ),
            JacobianError::DataLength { rows, cols, len } => write!(
                f,
                "Jacobian::from_row_major: {len} entries for a {rows}×{cols} matrix (needs {})",
                rows.saturating_mul(*cols)
            ),
        }
    }
}

impl std::error::Error for JacobianError {}

//! A list of rows as the evals send matrices (`[[..], [..]]`), decoded into one row-major
//! buffer before any timing, with the check that every row has the length an eval expects.

use serde::Deserialize;

/// Rows of numbers, stored end to end.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "Vec<Vec<f64>>")]
pub struct Rows {
    /// The rows, concatenated.
    pub data: Vec<f64>,
    /// The length of each row, in order.
    pub lengths: Vec<usize>,
}

impl From<Vec<Vec<f64>>> for Rows {
    fn from(rows: Vec<Vec<f64>>) -> Self {
        Rows {
            lengths: rows.iter().map(Vec::len).collect(),
            data: rows.into_iter().flatten().collect(),
        }
    }
}

impl Rows {
    /// The number of rows.
    pub fn count(&self) -> usize {
        self.lengths.len()
    }

    /// Whether there are `rows` rows of `cols` numbers each; else an error naming `field` and
    /// both shapes.
    pub fn expect(&self, field: &str, rows: usize, cols: usize) -> Result<(), String> {
        let bad_row = self.lengths.iter().position(|&len| len != cols);
        match (self.count() == rows, bad_row) {
            (true, None) => Ok(()),
            (false, _) => Err(format!(
                "`{field}` has {} rows; expected {rows} rows of {cols}",
                self.count()
            )),
            (true, Some(i)) => Err(format!(
                "`{field}` row {i} has {} numbers; expected {rows} rows of {cols}",
                self.lengths[i]
            )),
        }
    }

    /// `flat`, cut into rows of `cols` (the shape of a gradient by rows).
    pub fn split(flat: &[f64], cols: usize) -> Vec<Vec<f64>> {
        if cols == 0 {
            return Vec::new();
        }
        flat.chunks(cols).map(<[f64]>::to_vec).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn rows_are_concatenated_and_checked() {
        let rows: Rows = serde_json::from_str("[[1, 2], [3, 4], [5, 6]]").unwrap();
        assert_eq!(rows.data, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(rows.expect("m", 3, 2), Ok(()));
        assert_eq!(
            rows.expect("m", 2, 2),
            Err("`m` has 3 rows; expected 2 rows of 2".into())
        );
        let ragged: Rows = serde_json::from_str("[[1, 2], [3]]").unwrap();
        assert_eq!(
            ragged.expect("m", 2, 2),
            Err("`m` row 1 has 1 numbers; expected 2 rows of 2".into())
        );
        assert_eq!(
            Rows::split(&rows.data, 3),
            [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        );
    }
}

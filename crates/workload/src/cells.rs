//! A data set's cells, stored compactly: every cell's bytes back to back in one buffer (a CSV
//! file's own buffer, unquoted in place) and one end offset per cell, shared (`Arc`) by every
//! scenario and virtual user that reads the set. Eleven million short rows cost the file's
//! size and eight bytes per row of two cells, not a `String` per cell.

use std::sync::Arc;

/// Rows of `columns` cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cells {
    bytes: Arc<Vec<u8>>,
    /// Where each cell ends in `bytes`, row by row.
    ends: Arc<Vec<u32>>,
    columns: usize,
}

impl Cells {
    /// Cells from `bytes` and each cell's end; `None` when the ends do not fit `bytes` or
    /// do not make whole rows of `columns`.
    pub fn new(bytes: Vec<u8>, ends: Vec<u32>, columns: usize) -> Option<Cells> {
        let whole = columns > 0 && ends.len().is_multiple_of(columns);
        let fits = ends.last().is_none_or(|&e| e as usize <= bytes.len())
            && ends.windows(2).all(|w| w[0] <= w[1]);
        (whole && fits).then(|| Cells {
            bytes: Arc::new(bytes),
            ends: Arc::new(ends),
            columns,
        })
    }

    /// How many rows.
    pub fn rows(&self) -> usize {
        self.ends.len().checked_div(self.columns).unwrap_or(0)
    }

    /// The length of the longest cell in column `col`.
    pub fn widest(&self, col: usize) -> usize {
        (0..self.rows())
            .filter_map(|r| self.get(r, col))
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0)
    }

    /// The cell at `row`, `col`.
    pub fn get(&self, row: usize, col: usize) -> Option<&[u8]> {
        if col >= self.columns {
            return None;
        }
        let i = row.checked_mul(self.columns)?.checked_add(col)?;
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.bytes.get(start..end)
    }
}

impl From<Vec<Vec<String>>> for Cells {
    /// Rows of strings (tests, small tables); every row as long as the first.
    fn from(rows: Vec<Vec<String>>) -> Cells {
        let columns = rows.first().map_or(0, Vec::len);
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for cell in rows.iter().flat_map(|r| r.iter().take(columns)) {
            bytes.extend_from_slice(cell.as_bytes());
            ends.push(bytes.len() as u32);
        }
        Cells {
            bytes: Arc::new(bytes),
            ends: Arc::new(ends),
            columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_by_row_and_column() {
        let c = Cells::from(vec![
            vec!["a".to_string(), "".to_string()],
            vec!["ccc".to_string(), "dd".to_string()],
        ]);
        assert_eq!(c.rows(), 2);
        assert_eq!(c.get(0, 0), Some(&b"a"[..]));
        assert_eq!(c.get(0, 1), Some(&b""[..]));
        assert_eq!(c.get(1, 1), Some(&b"dd"[..]));
        assert_eq!(c.get(2, 0), None);
        assert_eq!(c.get(0, 2), None);
        assert!(
            Cells::new(b"ab".to_vec(), vec![1, 3], 1).is_none(),
            "past the bytes"
        );
        assert!(
            Cells::new(b"ab".to_vec(), vec![1], 2).is_none(),
            "not whole rows"
        );
    }
}

//! Just enough CSV for data sets (RFC 4180): comma-separated fields, double-quoted fields that
//! may hold commas, newlines and doubled quotes, `\n` or `\r\n` line ends. Blank lines are
//! skipped; every row must have as many fields as the header.
//!
//! Parsed in place: unquoting only ever shortens a field, so each cell is written back over the
//! file's own buffer, and what is kept is that buffer and one end offset per cell
//! ([`workload::Cells`]): a 100 MiB file of short rows stays under twice its size in memory.

use workload::Cells;

/// Where the parser is.
struct Parser {
    /// End of each cell kept so far (header cells are taken out when the header ends).
    ends: Vec<u32>,
    /// Where the current cell starts in the written part.
    cell: usize,
    /// The first cell of the current row in `ends`.
    row: usize,
    header: Option<Vec<String>>,
    line: usize,
}

impl Parser {
    /// Ends the current cell at `w`.
    fn end_cell(&mut self, w: usize) {
        self.ends.push(w as u32);
        self.cell = w;
    }

    /// Ends the current row (its last cell at `w`); `w` may move back (a blank line, the
    /// header leaving the buffer).
    fn end_row(&mut self, b: &[u8], w: &mut usize) -> Result<(), String> {
        self.end_cell(*w);
        let cells = &self.ends[self.row..];
        let start = if self.row == 0 {
            0
        } else {
            self.ends[self.row - 1] as usize
        };
        if cells.len() == 1 && cells[0] as usize == start {
            self.ends.truncate(self.row);
        } else if let Some(h) = &self.header {
            if h.len() != cells.len() {
                return Err(format!(
                    "line {}: {} fields, the header has {}",
                    self.line,
                    cells.len(),
                    h.len()
                ));
            }
        } else {
            let mut from = start;
            let names = cells
                .iter()
                .map(|&e| {
                    let name = String::from_utf8_lossy(&b[from..e as usize]).into_owned();
                    from = e as usize;
                    name
                })
                .collect();
            self.header = Some(names);
            self.ends.truncate(self.row);
            *w = start;
        }
        self.row = self.ends.len();
        self.cell = *w;
        Ok(())
    }
}

/// Parses `text`: the header's names, and the data rows' cells.
pub fn parse(text: String) -> Result<(Vec<String>, Cells), String> {
    let mut b = text.into_bytes();
    if b.len() > u32::MAX as usize {
        return Err("a CSV data set may be up to 4 GiB".into());
    }
    let mut p = Parser {
        ends: Vec::new(),
        cell: 0,
        row: 0,
        header: None,
        line: 1,
    };
    let (mut r, mut w) = (0, 0);
    let mut quoted = false;
    while r < b.len() {
        let c = b[r];
        let next = b.get(r + 1).copied();
        r += 1;
        match (quoted, c) {
            (true, b'"') if next == Some(b'"') => {
                r += 1;
                b[w] = b'"';
                w += 1;
            }
            (true, b'"') => quoted = false,
            (false, b'"') if w == p.cell => quoted = true,
            (false, b',') => p.end_cell(w),
            (false, b'\r') if next == Some(b'\n') => {}
            (false, b'\n') => {
                p.end_row(&b, &mut w)?;
                p.line += 1;
            }
            (q, c) => {
                p.line += usize::from(q && c == b'\n');
                b[w] = c;
                w += 1;
            }
        }
    }
    if quoted {
        return Err(format!("line {}: unclosed quote", p.line));
    }
    if w > p.cell || p.ends.len() > p.row {
        p.end_row(&b, &mut w)?;
    }
    b.truncate(w);
    let header = p.header.unwrap_or_default();
    let cells = Cells::new(b, p.ends, header.len().max(1))
        .ok_or_else(|| "the rows do not match the header".to_string())?;
    Ok((header, cells))
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn rows(text: &str) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
        let (header, cells) = parse(text.to_string())?;
        let rows = (0..cells.rows())
            .map(|r| {
                (0..header.len())
                    .map(|c| String::from_utf8(cells.get(r, c).unwrap().to_vec()).unwrap())
                    .collect()
            })
            .collect();
        Ok((header, rows))
    }

    #[test]
    fn quotes_commas_and_line_ends() {
        let (header, data) =
            rows("email,note\r\na@x.test,\"hi, \"\"you\"\"\"\n\nb@x.test,\"two\nlines\"").unwrap();
        assert_eq!(header, ["email", "note"]);
        assert_eq!(
            data,
            vec![
                vec!["a@x.test".to_string(), "hi, \"you\"".to_string()],
                vec!["b@x.test".to_string(), "two\nlines".to_string()],
            ]
        );
    }

    #[test]
    fn empty_cells_unicode_and_a_last_line_without_an_end() {
        let (header, data) = rows("\"a\",b,c\n,é,\n\"\",\"漢,字\",x").unwrap();
        assert_eq!(header, ["a", "b", "c"]);
        assert_eq!(data[0], ["", "é", ""]);
        assert_eq!(data[1], ["", "漢,字", "x"]);
        assert_eq!(rows("").unwrap().1.len(), 0);
        assert_eq!(rows("h\n\n\n").unwrap().1.len(), 0);
    }

    #[test]
    fn ragged_rows_and_open_quotes_fail() {
        assert_eq!(
            rows("a,b\n1\n").unwrap_err(),
            "line 2: 1 fields, the header has 2"
        );
        assert_eq!(
            rows("a,b\n1,2\n\n\"x\ny\",1,2\n").unwrap_err(),
            "line 5: 3 fields, the header has 2"
        );
        assert!(rows("a\n\"x").unwrap_err().contains("unclosed quote"));
    }
}

//! Just enough CSV for data sets (RFC 4180): comma-separated fields, double-quoted fields that
//! may hold commas, newlines and doubled quotes, `\n` or `\r\n` line ends. Blank lines are
//! skipped; every row must have as many fields as the header.

/// Parses `text` into rows of fields; the first row is the header.
pub fn parse(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut line = 1;
    let end_row =
        |row: &mut Vec<String>, field: &mut String, rows: &mut Vec<Vec<String>>, line: usize| {
            row.push(std::mem::take(field));
            let r = std::mem::take(row);
            if r.len() == 1 && r[0].is_empty() {
                return Ok(());
            }
            if let Some(h) = rows.first() {
                if h.len() != r.len() {
                    return Err(format!(
                        "line {line}: {} fields, the header has {}",
                        r.len(),
                        h.len()
                    ));
                }
            }
            rows.push(r);
            Ok(())
        };
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c);
            }
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                end_row(&mut row, &mut field, &mut rows, line)?;
                line += 1;
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(format!("line {line}: unclosed quote"));
    }
    if !field.is_empty() || !row.is_empty() {
        end_row(&mut row, &mut field, &mut rows, line)?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn quotes_commas_and_line_ends() {
        let rows =
            parse("email,note\r\na@x.test,\"hi, \"\"you\"\"\"\n\nb@x.test,\"two\nlines\"").unwrap();
        assert_eq!(
            rows,
            vec![
                vec!["email".to_string(), "note".to_string()],
                vec!["a@x.test".to_string(), "hi, \"you\"".to_string()],
                vec!["b@x.test".to_string(), "two\nlines".to_string()],
            ]
        );
    }

    #[test]
    fn ragged_rows_and_open_quotes_fail() {
        assert_eq!(
            parse("a,b\n1\n").unwrap_err(),
            "line 2: 1 fields, the header has 2"
        );
        assert!(parse("a\n\"x").unwrap_err().contains("unclosed quote"));
    }
}

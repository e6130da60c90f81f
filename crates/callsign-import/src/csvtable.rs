//! A CSV export as a table whose columns are found by name: case-insensitively, a repeated
//! name (Jira's `Labels,Labels,Labels`) by all its occurrences, a short row (Linear's rows lack
//! the last column) read as empty cells. Quoted newlines and quotes are the csv crate's.
use csv::{ReaderBuilder, StringRecord};

use crate::model::ImportError;

pub struct Table {
    header: Vec<String>,
    rows: Vec<(usize, StringRecord)>,
}

impl Table {
    /// Reads `text`; `format` names the export in errors. Every column in `required` must be
    /// in the header.
    pub fn read(text: &str, format: &'static str, required: &[&str]) -> Result<Table, ImportError> {
        let mut r = ReaderBuilder::new()
            .flexible(true)
            .has_headers(true)
            .from_reader(text.as_bytes());
        let header: Vec<String> = r
            .headers()
            .map_err(|e| ImportError::NotThisFormat {
                format,
                why: e.to_string(),
            })?
            .iter()
            .map(|h| h.trim().to_lowercase())
            .collect();
        let missing: Vec<String> = required
            .iter()
            .filter(|c| !header.iter().any(|h| h == &c.to_lowercase()))
            .map(|c| format!("no {c} column"))
            .collect();
        if !missing.is_empty() {
            return Err(ImportError::NotThisFormat {
                format,
                why: missing.join(", "),
            });
        }
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| ImportError::Row {
                row: e.position().map_or(0, |p| p.line() as usize),
                why: e.to_string(),
            })?;
            let line = rec.position().map_or(0, |p| p.line() as usize);
            if rec.iter().all(|c| c.trim().is_empty()) {
                continue;
            }
            rows.push((line, rec));
        }
        Ok(Table { header, rows })
    }

    pub fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |(line, rec)| Row {
            table: self,
            rec,
            line: *line,
        })
    }
}

/// One record, read by column name.
pub struct Row<'a> {
    table: &'a Table,
    rec: &'a StringRecord,
    /// Its line in the file (for errors).
    pub line: usize,
}

impl Row<'_> {
    /// The first `name` cell, trimmed; empty when the column or the cell is missing.
    pub fn get(&self, name: &str) -> &str {
        self.all_cells(name).next().unwrap_or("")
    }

    /// The first non-empty cell among `names`, in that order.
    pub fn first(&self, names: &[&str]) -> &str {
        names
            .iter()
            .map(|n| self.get(n))
            .find(|v| !v.is_empty())
            .unwrap_or("")
    }

    /// Every non-empty `name` cell (a repeated column), trimmed.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.all_cells(name).filter(|v| !v.is_empty()).collect()
    }

    /// The cell as written (not trimmed): a description keeps its layout.
    pub fn raw(&self, name: &str) -> &str {
        let name = name.to_lowercase();
        self.table
            .header
            .iter()
            .position(|h| *h == name)
            .and_then(|i| self.rec.get(i))
            .unwrap_or("")
    }

    fn all_cells(&self, name: &str) -> impl Iterator<Item = &str> {
        let name = name.to_lowercase();
        self.table
            .header
            .iter()
            .enumerate()
            .filter(move |(_, h)| **h == name)
            .map(|(i, _)| self.rec.get(i).unwrap_or("").trim())
    }

    /// An error about this row.
    pub fn bad(&self, why: String) -> ImportError {
        ImportError::Row {
            row: self.line,
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_by_name_repeated_ones_all_short_rows_empty() {
        let t = Table::read(
            "Summary,Labels,LABELS,Due\n\"two\nlines\", a ,b\n",
            "test",
            &["summary"],
        )
        .unwrap();
        let r = t.rows().next().unwrap();
        assert_eq!(r.get("summary"), "two\nlines");
        assert_eq!(r.all("Labels"), vec!["a", "b"]);
        assert_eq!(r.get("Due"), "");
        assert_eq!(r.get("Nope"), "");
        let e = Table::read("A,B\n1,2\n", "Jira", &["Summary", "Issue key"])
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "this is not a Jira export: no Summary column, no Issue key column"
        );
    }
}

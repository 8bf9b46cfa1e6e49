//! Errors in scenario files that name the file, line, column, field, what was
//! found and what is expected, with the offending line underlined.

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// One problem in a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file (or `<built-in demo>`).
    pub file: String,
    /// 1-based line of the problem (0 when the field is absent from the file).
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// Dotted path of the field, e.g. `fabric.link_rate`.
    pub field: String,
    /// What the file holds there.
    pub found: String,
    /// What would be accepted.
    pub expected: String,
    /// The source line and a caret underline (empty when there is no location).
    pub snippet: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "error: {}:{}:{}: ", self.file, self.line, self.col)?;
        } else {
            write!(f, "error: {}: ", self.file)?;
        }
        write!(
            f,
            "`{}`: found {}; expected {}",
            self.field, self.found, self.expected
        )?;
        if !self.snippet.is_empty() {
            write!(f, "\n{}", self.snippet)?;
        }
        Ok(())
    }
}

/// Every problem found in a scenario; never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The problems, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        let n = self.diagnostics.len();
        write!(
            f,
            "\n{n} problem{} found; nothing was run.",
            if n == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for ConfigError {}

/// The source text of a scenario and its span index, used to place diagnostics.
pub struct Source<'a> {
    /// File name shown in diagnostics.
    pub file: &'a str,
    /// The text.
    pub text: &'a str,
    tree: Option<Spanned<DeTable<'a>>>,
}

impl<'a> Source<'a> {
    /// Indexes `text` (a file that fails to parse simply has no spans).
    pub fn new(file: &'a str, text: &'a str) -> Source<'a> {
        Source {
            file,
            text,
            tree: DeTable::parse(text).ok(),
        }
    }

    /// Byte span of the value at a dotted path (`cluster.nodes`, `faults.0.at`).
    pub fn span_of(&self, path: &str) -> Option<Range<usize>> {
        let tree = self.tree.as_ref()?;
        let mut table: &DeTable = tree.get_ref();
        let mut span = tree.span();
        let mut value: Option<&Spanned<DeValue>> = None;
        for part in path.split('.') {
            if let Some(v) = value {
                match v.get_ref() {
                    DeValue::Table(t) => table = t,
                    DeValue::Array(a) => {
                        let i: usize = part.parse().ok()?;
                        let item = a.get(i)?;
                        span = item.span();
                        value = Some(item);
                        continue;
                    }
                    _ => return Some(span),
                }
            }
            let (_, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == part)?;
            span = v.span();
            value = Some(v);
        }
        Some(span)
    }

    /// Byte span of the table header or key that holds `path`'s parent, used when
    /// a field is missing: points at `[cluster]` for `cluster.nodes`.
    fn parent_span(&self, path: &str) -> Option<Range<usize>> {
        let mut p = path;
        while let Some((head, _)) = p.rsplit_once('.') {
            if let Some(s) = self.span_of(head) {
                return Some(s);
            }
            p = head;
        }
        None
    }

    /// The innermost dotted path whose value span contains `span`.
    pub fn path_at(&self, span: &Range<usize>) -> Option<String> {
        let tree = self.tree.as_ref()?;
        let mut best = None;
        walk(tree.get_ref(), "", span, &mut best);
        best
    }

    /// Builds a diagnostic for `field`, located at its value (or its parent table).
    pub fn diag(
        &self,
        field: &str,
        found: impl Into<String>,
        expected: impl Into<String>,
    ) -> Diagnostic {
        let span = self.span_of(field).or_else(|| self.parent_span(field));
        self.diag_at(span, field, found, expected)
    }

    /// Builds a diagnostic at an explicit byte span.
    pub fn diag_at(
        &self,
        span: Option<Range<usize>>,
        field: &str,
        found: impl Into<String>,
        expected: impl Into<String>,
    ) -> Diagnostic {
        let (line, col, snippet) = match span {
            Some(s) => {
                let (line, col) = line_col(self.text, s.start);
                (line, col, snippet(self.text, &s, line))
            }
            None => (0, 0, String::new()),
        };
        Diagnostic {
            file: self.file.to_string(),
            line,
            col,
            field: field.to_string(),
            found: found.into(),
            expected: expected.into(),
            snippet,
        }
    }

    /// The literal text of a field's value in the file (for "found …").
    pub fn text_of(&self, field: &str) -> Option<&'a str> {
        let s = self.span_of(field)?;
        self.text.get(s)
    }
}

fn walk(table: &DeTable, prefix: &str, span: &Range<usize>, best: &mut Option<String>) {
    for (k, v) in table.iter() {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        let vs = v.span();
        let ks = k.span();
        let contains =
            |r: &Range<usize>| r.start <= span.start && span.end <= r.end.max(r.start + 1);
        if contains(&vs) || contains(&ks) {
            *best = Some(path.clone());
        }
        match v.get_ref() {
            DeValue::Table(t) => walk(t, &path, span, best),
            DeValue::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    let ip = format!("{path}.{i}");
                    if contains(&item.span()) {
                        *best = Some(ip.clone());
                    }
                    if let DeValue::Table(t) = item.get_ref() {
                        walk(t, &ip, span, best);
                    }
                }
            }
            _ => {}
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = text[line_start..offset].chars().count() + 1;
    (line, col)
}

fn snippet(text: &str, span: &Range<usize>, line: usize) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let src = &text[line_start..line_end];
    let pad = text[line_start..start].chars().count();
    let width = text[start..span.end.min(line_end).max(start)]
        .chars()
        .count()
        .max(1);
    let gutter = line.to_string().len();
    format!(
        "{:gutter$} |\n{line} | {src}\n{:gutter$} | {}{}",
        "",
        "",
        " ".repeat(pad),
        "^".repeat(width)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_resolve_nested_keys() {
        let text = "name = \"x\"\n[cluster]\nnodes = 4\n[fabric]\nlink_rate = \"0Gbps\"\n";
        let s = Source::new("a.toml", text);
        let d = s.diag("fabric.link_rate", "\"0Gbps\"", "a rate above zero");
        assert_eq!((d.line, d.col), (5, 13));
        assert!(d.snippet.contains("^^^^^^^"), "{}", d.snippet);
        let four = text.find('4').unwrap();
        assert_eq!(
            s.path_at(&(four..four + 1)).as_deref(),
            Some("cluster.nodes")
        );
        let missing = s.diag("cluster.gpus_per_node", "nothing", "a number");
        assert_eq!(missing.line, 2, "points at the [cluster] table");
    }
}

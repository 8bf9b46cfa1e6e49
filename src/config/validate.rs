//! The validator core: reading and parsing a file, turning serde errors into
//! diagnostics, and the typed readers (count, rate, time, size, fraction)
//! every section's checks use. The sections themselves live with their
//! concern (`cluster.rs`, `fabric.rs`, `packet.rs`, …) as further
//! `impl Validator` blocks.

use super::diagnostic::{ConfigError, Diagnostic, Source};
use super::raw::{RawNumber, RawQuantity, RawScenario};
use super::simulation::{MAX_LATENCY, MAX_SIM_TIME};
use super::Scenario;
use crate::units::{parse_rate, parse_size, parse_time, Rate, SimTime};

/// The largest value `field` may hold: [`MAX_LATENCY`] for latencies, jitter
/// and per-packet overheads, else [`MAX_SIM_TIME`].
fn max_duration(field: &str) -> SimTime {
    if field.ends_with("latency") || field.ends_with("overhead") || field.ends_with("jitter") {
        MAX_LATENCY
    } else {
        MAX_SIM_TIME
    }
}

/// Reads and validates a scenario file.
///
/// # Errors
/// A [`ConfigError`] listing every problem; an unreadable file is one problem.
pub fn load(path: &std::path::Path) -> Result<Scenario, ConfigError> {
    let file = path.display().to_string();
    match crate::budget::read_text(path, crate::budget::MAX_INPUT_BYTES) {
        Ok(text) => parse(&file, &text),
        Err(e) => Err(ConfigError {
            diagnostics: vec![Diagnostic {
                file: file.clone(),
                line: 0,
                col: 0,
                field: "(file)".into(),
                found: format!("an unreadable file ({e})"),
                expected: format!(
                    "a readable TOML scenario file of at most {}",
                    crate::units::format_bytes(crate::budget::MAX_INPUT_BYTES)
                ),
                snippet: String::new(),
            }],
        }),
    }
}

/// Most problems reported from one file before giving up on the rest: a file
/// that fails this often is not a scenario being edited but something else.
const MAX_PARSE_PROBLEMS: usize = 64;

/// Validates scenario `text` read from `file`.
///
/// Every problem is reported, not only the first: a syntax or type error
/// blanks its line (offsets and line numbers stay those of the file) and the
/// parse goes on, then the validator checks what parsed, without repeating a
/// key the parser already reported.
///
/// # Errors
/// A [`ConfigError`] listing every problem found.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ConfigError> {
    let mut current = text.to_string();
    let mut parse_diags: Vec<Diagnostic> = Vec::new();
    let raw: Option<RawScenario> = loop {
        match toml::from_str::<RawScenario>(&current) {
            Ok(r) => break Some(r),
            Err(e) => {
                let d = serde_diag(&Source::new(file, &current), &e);
                let line_range = e.span().and_then(|sp| line_bounds(&current, sp.start));
                let again = parse_diags.iter().any(|p| p.line == d.line);
                if !again {
                    parse_diags.push(d);
                }
                match line_range {
                    Some(r)
                        if !again
                            && parse_diags.len() < MAX_PARSE_PROBLEMS
                            && current[r.clone()].trim() != "" =>
                    {
                        current.replace_range(r.clone(), &" ".repeat(r.len()));
                    }
                    _ => break None,
                }
            }
        }
    };
    let src = Source::new(file, &current);
    let mut v = Validator {
        src: &src,
        diags: Vec::new(),
        quiet_missing: false,
        workload_at: None,
        class_names: Vec::new(),
    };
    let scenario = raw.as_ref().and_then(|r| v.scenario(r));
    if parse_diags.is_empty() && v.diags.is_empty() {
        if let Some(s) = scenario {
            return Ok(s);
        }
    }
    // a key the parser refused is not also reported missing or out of range
    let mut diags = parse_diags;
    let refused: Vec<String> = diags.iter().map(|d| d.field.clone()).collect();
    diags.extend(
        v.diags
            .into_iter()
            .filter(|d| !refused.iter().any(|f| f == &d.field)),
    );
    diags.sort_by_key(|d| (d.line == 0, d.line, d.col));
    Err(ConfigError { diagnostics: diags })
}

/// The byte range of the line holding byte `at`, without its newline.
fn line_bounds(text: &str, at: usize) -> Option<std::ops::Range<usize>> {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    (start < end).then_some(start..end)
}

/// Turns a TOML or serde error into a diagnostic with its field, in the
/// schema's words ("a whole number", "true or false"), never Rust's.
pub(super) fn serde_diag(src: &Source, e: &toml::de::Error) -> Diagnostic {
    let span = e.span();
    let msg = e.message().trim().to_string();
    let field = span
        .as_ref()
        .and_then(|s| src.path_at(s))
        .unwrap_or_else(|| "(syntax)".into());
    let leaf = field.rsplit('.').next().unwrap_or(&field).to_string();
    let (found, expected) = if let Some(rest) = msg.strip_prefix("unknown field ") {
        // "unknown field `x`, expected one of `a`, `b`"
        let (name, exp) = rest
            .split_once(", expected ")
            .unwrap_or((rest, "a known field"));
        let suggestion = closest_field(name.trim_matches('`'), exp)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        (
            format!("unknown field {name}"),
            format!("{exp}{suggestion}"),
        )
    } else if let Some(rest) = msg.strip_prefix("invalid type: ") {
        let (got, exp) = rest
            .split_once(", expected ")
            .unwrap_or((rest, "another type"));
        (got.to_string(), schema_words(exp, &leaf))
    } else if msg.starts_with("data did not match any variant") {
        (
            span.as_ref()
                .and_then(|s| text_slice(src.text, s))
                .unwrap_or_else(|| "a value of the wrong type".into()),
            if leaf == "traces" {
                "a directory (a quoted path) or a list of quoted .et file paths".into()
            } else {
                "a number or a quoted quantity with a unit".into()
            },
        )
    } else {
        (
            format!("invalid TOML ({msg})"),
            "valid TOML (https://toml.io)".into(),
        )
    };
    src.diag_at(span, &field, found, expected)
}

/// serde's name of an expected type, in the words of the scenario schema.
fn schema_words(serde_expected: &str, leaf: &str) -> String {
    let e = serde_expected.trim();
    let example = |v: &str| format!(", such as `{leaf} = {v}`");
    if matches!(e, "i64" | "i32" | "u64" | "u32" | "u8" | "usize") {
        format!("a whole number (no quotes){}", example("4"))
    } else if matches!(e, "f64" | "f32") {
        format!("a number{}", example("0.5"))
    } else if e == "a boolean" {
        format!("true or false{}", example("true"))
    } else if e == "a string" || e.starts_with("a borrowed string") {
        format!("a quoted string{}", example("\"…\""))
    } else if e.starts_with("struct Raw") || e == "a map" {
        format!("a table of settings (`[{leaf}]` with `key = value` lines under it)")
    } else if e.starts_with("a sequence") {
        format!("a list{}", example("[…]"))
    } else {
        e.to_string()
    }
}

/// The known field nearest to `name` (at most two edits away), from serde's
/// "one of `a`, `b`" list.
fn closest_field<'a>(name: &str, one_of: &'a str) -> Option<&'a str> {
    one_of
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|f| (edit_distance(name, f), f))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, f)| f)
}

/// Levenshtein distance between two short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn text_slice(text: &str, s: &std::ops::Range<usize>) -> Option<String> {
    text.get(s.clone()).map(|t| t.trim().to_string())
}

/// A default duration as the `time` reader takes it, exact to the picosecond,
/// so a default stated once as a [`SimTime`] reads back unchanged.
pub(super) fn default_time(t: SimTime) -> String {
    format!("{}ps", t.0)
}

pub(super) struct Validator<'a> {
    pub(super) src: &'a Source<'a>,
    pub(super) diags: Vec<Diagnostic>,
    /// An unknown preset was named: fields it would have supplied are not also
    /// reported missing (one mistake, one diagnostic).
    pub(super) quiet_missing: bool,
    /// Where the workload being checked is written when it is not `[workload]`
    /// (`jobs.2.workload` for a job's): the workload checks name their fields
    /// `workload.…` and [`Validator::err`] moves them here.
    pub(super) workload_at: Option<String>,
    /// The names of `[[fabric.classes]]`, in order (class `i` is lane `i`),
    /// for the flows and workloads that name one.
    pub(super) class_names: Vec<String>,
}

impl<'a> Validator<'a> {
    /// `field` where the file writes it: a `workload.…` field moved under
    /// [`Validator::workload_at`] while a job's workload is checked.
    pub(super) fn at(&self, field: &str) -> String {
        match (&self.workload_at, field.strip_prefix("workload")) {
            (Some(base), Some(rest)) if rest.is_empty() || rest.starts_with('.') => {
                format!("{base}{rest}")
            }
            _ => field.to_string(),
        }
    }

    /// The span of `field` where the file writes it (see [`Validator::at`]).
    pub(super) fn span_of(&self, field: &str) -> Option<std::ops::Range<usize>> {
        self.src.span_of(&self.at(field))
    }

    /// The text of `field` where the file writes it (see [`Validator::at`]).
    pub(super) fn text_of(&self, field: &str) -> Option<&'a str> {
        self.src.text_of(&self.at(field))
    }
}

impl Validator<'_> {
    pub(super) fn err(
        &mut self,
        field: &str,
        found: impl Into<String>,
        expected: impl Into<String>,
    ) {
        let found = found.into();
        if self.quiet_missing && found == "nothing" {
            return;
        }
        let field = self.at(field);
        let d = self.src.diag(&field, found, expected);
        self.diags.push(d);
    }

    pub(super) fn count(
        &mut self,
        field: &str,
        v: Option<i64>,
        default: Option<i64>,
        min: i64,
        what: &str,
    ) -> Option<u32> {
        match v.or(default) {
            None => {
                self.err(field, "nothing", format!("{what} (an integer ≥ {min})"));
                None
            }
            Some(n) if n < min || n > u32::MAX as i64 => {
                self.err(field, n.to_string(), format!("{what}: an integer ≥ {min}"));
                None
            }
            Some(n) => Some(n as u32),
        }
    }

    pub(super) fn rate(
        &mut self,
        field: &str,
        v: Option<&RawQuantity>,
        default: Option<&str>,
    ) -> Option<Rate> {
        let (text, shown) = match (v, default) {
            (Some(RawQuantity::Str(s)), _) => (s.clone(), format!("{s:?}")),
            (Some(q @ RawQuantity::Int(_)), _) => {
                self.err(
                    field,
                    format!("{} (no unit)", q.shown()),
                    "a rate with a unit such as \"400Gbps\" or \"450GB/s\"",
                );
                return None;
            }
            (None, Some(d)) => (d.to_string(), format!("{d:?} (preset)")),
            (None, None) => {
                self.err(
                    field,
                    "nothing",
                    "a rate such as \"400Gbps\" (or name a preset)",
                );
                return None;
            }
        };
        match parse_rate(&text) {
            Ok(r) if r.bps() == 0 => {
                self.err(field, shown, "a rate above zero");
                None
            }
            Ok(r) => Some(r),
            Err(e) => {
                self.err(field, shown, e.expected);
                None
            }
        }
    }

    pub(super) fn time(
        &mut self,
        field: &str,
        v: Option<&RawQuantity>,
        default: Option<&str>,
    ) -> Option<SimTime> {
        let (text, shown) = match (v, default) {
            (Some(RawQuantity::Str(s)), _) => (s.clone(), format!("{s:?}")),
            (Some(RawQuantity::Int(0)), _) => return Some(SimTime::ZERO),
            (Some(q @ RawQuantity::Int(_)), _) => {
                self.err(
                    field,
                    format!("{} (no unit)", q.shown()),
                    "a duration with a unit such as \"500ns\"",
                );
                return None;
            }
            (None, Some(d)) => (d.to_string(), format!("{d:?} (default)")),
            (None, None) => {
                self.err(field, "nothing", "a duration such as \"500ns\"");
                return None;
            }
        };
        match parse_time(&text) {
            Ok(t) if t > max_duration(field) => {
                let cap = max_duration(field);
                self.err(
                    field,
                    shown,
                    if cap == MAX_LATENCY {
                        "a latency of at most 1s".to_string()
                    } else {
                        format!("a duration within the simulated-time range, at most {cap} (2^60 ps, about 13 days)")
                    },
                );
                None
            }
            Ok(t) => Some(t),
            Err(e) => {
                self.err(field, shown, e.expected);
                None
            }
        }
    }

    pub(super) fn size(
        &mut self,
        field: &str,
        v: Option<&RawQuantity>,
        default: Option<&str>,
        min: u64,
    ) -> Option<u64> {
        let (res, shown) = match (v, default) {
            (Some(RawQuantity::Int(i)), _) if *i >= 0 => (Ok(*i as u64), i.to_string()),
            (Some(RawQuantity::Int(i)), _) => (Err(()), i.to_string()),
            (Some(RawQuantity::Str(s)), _) => (parse_size(s).map_err(|_| ()), format!("{s:?}")),
            (None, Some(d)) => (parse_size(d).map_err(|_| ()), format!("{d:?} (default)")),
            (None, None) => {
                self.err(field, "nothing", "a size such as \"4KiB\"");
                return None;
            }
        };
        match res {
            Ok(b) if b < min => {
                self.err(field, shown, format!("a size of at least {min} bytes"));
                None
            }
            Ok(b) => Some(b),
            Err(()) => {
                self.err(
                    field,
                    shown,
                    "a size such as \"4KiB\", \"1.5MiB\", \"1GiB\" or a whole number of bytes",
                );
                None
            }
        }
    }

    /// A fraction in (0, 1] (`default` when the file leaves it out).
    pub(super) fn efficiency(
        &mut self,
        field: &str,
        v: Option<RawNumber>,
        default: f64,
    ) -> Option<f64> {
        let x = v.map_or(default, RawNumber::as_f64);
        if x > 0.0 && x <= 1.0 {
            Some(x)
        } else {
            self.err(
                field,
                x.to_string(),
                "a fraction of the line rate above 0 and at most 1, such as 0.82",
            );
            None
        }
    }
}

/// Every leaf key the file sets, dotted, in file order.
pub fn keys_set(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(tree) = toml::de::DeTable::parse(text) {
        collect_keys(tree.get_ref(), "", &mut out);
    }
    out
}

fn collect_keys(t: &toml::de::DeTable, prefix: &str, out: &mut Vec<String>) {
    let mut items: Vec<_> = t.iter().collect();
    items.sort_by_key(|(k, _)| k.span().start);
    for (k, v) in items {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        match v.get_ref() {
            toml::de::DeValue::Table(sub) => collect_keys(sub, &path, out),
            // an array of tables (`[[faults]]`) is one entry per table, each key
            // its own setting (`faults.1.bit_error_rate`); an array of values
            // (`sizes = [..]`) is one setting
            toml::de::DeValue::Array(items)
                if !items.is_empty()
                    && items
                        .iter()
                        .all(|i| matches!(i.get_ref(), toml::de::DeValue::Table(_))) =>
            {
                for (i, item) in items.iter().enumerate() {
                    if let toml::de::DeValue::Table(sub) = item.get_ref() {
                        collect_keys(sub, &format!("{path}.{i}"), out);
                    }
                }
            }
            _ => out.push(path),
        }
    }
}

//! Reads the output of NVIDIA's nccl-tests (`all_reduce_perf`, `all_gather_perf`,
//! `reduce_scatter_perf`, `alltoall_perf`, `broadcast_perf`, `sendrecv_perf`, …):
//! the ordinary text table and the `-J` JSON file.
//!
//! The text format (nccl-tests `src/common.cu`, `src/util.cu`):
//!
//! ```text
//! # Collective test starting: all_reduce_perf                (newer versions only)
//! # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) ...
//! #  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3
//! #       size   count   type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//!            8       2  float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0
//! # Avg bus bandwidth    : 70.742
//! ```
//!
//! Older versions have no `root` column (and no `redop` before 2.x) and call the last
//! column `error`; per-iteration, bitwise and timestamp columns are found by name in
//! the column header. NCCL log lines (`NCCL INFO …`), command lines and other text
//! between the rows are skipped; a line that starts like a data row but does not
//! parse is an error located at its line.
//!
//! What cannot be read from the file is inferred and the inference is recorded in
//! [`Measured::guesses`]: the operation (from `Collective test starting`, then a
//! `*_perf` name anywhere in the file, then the file name), the ranks (rank lines,
//! then `nThread × nGpus`, then busbw/algbw), nodes and GPUs per node (host names of
//! the rank lines).

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

/// Files larger than this are refused (so `/dev/zero` cannot fill memory).
pub const MAX_FILE_BYTES: u64 = crate::budget::MAX_INPUT_BYTES;
/// Lines longer than this are refused.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// The nccl-tests binaries, by the name they print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclOp {
    /// `all_reduce_perf`
    AllReduce,
    /// `all_gather_perf`
    AllGather,
    /// `reduce_scatter_perf`
    ReduceScatter,
    /// `alltoall_perf`
    AllToAll,
    /// `broadcast_perf`
    Broadcast,
    /// `reduce_perf`
    Reduce,
    /// `sendrecv_perf`
    SendRecv,
    /// `gather_perf`
    Gather,
    /// `scatter_perf`
    Scatter,
    /// `hypercube_perf`
    Hypercube,
}

impl NcclOp {
    /// Every binary, in the order names are tried.
    pub const ALL: [NcclOp; 10] = [
        NcclOp::AllReduce,
        NcclOp::AllGather,
        NcclOp::ReduceScatter,
        NcclOp::AllToAll,
        NcclOp::Broadcast,
        NcclOp::Reduce,
        NcclOp::SendRecv,
        NcclOp::Gather,
        NcclOp::Scatter,
        NcclOp::Hypercube,
    ];

    /// The name without `_perf`, as nccl-tests spells it (`all_reduce`, `alltoall`).
    pub fn name(self) -> &'static str {
        match self {
            NcclOp::AllReduce => "all_reduce",
            NcclOp::AllGather => "all_gather",
            NcclOp::ReduceScatter => "reduce_scatter",
            NcclOp::AllToAll => "alltoall",
            NcclOp::Broadcast => "broadcast",
            NcclOp::Reduce => "reduce",
            NcclOp::SendRecv => "sendrecv",
            NcclOp::Gather => "gather",
            NcclOp::Scatter => "scatter",
            NcclOp::Hypercube => "hypercube",
        }
    }

    /// The fabricsim collective, when fabricsim simulates this operation.
    pub fn collective(self) -> Option<crate::collective::CollectiveOp> {
        use crate::collective::CollectiveOp as C;
        match self {
            NcclOp::AllReduce => Some(C::AllReduce),
            NcclOp::AllGather => Some(C::AllGather),
            NcclOp::ReduceScatter => Some(C::ReduceScatter),
            NcclOp::AllToAll => Some(C::AllToAll),
            NcclOp::Broadcast => Some(C::Broadcast),
            _ => None,
        }
    }

    /// nccl-tests' busbw / algbw factor for `n` ranks (doc/PERFORMANCE.md).
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = f64::from(n.max(1));
        match self {
            NcclOp::AllReduce => 2.0 * (n - 1.0) / n,
            NcclOp::AllGather | NcclOp::ReduceScatter | NcclOp::AllToAll => (n - 1.0) / n,
            _ => 1.0,
        }
    }

    /// Finds a binary name in `word` (`all_reduce_perf`, `./build/alltoall_perf_mpi`,
    /// `allreduce`, `all-gather`): the longest operation name it contains.
    pub fn find_in(word: &str) -> Option<NcclOp> {
        let w: String = word
            .to_ascii_lowercase()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let mut best: Option<NcclOp> = None;
        for op in NcclOp::ALL {
            let key: String = op.name().chars().filter(|c| *c != '_').collect();
            if w.contains(&key) && best.is_none_or(|b| b.name().len() < op.name().len()) {
                best = Some(op);
            }
        }
        best
    }
}

/// One measurement (out-of-place or in-place) of one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Time of one operation, microseconds.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s.
    pub algbw_gbps: f64,
    /// Bus bandwidth, GB/s.
    pub busbw_gbps: f64,
    /// Wrong elements as printed (`0`, `N/A`, …).
    pub wrong: String,
}

/// One data row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Line in the file (1-based; 0 for JSON).
    pub line: usize,
    /// Size in bytes (nccl-tests meaning).
    pub bytes: u64,
    /// Elements.
    pub count: u64,
    /// Element type as printed (`float`, `half`, `bfloat16`…).
    pub dtype: String,
    /// Reduction (`sum`, `none`…), absent in the oldest format.
    pub redop: Option<String>,
    /// Root (`-1` when none), absent in older formats.
    pub root: Option<i64>,
    /// Out-of-place measurement.
    pub out_of_place: Option<Sample>,
    /// In-place measurement.
    pub in_place: Option<Sample>,
}

/// A parsed nccl-tests output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// The file it came from.
    pub file: String,
    /// `text` or `json`.
    pub format: &'static str,
    /// The operation, if it could be found.
    pub op: Option<NcclOp>,
    /// Ranks in the communicator, if known.
    pub ranks: Option<u32>,
    /// Distinct host names of the rank lines, in order of appearance.
    pub hosts: Vec<String>,
    /// Nodes (distinct hosts), if known.
    pub nodes: Option<u32>,
    /// GPUs per node, if known.
    pub gpus_per_node: Option<u32>,
    /// GPU model of the first rank line.
    pub gpu: Option<String>,
    /// The `# Avg bus bandwidth` figure.
    pub avg_busbw_gbps: Option<f64>,
    /// `# key: value` lines of the leading comment block (validation files' sources).
    pub meta: Vec<(String, String)>,
    /// Data rows in file order.
    pub rows: Vec<Row>,
    /// Where something was inferred rather than read, in words.
    pub guesses: Vec<String>,
}

/// A malformed file: where, what was found, what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file.
    pub file: String,
    /// Line (1-based), 0 when the problem is the whole file.
    pub line: usize,
    /// What was found.
    pub found: String,
    /// What was expected.
    pub expected: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{}:{}: found {}; expected {}",
                self.file, self.line, self.found, self.expected
            )
        } else {
            write!(
                f,
                "{}: found {}; expected {}",
                self.file, self.found, self.expected
            )
        }
    }
}

impl std::error::Error for ParseError {}

fn perr(
    file: &str,
    line: usize,
    found: impl Into<String>,
    expected: impl Into<String>,
) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        found: found.into(),
        expected: expected.into(),
    }
}

/// Reads and parses a file (text or JSON, by its first non-blank character).
///
/// # Errors
/// An unreadable, oversized, binary or malformed file.
pub fn load(path: &Path) -> Result<Measured, ParseError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| {
        perr(
            &name,
            0,
            format!("an unreadable file ({e})"),
            "a readable nccl-tests output file",
        )
    })?;
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| {
            perr(
                &name,
                0,
                format!("a read error ({e})"),
                "a readable nccl-tests output file",
            )
        })?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(perr(
            &name,
            0,
            format!("a file larger than {} MiB", MAX_FILE_BYTES >> 20),
            "an nccl-tests output (a few KiB)",
        ));
    }
    parse_bytes(&name, &buf)
}

/// Parses file contents (text or JSON).
///
/// # Errors
/// Binary data, over-long lines, malformed rows, no rows.
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Measured, ParseError> {
    // Locate binary data by line before anything else.
    let mut line = 1;
    let mut line_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            if i - line_start > MAX_LINE_BYTES {
                return Err(perr(
                    file,
                    line,
                    format!("a line of {} bytes", i - line_start),
                    format!("lines of at most {MAX_LINE_BYTES} bytes (nccl-tests text output)"),
                ));
            }
            line += 1;
            line_start = i + 1;
        } else if b == 0 {
            return Err(perr(
                file,
                line,
                "binary data (a NUL byte)",
                "text: nccl-tests output or its -J JSON",
            ));
        }
    }
    if bytes.len() - line_start > MAX_LINE_BYTES {
        return Err(perr(
            file,
            line,
            format!("a line of {} bytes", bytes.len() - line_start),
            format!("lines of at most {MAX_LINE_BYTES} bytes (nccl-tests text output)"),
        ));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.valid_up_to();
            let l = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(perr(
                file,
                l,
                "bytes that are not UTF-8 text",
                "text: nccl-tests output or its -J JSON",
            ));
        }
    };
    if text.trim_start().starts_with('{') {
        parse_json(file, text)
    } else {
        parse_text(file, text)
    }
}

/// The column layout found in the header line.
#[derive(Clone, Debug)]
struct Layout {
    /// Columns before the first `time`: size, count, [type], [redop], [root].
    has_type: bool,
    has_redop: bool,
    has_root: bool,
    /// Fields of the prefix.
    prefix: usize,
    /// Start of each measurement group (time, algbw, busbw, wrong) in the row.
    groups: Vec<usize>,
    /// Fields a full row has (without a trailing timestamp).
    total: usize,
    /// The header has a timestamp column (printed as two fields).
    timestamp: bool,
}

fn layout(cols: &[&str]) -> Option<Layout> {
    if cols.first() != Some(&"size") || cols.get(1) != Some(&"count") {
        return None;
    }
    let mut i = 2;
    let has_type = cols.get(i) == Some(&"type");
    if has_type {
        i += 1;
    }
    let has_redop = cols.get(i) == Some(&"redop");
    if has_redop {
        i += 1;
    }
    let has_root = cols.get(i) == Some(&"root");
    if has_root {
        i += 1;
    }
    let prefix = i;
    let mut groups = Vec::new();
    let mut timestamp = false;
    for (j, c) in cols.iter().enumerate().skip(prefix) {
        if *c == "time" || *c == "cputime" {
            groups.push(j);
        }
        if *c == "timestamp" {
            timestamp = true;
        }
    }
    if groups.is_empty() {
        return None;
    }
    let total = cols.len() - usize::from(timestamp);
    Some(Layout {
        has_type,
        has_redop,
        has_root,
        prefix,
        groups,
        total,
        timestamp,
    })
}

fn parse_text(file: &str, text: &str) -> Result<Measured, ParseError> {
    let mut m = Measured {
        file: file.to_string(),
        format: "text",
        op: None,
        ranks: None,
        hosts: Vec::new(),
        nodes: None,
        gpus_per_node: None,
        gpu: None,
        avg_busbw_gbps: None,
        meta: Vec::new(),
        rows: Vec::new(),
        guesses: Vec::new(),
    };
    let mut lay: Option<Layout> = None;
    let mut op_declared: Option<NcclOp> = None;
    let mut op_mentioned: Option<(NcclOp, usize)> = None;
    let mut nthread_ngpus: Option<u32> = None;
    // (rank, host) of each rank line
    let mut rank_lines: Vec<(u32, String)> = Vec::new();
    let mut in_leading_comments = true;
    for (idx, raw) in text.lines().enumerate() {
        let ln = idx + 1;
        let mut l = raw.trim();
        // mpirun --tag-output / --timestamp-output prefixes: `[1,0]<stdout>:`, `Thu Jul 18 15:41:05 2024<stdout>:`
        if let Some(i) = l.find("<stdout>:") {
            l = l[i + "<stdout>:".len()..].trim();
        }
        if l.is_empty() {
            continue;
        }
        // Header lines pasted where Markdown ate the `#` still start with their keyword.
        let first = l.split_whitespace().next().unwrap_or("");
        let bare_header = matches!(first, "size" | "Rank" | "nThread")
            || l.starts_with("Avg bus bandwidth")
            || l.starts_with("Collective test starting:");
        let comment = l.strip_prefix('#').map(str::trim);
        if let Some(c) = comment.or(if bare_header { Some(l) } else { None }) {
            if in_leading_comments && comment.is_some() {
                if let Some((k, v)) = c.split_once(':') {
                    let k = k.trim();
                    if !k.is_empty()
                        && k.len() <= 24
                        && k.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                    {
                        m.meta.push((k.to_ascii_lowercase(), v.trim().to_string()));
                    }
                }
            }
            let words: Vec<&str> = c.split_whitespace().collect();
            if let Some(name) = c.strip_prefix("Collective test starting:") {
                op_declared = NcclOp::find_in(name.trim());
            } else if words.first() == Some(&"nThread") {
                let nt = words.get(1).and_then(|w| w.parse::<u32>().ok());
                let ng = words
                    .iter()
                    .position(|w| *w == "nGpus")
                    .and_then(|p| words.get(p + 1))
                    .and_then(|w| w.parse::<u32>().ok());
                if let (Some(a), Some(b)) = (nt, ng) {
                    nthread_ngpus = Some(a.saturating_mul(b));
                }
            } else if words.first() == Some(&"Rank") && words.contains(&"on") {
                if let Some(r) = words.get(1).and_then(|w| w.parse::<u32>().ok()) {
                    let on = words.iter().position(|w| *w == "on").unwrap_or(0);
                    if let Some(h) = words.get(on + 1) {
                        rank_lines.push((r, (*h).to_string()));
                        if m.gpu.is_none() {
                            if let Some(b) = c.find(']') {
                                let g = c[b + 1..].trim();
                                if !g.is_empty() {
                                    m.gpu = Some(g.to_string());
                                }
                            }
                        }
                    }
                }
            } else if words.first() == Some(&"size") {
                if let Some(nl) = layout(&words) {
                    lay = Some(nl);
                }
            } else if c.starts_with("Avg bus bandwidth") {
                if let Some((_, v)) = c.split_once(':') {
                    m.avg_busbw_gbps = v.split_whitespace().next().and_then(|w| w.parse().ok());
                }
            }
            if op_mentioned.is_none() {
                if let Some(op) = words
                    .iter()
                    .find(|w| w.contains("_perf"))
                    .and_then(|w| NcclOp::find_in(w))
                {
                    op_mentioned = Some((op, ln));
                }
            }
            continue;
        }
        in_leading_comments = false;
        let fields: Vec<&str> = l.split_whitespace().collect();
        let first_is_number = fields
            .first()
            .is_some_and(|f| f.chars().all(|c| c.is_ascii_digit()));
        let Some(lay) = lay.as_ref().filter(|_| first_is_number) else {
            // command lines, NCCL log lines, anything else between the rows
            if op_mentioned.is_none() {
                if let Some(op) = fields
                    .iter()
                    .find(|w| w.contains("_perf"))
                    .and_then(|w| NcclOp::find_in(w))
                {
                    op_mentioned = Some((op, ln));
                }
            }
            continue;
        };
        m.rows.push(parse_row(file, ln, &fields, lay)?);
    }
    if m.rows.is_empty() {
        let why = if lay.is_none() {
            "no column header (`#  size  count  type  redop  root  time  algbw  busbw …`) and no data rows"
        } else {
            "a column header but no data rows"
        };
        return Err(perr(
            file,
            0,
            why,
            "nccl-tests output with at least one data row",
        ));
    }
    // the operation
    m.op = op_declared;
    if m.op.is_none() {
        if let Some((op, ln)) = op_mentioned {
            m.op = Some(op);
            m.guesses.push(format!(
                "operation {} from the name {}_perf at line {ln} (no `# Collective test starting` line)",
                op.name(),
                op.name()
            ));
        }
    }
    finish(&mut m, rank_lines, nthread_ngpus);
    Ok(m)
}

fn num<T: std::str::FromStr>(file: &str, ln: usize, f: &str, what: &str) -> Result<T, ParseError> {
    f.parse::<T>().map_err(|_| {
        perr(
            file,
            ln,
            format!("{f:?} in the {what} column"),
            format!("a number in the {what} column"),
        )
    })
}

fn float(file: &str, ln: usize, f: &str, what: &str) -> Result<f64, ParseError> {
    let v: f64 = num(file, ln, f, what)?;
    if !v.is_finite() || v < 0.0 {
        return Err(perr(
            file,
            ln,
            format!("{f:?} in the {what} column"),
            format!("a finite number ≥ 0 in the {what} column"),
        ));
    }
    Ok(v)
}

fn parse_row(file: &str, ln: usize, f: &[&str], lay: &Layout) -> Result<Row, ParseError> {
    // a row may stop after the out-of-place group (in-place not run)
    let min = lay.groups.get(1).copied().unwrap_or(lay.total);
    let max = lay.total + if lay.timestamp { 2 } else { 0 };
    if f.len() < min || f.len() > max {
        return Err(perr(
            file,
            ln,
            format!("a row of {} fields", f.len()),
            format!(
                "{} fields as the column header says (size, count, type{}{}, then time, algbw, busbw, #wrong for out-of-place and in-place)",
                lay.total,
                if lay.has_redop { ", redop" } else { "" },
                if lay.has_root { ", root" } else { "" }
            ),
        ));
    }
    let bytes: u64 = num(file, ln, f[0], "size")?;
    let count: u64 = num(file, ln, f[1], "count")?;
    let mut i = 2;
    let dtype = if lay.has_type {
        i += 1;
        f[2].to_string()
    } else {
        "float".to_string()
    };
    if dtype.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return Err(perr(
            file,
            ln,
            format!("{dtype:?} in the type column"),
            "a type name such as float, half, bfloat16",
        ));
    }
    let redop = if lay.has_redop {
        i += 1;
        Some(f[i - 1].to_string())
    } else {
        None
    };
    let root = if lay.has_root {
        i += 1;
        Some(num::<i64>(file, ln, f[i - 1], "root")?)
    } else {
        None
    };
    debug_assert_eq!(i, lay.prefix);
    let mut samples = Vec::new();
    for &g in &lay.groups {
        if g + 3 > f.len() {
            break;
        }
        let time_us = float(file, ln, f[g], "time")?;
        let algbw_gbps = float(file, ln, f[g + 1], "algbw")?;
        let busbw_gbps = float(file, ln, f[g + 2], "busbw")?;
        let wrong = f.get(g + 3).map_or_else(String::new, |w| (*w).to_string());
        samples.push(Sample {
            time_us,
            algbw_gbps,
            busbw_gbps,
            wrong,
        });
    }
    if samples.is_empty() {
        return Err(perr(
            file,
            ln,
            "a row without a time column",
            "time, algbw and busbw after the size columns",
        ));
    }
    let mut it = samples.into_iter();
    Ok(Row {
        line: ln,
        bytes,
        count,
        dtype,
        redop,
        root,
        out_of_place: it.next(),
        in_place: it.next(),
    })
}

/// Fills ranks, nodes, GPUs per node and the operation from what was found, noting guesses.
fn finish(m: &mut Measured, rank_lines: Vec<(u32, String)>, nthread_ngpus: Option<u32>) {
    if !rank_lines.is_empty() {
        let mut ids: Vec<u32> = rank_lines.iter().map(|r| r.0).collect();
        ids.sort_unstable();
        ids.dedup();
        let n = rank_lines.len() as u32;
        if (ids.len() as u32) < n {
            m.guesses.push(format!(
                "rank numbers repeat in the {n} rank lines (each process printed its own header?): counted {n} ranks"
            ));
        }
        m.ranks = Some(n);
        let mut per_host: Vec<(String, u32)> = Vec::new();
        for (_, h) in &rank_lines {
            match per_host.iter_mut().find(|(x, _)| x == h) {
                Some(e) => e.1 += 1,
                None => per_host.push((h.clone(), 1)),
            }
        }
        m.hosts = per_host.iter().map(|(h, _)| h.clone()).collect();
        m.nodes = Some(per_host.len() as u32);
        let max = per_host.iter().map(|p| p.1).max().unwrap_or(1);
        if per_host.iter().any(|p| p.1 != max) {
            m.guesses.push(format!(
                "hosts carry different numbers of ranks ({}): GPUs per node taken as the largest, {max}",
                per_host.iter().map(|(h, c)| format!("{h}: {c}")).collect::<Vec<_>>().join(", ")
            ));
        }
        m.gpus_per_node = Some(max);
    } else if let Some(n) = nthread_ngpus.filter(|&n| n > 1) {
        m.ranks = Some(n);
        m.nodes = Some(1);
        m.gpus_per_node = Some(n);
        m.guesses.push(format!(
            "no rank lines: {n} ranks from nThread × nGpus, assumed one process on one node"
        ));
    }
    // validation files state what their source says in `# nodes:` / `# gpus_per_node:`
    let meta_n = |k: &str| {
        m.meta
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.split_whitespace().next())
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&v| v > 0)
    };
    if m.nodes.is_none() {
        if let (Some(n), Some(g)) = (meta_n("nodes"), meta_n("gpus_per_node")) {
            if m.ranks.is_none_or(|r| r == n * g) {
                m.ranks = Some(n * g);
                m.nodes = Some(n);
                m.gpus_per_node = Some(g);
                m.guesses.push(format!(
                    "no rank lines: {n} nodes x {g} GPUs from the file's `# nodes:` and `# gpus_per_node:` comment lines"
                ));
            }
        }
    }
    // the operation from the busbw/algbw ratio or the redop column, as a last resort
    if m.op.is_none() {
        let name = Path::new(&m.file)
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        if let Some(op) = NcclOp::find_in(&name) {
            m.op = Some(op);
            m.guesses.push(format!(
                "operation {} from the file name {name:?}",
                op.name()
            ));
        } else if m.rows.iter().all(|r| r.redop.as_deref() == Some("sum")) {
            m.op = Some(NcclOp::AllReduce);
            m.guesses.push(
                "operation all_reduce assumed: no binary name in the file or its name, and every row reduces (redop sum)".into(),
            );
        }
    }
    // ranks from busbw/algbw when nothing else said
    if m.ranks.is_none() {
        if let (Some(op), Some(r)) = (m.op, ratio(&m.rows)) {
            let n = match op {
                NcclOp::AllReduce if r < 1.999 => Some(2.0 / (2.0 - r)),
                NcclOp::AllGather | NcclOp::ReduceScatter | NcclOp::AllToAll if r < 0.999 => {
                    Some(1.0 / (1.0 - r))
                }
                _ => None,
            };
            if let Some(n) = n.filter(|n| n.is_finite() && *n >= 1.5 && *n < 1e6) {
                let n = n.round() as u32;
                m.ranks = Some(n);
                m.guesses.push(format!(
                    "no rank lines: {n} ranks from busbw/algbw = {r:.3} ({}); nodes unknown",
                    op.name()
                ));
            }
        }
    }
}

/// busbw / algbw of the row with the largest algbw (the most digits).
fn ratio(rows: &[Row]) -> Option<f64> {
    rows.iter()
        .filter_map(|r| r.out_of_place.as_ref())
        .filter(|s| s.algbw_gbps >= 1.0)
        .max_by(|a, b| a.algbw_gbps.total_cmp(&b.algbw_gbps))
        .map(|s| s.busbw_gbps / s.algbw_gbps)
}

// ------------------------------------------------------------------ JSON (-J)

fn parse_json(file: &str, text: &str) -> Result<Measured, ParseError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        perr(
            file,
            e.line(),
            format!("malformed JSON ({e})"),
            "the JSON document nccl-tests writes with -J",
        )
    })?;
    let bad = |what: &str| {
        perr(file, 0, what.to_string(), "the -J document: an object with \"results\": [{\"size\", \"count\", \"type\", \"out_of_place\": {\"time\", \"alg_bw\", \"bus_bw\"}, …}]")
    };
    let obj = v
        .as_object()
        .ok_or_else(|| bad("a JSON value that is not an object"))?;
    let results = obj
        .get("results")
        .and_then(|r| r.as_array())
        .ok_or_else(|| bad("no \"results\" list"))?;
    let mut m = Measured {
        file: file.to_string(),
        format: "json",
        op: None,
        ranks: None,
        hosts: Vec::new(),
        nodes: None,
        gpus_per_node: None,
        gpu: None,
        avg_busbw_gbps: obj
            .get("average_bus_bandwidth")
            .and_then(|a| a.get("bandwidth"))
            .and_then(serde_json::Value::as_f64),
        meta: Vec::new(),
        rows: Vec::new(),
        guesses: Vec::new(),
    };
    if let Some(prog) = obj
        .get("args")
        .and_then(|a| a.get(0))
        .and_then(|a| a.as_str())
    {
        m.op = NcclOp::find_in(prog.rsplit('/').next().unwrap_or(prog));
    }
    let sample =
        |i: usize, r: &serde_json::Value, key: &str| -> Result<Option<Sample>, ParseError> {
            let Some(s) = r.get(key) else { return Ok(None) };
            if s.is_null() {
                return Ok(None);
            }
            let f = |k: &str| -> Result<f64, ParseError> {
                let x = s
                    .get(k)
                    .or_else(|| if k == "time" { s.get("cpu_time") } else { None });
                match x.and_then(serde_json::Value::as_f64) {
                    Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
                    _ => Err(perr(
                        file,
                        0,
                        format!(
                            "results[{i}].{key}.{k} = {}",
                            x.map_or("nothing".to_string(), |x| x.to_string())
                        ),
                        format!("a number ≥ 0 in results[{i}].{key}.{k}"),
                    )),
                }
            };
            Ok(Some(Sample {
                time_us: f("time")?,
                algbw_gbps: f("alg_bw")?,
                busbw_gbps: f("bus_bw")?,
                wrong: s.get("nwrong").map_or_else(String::new, |w| w.to_string()),
            }))
        };
    for (i, r) in results.iter().enumerate() {
        let u = |k: &str| -> Result<u64, ParseError> {
            r.get(k).and_then(serde_json::Value::as_u64).ok_or_else(|| {
                perr(
                    file,
                    0,
                    format!(
                        "results[{i}].{k} = {}",
                        r.get(k).map_or("nothing".into(), |x| x.to_string())
                    ),
                    format!("a whole number in results[{i}].{k}"),
                )
            })
        };
        let row = Row {
            line: 0,
            bytes: u("size")?,
            count: u("count")?,
            dtype: r
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("float")
                .to_string(),
            redop: r.get("redop").and_then(|t| t.as_str()).map(str::to_string),
            root: r.get("root").and_then(|t| match t {
                serde_json::Value::String(s) => s.trim().parse().ok(),
                x => x.as_i64(),
            }),
            out_of_place: sample(i, r, "out_of_place")?,
            in_place: sample(i, r, "in_place")?,
        };
        if row.out_of_place.is_none() && row.in_place.is_none() {
            return Err(perr(
                file,
                0,
                format!("results[{i}] without out_of_place or in_place"),
                "a measurement in each result",
            ));
        }
        m.rows.push(row);
    }
    if m.rows.is_empty() {
        return Err(bad("an empty \"results\" list"));
    }
    let mut rank_lines = Vec::new();
    if let Some(devs) = obj
        .get("config")
        .and_then(|c| c.get("devices"))
        .and_then(|d| d.as_array())
    {
        for d in devs {
            let r = d
                .get("rank")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0) as u32;
            let h = d
                .get("hostname")
                .and_then(|h| h.as_str())
                .unwrap_or("?")
                .to_string();
            if m.gpu.is_none() {
                m.gpu = d
                    .get("device_info")
                    .and_then(|h| h.as_str())
                    .map(str::to_string);
            }
            rank_lines.push((r, h));
        }
    }
    let nt = obj.get("config").and_then(|c| {
        let a = c.get("nthreads")?.as_u64()?;
        let b = c.get("ngpus")?.as_u64()?;
        Some((a * b) as u32)
    });
    finish(&mut m, rank_lines, nt);
    Ok(m)
}

// ------------------------------------------------------------------ writing

/// Formats rows as nccl-tests prints them (current format with redop and root),
/// after `header` comment lines (each printed with a leading `# `).
pub fn format_text(
    op: NcclOp,
    hosts: &[(String, u32)],
    gpu: &str,
    header: &[String],
    rows: &[(u64, u64, &str, f64, f64, f64)],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for h in header {
        let _ = writeln!(s, "# {h}");
    }
    let _ = writeln!(s, "# Collective test starting: {}_perf", op.name());
    let _ = writeln!(s, "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        rows.first().map_or(0, |r| r.0), rows.last().map_or(0, |r| r.0));
    let _ = writeln!(s, "#\n# Using devices");
    let mut rank = 0;
    for (h, g) in hosts {
        for d in 0..*g {
            let _ = writeln!(
                s,
                "#  Rank {rank:2} Group  0 Pid {:6} on {h:>10} device {d:2} [0000:{:02x}:00] {gpu}",
                1000 + rank,
                d * 16
            );
            rank += 1;
        }
    }
    let redop = if matches!(
        op,
        NcclOp::AllReduce | NcclOp::ReduceScatter | NcclOp::Reduce
    ) {
        "sum"
    } else {
        "none"
    };
    let root = if matches!(op, NcclOp::Broadcast | NcclOp::Reduce) {
        "0"
    } else {
        "-1"
    };
    let _ = writeln!(s, "#\n#                                                              out-of-place                       in-place          ");
    let _ = writeln!(s, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong");
    let _ = writeln!(s, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ");
    let mut sum = 0.0;
    for (bytes, count, ty, t, a, b) in rows {
        sum += b;
        let _ = writeln!(
            s,
            "{bytes:>12}  {count:>12}  {ty:>8}  {redop:>6}  {root:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}",
            fmt_f(*t, 7), fmt_f(*a, 6), fmt_f(*b, 6), 0, fmt_f(*t, 7), fmt_f(*a, 6), fmt_f(*b, 6), 0
        );
    }
    let _ = writeln!(s, "# Out of bounds values : 0 OK");
    let _ = writeln!(
        s,
        "# Avg bus bandwidth    : {:.4} ",
        sum / rows.len().max(1) as f64
    );
    let _ = writeln!(s, "#\n# Collective test concluded: {}_perf", op.name());
    s
}

/// nccl-tests' `getFloatStr`: two decimals, fewer when the width would overflow.
pub fn fmt_f(v: f64, width: usize) -> String {
    for p in [2usize, 1, 0] {
        let s = format!("{v:.p$}");
        if s.len() <= width {
            return s;
        }
    }
    format!("{v:.1e}")
}

//! Parameter sweeps: `--set key=v1,v2,…` overrides, their cross product run in
//! parallel, one CSV row per run and an HTML report of the figure of merit against
//! each swept parameter.
//!
//! An override rewrites the scenario *text* — the value at the key's span, or a
//! new `key = value` line in the key's table when the file does not set it — and the
//! result is validated like any scenario file, so a bad value gets the usual
//! located diagnostic; the file name in it carries the override
//! (`x.toml [--set fabric.link_rate=0Gbps]`). Results come back in cross-product
//! order (first `--set` slowest), whatever the thread timing.
//!
//! A sweep larger than one machine is cut into [`Shard`]s, one per task of a
//! batch job array, and [`merge`] joins their CSVs into the whole sweep's.

use std::fmt::Write;

use rayon::prelude::*;

use crate::config::{self, ConfigError, Scenario, Source};
use crate::report::compare::mean_busbw;
use crate::report::csv::{cell, csv_field};
use crate::report::html;
use crate::report::svg::{self, esc, Line, LineChart, XAxis};
use crate::report::Report;
use crate::run::{self, RunOptions};

/// One swept parameter: a dotted key and the values it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    /// Dotted key, e.g. `fabric.link_latency`.
    pub key: String,
    /// Values as written on the command line, e.g. `100ns`.
    pub values: Vec<String>,
}

/// Parses `key=v1,v2,…` (commas inside `[…]`, `{…}` or quotes do not split).
///
/// # Errors
/// A message when there is no `=`, the key is empty or a value is empty.
pub fn parse_set(arg: &str) -> Result<Axis, String> {
    let Some((key, vals)) = arg.split_once('=') else {
        return Err(format!(
            "--set {arg:?}: expected KEY=VALUE[,VALUE…], e.g. fabric.link_latency=100ns,1us"
        ));
    };
    let key = key.trim();
    let valid_key = !key.is_empty()
        && key
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    if !valid_key {
        return Err(format!(
            "--set {arg:?}: {key:?} is not a dotted key such as fabric.link_rate"
        ));
    }
    let mut values = Vec::new();
    let (mut depth, mut quote, mut cur) = (0i32, None::<char>, String::new());
    for c in vals.chars() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('[' | '{', None) => depth += 1,
            (']' | '}', None) => depth -= 1,
            (',', None) if depth == 0 => {
                values.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    values.push(cur.trim().to_string());
    if values.iter().any(String::is_empty) {
        return Err(format!("--set {arg:?}: empty value"));
    }
    Ok(Axis {
        key: key.to_string(),
        values,
    })
}

/// `raw` as a TOML value: kept as written when it is one (`8`, `3.0`, `true`,
/// `"x"`, `[1, 2]`), quoted as a string otherwise (`100ns` → `"100ns"`).
pub fn toml_value(raw: &str) -> String {
    if toml::from_str::<toml::Table>(&format!("v = {raw}")).is_ok() {
        raw.to_string()
    } else {
        let mut s = String::from("\"");
        for c in raw.chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                c => s.push(c),
            }
        }
        s.push('"');
        s
    }
}

/// Sets `key` to `value` (already TOML) in scenario `text`: replaces the value at
/// the key's span, or inserts `leaf = value` under the key's `[table]` header
/// (appending the table when the file has none).
pub fn rewrite(text: &str, key: &str, value: &str) -> String {
    let src = Source::new("", text);
    if let Some(span) = src.span_of(key) {
        // span_of stops at a scalar when the path goes deeper than the file does;
        // only replace when the span is really this key's value.
        if src.path_at(&span).as_deref() == Some(key) {
            let mut out = String::with_capacity(text.len() + value.len());
            out.push_str(&text[..span.start]);
            out.push_str(value);
            out.push_str(&text[span.end..]);
            return out;
        }
    }
    let (table, leaf) = match key.rsplit_once('.') {
        Some((t, l)) => (Some(t), l),
        None => (None, key),
    };
    let line = format!("{leaf} = {value}\n");
    let Some(table) = table else {
        return format!("{line}{text}");
    };
    let header = format!("[{table}]");
    let mut pos = 0;
    for l in text.split_inclusive('\n') {
        pos += l.len();
        let t = l.trim();
        let is_header = t.strip_prefix(&header).is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.is_empty() || rest.starts_with('#')
        });
        if is_header {
            let mut out = String::with_capacity(text.len() + line.len() + 1);
            out.push_str(&text[..pos]);
            if !text[..pos].ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&line);
            out.push_str(&text[pos..]);
            return out;
        }
    }
    let sep = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{text}{sep}\n{header}\n{line}")
}

/// Applies `sets` (key, raw value) to `text` and validates the result. Diagnostics
/// name the file followed by the overrides.
///
/// # Errors
/// The validation problems of the rewritten scenario.
pub fn apply(file: &str, text: &str, sets: &[(String, String)]) -> Result<Scenario, ConfigError> {
    let mut t = text.to_string();
    for (k, v) in sets {
        t = rewrite(&t, k, &toml_value(v));
    }
    let label = if sets.is_empty() {
        file.to_string()
    } else {
        let o: Vec<String> = sets.iter().map(|(k, v)| format!("--set {k}={v}")).collect();
        format!("{file} [{}]", o.join(" "))
    };
    config::parse(&label, &t)
}

/// Every combination of the axes' value indices, first axis slowest.
pub fn combinations(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for a in axes {
        let mut next = Vec::with_capacity(out.len() * a.values.len());
        for c in &out {
            for i in 0..a.values.len() {
                let mut c = c.clone();
                c.push(i);
                next.push(c);
            }
        }
        out = next;
    }
    out
}

/// One run of a sweep.
#[derive(Clone, Debug)]
pub struct SweepRun {
    /// Its place in the whole cross product ([`combinations`] order, from 0),
    /// whichever shard ran it.
    pub index: usize,
    /// The value of each axis, in axis order.
    pub values: Vec<String>,
    /// Its report, or why it could not run.
    pub result: Result<Report, String>,
    /// Its `workload.kind` (`training`, `chakra`, …): which of
    /// [`WORKLOAD_COLUMNS`] its report fills.
    pub kind: &'static str,
}

/// What a sweep reports as it goes (from the worker threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepEvent {
    /// Run `i` (in [`combinations`] order) started.
    Started(usize),
    /// Run `i` finished.
    Finished(usize),
}

/// Most runs in one sweep.
pub const MAX_RUNS: usize = 10_000;

/// Most threads a sweep starts, whatever `--jobs` says.
pub const MAX_JOBS: usize = 256;

/// Threads for `runs` runs: `jobs` (0 = all cores), never more than the runs
/// or [`MAX_JOBS`], at least one.
pub fn threads(jobs: usize, runs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let asked = if jobs == 0 { cores } else { jobs };
    asked.min(runs).clamp(1, MAX_JOBS)
}

/// One slice of a sweep's cross product, for batch schedulers (a Slurm job array
/// runs slice `k` of `n` in each task, and `sweep-merge` joins their CSVs).
///
/// Runs are dealt round-robin (run `i` belongs to slice `i mod n`), so when the
/// first axis is the expensive one (`cluster.nodes`) every slice gets its share
/// of the large runs instead of one slice getting all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which slice, from 0 (the command line writes it from 1: `--shard 1/4`).
    pub index: usize,
    /// How many slices, at least 1.
    pub count: usize,
}

impl Shard {
    /// Parses `K/N` with 1 ≤ K ≤ N ≤ [`MAX_RUNS`].
    ///
    /// # Errors
    /// A message naming what was found and what is expected.
    pub fn parse(arg: &str) -> Result<Shard, String> {
        let expected = "expected K/N with 1 <= K <= N, e.g. --shard 2/8 (K counts from 1, as Slurm's --array=1-N does)";
        let Some((k, n)) = arg.split_once('/') else {
            return Err(format!("--shard {arg:?}: {expected}"));
        };
        let (Ok(k), Ok(n)) = (k.trim().parse::<usize>(), n.trim().parse::<usize>()) else {
            return Err(format!("--shard {arg:?}: {expected}"));
        };
        if k == 0 || n == 0 || k > n {
            return Err(format!("--shard {arg:?}: {expected}"));
        }
        if n > MAX_RUNS {
            return Err(format!(
                "--shard {arg:?}: {n} slices; a sweep has at most {MAX_RUNS} runs, so at most {MAX_RUNS} slices"
            ));
        }
        Ok(Shard {
            index: k - 1,
            count: n,
        })
    }

    /// Whether run `i` of the cross product belongs to this slice.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count == self.index
    }
}

/// Validates every combination first (so a bad value stops the sweep before anything
/// runs), then runs them on `jobs` threads (0 = all cores). `on_event` is called as
/// each run starts and finishes, from its worker thread. Results are in
/// [`combinations`] order, whatever the thread timing.
///
/// # Errors
/// The diagnostics of the first combination that does not validate.
pub fn run(
    file: &str,
    text: &str,
    axes: &[Axis],
    opts: &RunOptions,
    jobs: usize,
    on_event: &(dyn Fn(SweepEvent) + Sync),
) -> Result<Vec<SweepRun>, ConfigError> {
    run_shard(file, text, axes, opts, jobs, None, on_event)
}

/// [`run`] restricted to one [`Shard`] of the cross product (`None`: all of it).
/// Every combination is still validated, so each slice of a sweep refuses the same
/// bad value the whole sweep would, before anything runs. `on_event` receives
/// indices into the cross product.
///
/// # Errors
/// The diagnostics of the first combination that does not validate.
pub fn run_shard(
    file: &str,
    text: &str,
    axes: &[Axis],
    opts: &RunOptions,
    jobs: usize,
    shard: Option<Shard>,
    on_event: &(dyn Fn(SweepEvent) + Sync),
) -> Result<Vec<SweepRun>, ConfigError> {
    // the cross product is counted before it is built: 20 axes of 10 values
    // would not fit in memory
    let total = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_RUNS);
    if total.is_none() {
        let sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
        return Err(ConfigError {
            diagnostics: vec![crate::config::Diagnostic {
                file: file.to_string(),
                line: 0,
                col: 0,
                field: "--set".into(),
                found: format!("a cross product of {} values", sizes.join(" x ")),
                expected: format!("at most {MAX_RUNS} runs in one sweep"),
                snippet: String::new(),
            }],
        });
    }
    let combos = combinations(axes);
    let mut scenarios = Vec::with_capacity(combos.len());
    for (index, c) in combos.iter().enumerate() {
        let sets: Vec<(String, String)> = axes
            .iter()
            .zip(c)
            .map(|(a, &i)| (a.key.clone(), a.values[i].clone()))
            .collect();
        let s = apply(file, text, &sets)?;
        if shard.is_none_or(|sh| sh.owns(index)) {
            scenarios.push((
                index,
                sets.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
                s,
            ));
        }
    }
    let workers = threads(jobs, scenarios.len());
    // the sweep's runs already fill the cores: each runs its own independent
    // simulations one after another unless told otherwise
    let opts = &run::RunOptions {
        threads: opts.threads.or((workers > 1).then_some(1)),
        ..opts.clone()
    };
    let work = || {
        scenarios
            .par_iter()
            .map(|(index, values, s)| {
                on_event(SweepEvent::Started(*index));
                let result = run::run(s, opts).map_err(|e| e.to_string());
                on_event(SweepEvent::Finished(*index));
                SweepRun {
                    index: *index,
                    values: values.clone(),
                    result,
                    kind: s.workload().kind_name(),
                }
            })
            .collect::<Vec<_>>()
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build();
    Ok(match pool {
        Ok(p) => p.install(work),
        Err(_) => work(),
    })
}

/// The (op, size) pairs of every run, in first-seen order.
fn size_keys(runs: &[SweepRun]) -> Vec<(String, u64)> {
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in runs.iter().filter_map(|r| r.result.as_ref().ok()) {
        for c in &r.collectives {
            if !keys.iter().any(|(o, b)| *o == c.op && *b == c.bytes) {
                keys.push((c.op.clone(), c.bytes));
            }
        }
    }
    keys
}

/// The sweep as CSV: one row per run, the swept values then the headline figures
/// (per collective size time and busbw, mean busbw, FCT p50/p99, fabric counters)
/// and `error` for runs that failed. A counter the run's fidelity does not model
/// (drops, ECN marks, PFC pauses below the packet level) is an empty cell, as a
/// failed run's figures are. No wall-clock fields, so the file is the same
/// on every machine and thread count.
pub fn csv(axes: &[Axis], runs: &[SweepRun]) -> String {
    csv_with(axes, runs, None)
}

/// The CSV of one [`Shard`]: [`csv`]'s columns preceded by `run` (the run's
/// index in the whole cross product) and `runs` (the size of the cross
/// product), which is what [`merge`] needs to put the slices back in order and
/// to notice a missing one.
pub fn shard_csv(axes: &[Axis], runs: &[SweepRun], total: usize) -> String {
    csv_with(axes, runs, Some(total))
}

/// The figures a workload reports beside its collectives, in this order,
/// between the per-size columns and [`TAIL_COLUMNS`]: each is a column when
/// some run of the sweep reports it (a training step's time and MFU, a Chakra
/// trace set's step time, an inference batch's TTFT and TPOT), and an empty
/// cell in the rows of runs whose workload does not model it (never 0).
pub const WORKLOAD_COLUMNS: [&str; 5] = [
    "step_time_us",
    "mfu",
    "ttft_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
];

/// The [`WORKLOAD_COLUMNS`] figures of one run: a training step's time
/// (`training.step_time_s`) and MFU, a Chakra trace set's step time (the
/// run's makespan), an inference batch's prefill (time to first token) and
/// time per output token (p50, p99); `None` for what the workload does not
/// report, and for a run a deadlock stopped (its step never ended).
pub fn workload_figures(kind: &str, rep: &Report) -> [Option<f64>; 5] {
    if rep.deadlock.is_some() {
        return [None; 5];
    }
    let step = match (kind, &rep.training) {
        (_, Some(t)) => Some(t.step_time_s * 1e6),
        ("chakra", None) => Some(rep.makespan_us),
        _ => None,
    };
    let inf = rep.inference.as_ref();
    [
        step,
        rep.training.as_ref().map(|t| t.mfu),
        inf.map(|i| i.prefill_ms),
        inf.map(|i| i.tpot_ms.p50),
        inf.map(|i| i.tpot_ms.p99),
    ]
}

/// Which [`WORKLOAD_COLUMNS`] some run of `runs` reports.
fn workload_keys(runs: &[SweepRun]) -> Vec<usize> {
    (0..WORKLOAD_COLUMNS.len())
        .filter(|&k| {
            runs.iter().any(|r| {
                r.result
                    .as_ref()
                    .is_ok_and(|rep| workload_figures(r.kind, rep)[k].is_some())
            })
        })
        .collect()
}

/// The fixed columns after the per-size ones.
const TAIL_COLUMNS: [&str; 13] = [
    "mean_busbw_GBps",
    "flows",
    "fct_p50_us",
    "fct_p99_us",
    "drops",
    "ecn_marks",
    "pfc_pause_frames",
    "pfc_watchdog_triggers",
    "pfc_watchdog_drops",
    "pfc_headroom_drops",
    "pfc_deadlock_cycles",
    "events",
    "error",
];

fn csv_with(axes: &[Axis], runs: &[SweepRun], shard_total: Option<usize>) -> String {
    let keys = size_keys(runs);
    let figures = workload_keys(runs);
    let mut s = String::new();
    if shard_total.is_some() {
        s.push_str("run,runs,");
    }
    for a in axes {
        let _ = write!(s, "{},", csv_field(&a.key));
    }
    s.push_str("fidelity");
    for (op, b) in &keys {
        let _ = write!(s, ",{op}_{b}_time_us,{op}_{b}_busbw_GBps");
    }
    for &k in &figures {
        let _ = write!(s, ",{}", WORKLOAD_COLUMNS[k]);
    }
    let _ = writeln!(s, ",{}", TAIL_COLUMNS.join(","));
    for r in runs {
        if let Some(total) = shard_total {
            let _ = write!(s, "{},{total},", r.index);
        }
        for v in &r.values {
            let _ = write!(s, "{},", csv_field(v));
        }
        match &r.result {
            Ok(rep) => {
                s.push_str(&rep.fidelity);
                for (op, b) in &keys {
                    match rep
                        .collectives
                        .iter()
                        .find(|c| c.op == *op && c.bytes == *b)
                    {
                        Some(c) => {
                            let _ = write!(s, ",{:.4},{:.4}", c.time_us, c.busbw_gbps);
                        }
                        None => s.push_str(",,"),
                    }
                }
                let mine = workload_figures(r.kind, rep);
                for &k in &figures {
                    match mine[k] {
                        Some(v) => {
                            let _ = write!(s, ",{v:.6}");
                        }
                        None => s.push(','),
                    }
                }
                let _ = writeln!(
                    s,
                    ",{:.4},{},{:.4},{:.4},{},{},{},{},{},{},{},{},",
                    mean_busbw(rep),
                    rep.flows.count,
                    rep.flows.fct_us.p50,
                    rep.flows.fct_us.p99,
                    cell(rep.fabric.drops),
                    cell(rep.fabric.ecn_marks),
                    cell(rep.fabric.pfc_pause_frames),
                    cell(rep.pfc_watchdog_triggers()),
                    cell(rep.pfc_watchdog_drops()),
                    cell(rep.pfc_headroom_drops()),
                    cell(rep.pfc_deadlock_cycles()),
                    rep.sim.events
                );
            }
            Err(e) => {
                s.push_str(&",".repeat(keys.len() * 2 + figures.len() + TAIL_COLUMNS.len()));
                let _ = writeln!(s, "{}", csv_field(e));
            }
        }
    }
    s
}

/// One record of a CSV file and the line it starts on (from 1).
type Record = (usize, Vec<String>);

/// Splits CSV `text` into records: fields separated by commas, `"…"` quoting
/// with `""` for a quote, quoted fields may span lines (an error message can).
fn parse_csv(name: &str, text: &str) -> Result<Vec<Record>, String> {
    let mut records = Vec::new();
    let (mut line, mut start_line) = (1usize, 1usize);
    let mut fields: Vec<String> = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut was_quoted) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => {
                    if c == '\n' {
                        line += 1;
                    }
                    field.push(c);
                }
            }
            continue;
        }
        match c {
            '"' if field.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            '"' => {
                return Err(format!(
                    "{name}:{line}: a quote inside an unquoted field; expected a CSV written by `fabricsim sweep --shard`"
                ))
            }
            ',' => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            '\r' => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
                records.push((start_line, std::mem::take(&mut fields)));
                line += 1;
                start_line = line;
            }
            c => field.push(c),
        }
    }
    if quoted {
        return Err(format!(
            "{name}:{start_line}: a quoted field is never closed; expected a CSV written by `fabricsim sweep --shard`"
        ));
    }
    if !field.is_empty() || !fields.is_empty() || was_quoted {
        fields.push(field);
        records.push((start_line, fields));
    }
    Ok(records)
}

/// One shard file, read.
struct ShardFile<'a> {
    name: &'a str,
    /// The swept keys, in order.
    axes: Vec<String>,
    /// `(op, bytes)` column pairs, as the header names them (`op_bytes`).
    sizes: Vec<String>,
    /// The [`WORKLOAD_COLUMNS`] it has, in order.
    figures: Vec<String>,
    /// Header index of its first workload column (of the tail when none).
    figures_at: usize,
    runs: usize,
    rows: Vec<Record>,
}

fn read_shard<'a>(name: &'a str, text: &'a str) -> Result<ShardFile<'a>, String> {
    let mut records = parse_csv(name, text)?.into_iter();
    let Some((hl, header)) = records.next() else {
        return Err(format!(
            "{name}:1: the file is empty; expected the CSV of `fabricsim sweep --shard K/N`"
        ));
    };
    let not_shard = |what: &str| {
        format!(
            "{name}:{hl}: {what}; expected the header of `fabricsim sweep --shard K/N` (run,runs,KEY…,fidelity,…,error)"
        )
    };
    if header.len() < 3 || header[0] != "run" || header[1] != "runs" {
        return Err(not_shard("the header does not start with run,runs"));
    }
    let Some(fid) = header.iter().position(|h| h == "fidelity") else {
        return Err(not_shard("no fidelity column"));
    };
    let tail_at = header
        .len()
        .checked_sub(TAIL_COLUMNS.len())
        .filter(|&t| t > fid);
    let Some(tail_at) = tail_at.filter(|&t| header[t..] == TAIL_COLUMNS) else {
        return Err(not_shard(&format!(
            "the header does not end with {}",
            TAIL_COLUMNS.join(",")
        )));
    };
    // the workload columns: a run of WORKLOAD_COLUMNS, in their order, just
    // before the tail (no size column is named like one)
    let mut figures_at = tail_at;
    let rank = |h: &str| WORKLOAD_COLUMNS.iter().position(|c| *c == h);
    while figures_at > fid + 1 {
        let Some(b) = rank(&header[figures_at - 1]) else {
            break;
        };
        if figures_at < tail_at && rank(&header[figures_at]).is_some_and(|n| b >= n) {
            break;
        }
        figures_at -= 1;
    }
    let size_cols = &header[fid + 1..figures_at];
    let mut sizes = Vec::new();
    for pair in size_cols.chunks(2) {
        let key = pair[0].strip_suffix("_time_us");
        let ok =
            pair.len() == 2 && key.is_some_and(|k| pair[1].strip_suffix("_busbw_GBps") == Some(k));
        match key {
            Some(k) if ok => sizes.push(k.to_string()),
            _ => {
                return Err(not_shard(&format!(
                    "size columns {pair:?} are not an OP_BYTES_time_us,OP_BYTES_busbw_GBps pair"
                )))
            }
        }
    }
    let mut runs = None;
    let mut rows = Vec::new();
    for (l, r) in records {
        if r.len() != header.len() {
            return Err(format!(
                "{name}:{l}: {} fields; expected {} as in the header",
                r.len(),
                header.len()
            ));
        }
        let (Ok(_), Ok(total)) = (r[0].parse::<usize>(), r[1].parse::<usize>()) else {
            return Err(format!(
                "{name}:{l}: run {:?} and runs {:?}; expected two whole numbers",
                r[0], r[1]
            ));
        };
        if *runs.get_or_insert(total) != total {
            return Err(format!(
                "{name}:{l}: runs = {total}, but an earlier row says {}; expected one sweep per file",
                runs.unwrap_or(0)
            ));
        }
        rows.push((l, r));
    }
    Ok(ShardFile {
        name,
        axes: header[2..fid].to_vec(),
        sizes,
        figures: header[figures_at..tail_at].to_vec(),
        figures_at,
        runs: runs.unwrap_or(0),
        rows,
    })
}

/// Joins the CSVs of a sharded sweep (`sweep --shard K/N`, any order) into the
/// CSV the whole sweep writes in one process, byte for byte: rows back in
/// cross-product order, the per-size columns the union of the shards' in the
/// order the whole sweep would have met them. `files` are (name, text) pairs.
///
/// # Errors
/// A located message (`file:line: found; expected`) for a file that is not a
/// shard CSV, shards of different sweeps, a run given twice, or runs missing.
pub fn merge(files: &[(String, String)]) -> Result<String, String> {
    let shards: Vec<ShardFile> = files
        .iter()
        .map(|(n, t)| read_shard(n, t))
        .collect::<Result<_, _>>()?;
    let Some(first) = shards.first() else {
        return Err("sweep-merge: no files; expected the CSVs of `fabricsim sweep --shard`".into());
    };
    let total = shards.iter().map(|s| s.runs).max().unwrap_or(0);
    for s in &shards {
        if s.axes != first.axes {
            return Err(format!(
                "{}:1: swept keys {:?}, but {} sweeps {:?}; expected slices of one sweep",
                s.name, s.axes, first.name, first.axes
            ));
        }
        if !s.rows.is_empty() && s.runs != total {
            return Err(format!(
                "{}:2: runs = {}, but another file says {total}; expected slices of one sweep",
                s.name, s.runs
            ));
        }
    }
    // run index -> (shard, row)
    let mut slot: Vec<Option<(usize, usize)>> = vec![None; total];
    for (si, s) in shards.iter().enumerate() {
        for (ri, (l, r)) in s.rows.iter().enumerate() {
            let i: usize = r[0].parse().unwrap_or(usize::MAX);
            let Some(cell) = slot.get_mut(i) else {
                return Err(format!(
                    "{}:{l}: run {i}; expected a run below runs = {total}",
                    s.name
                ));
            };
            if let Some((sj, rj)) = *cell {
                return Err(format!(
                    "{}:{l}: run {i} is also at {}:{}; expected each run once",
                    s.name, shards[sj].name, shards[sj].rows[rj].0
                ));
            }
            *cell = Some((si, ri));
        }
    }
    let missing: Vec<String> = slot
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(10).map(String::as_str).collect();
        return Err(format!(
            "sweep-merge: {} of {total} runs missing (run {}{}); expected every slice's CSV: is a shard still running, or did one fail?",
            missing.len(),
            shown.join(", "),
            if missing.len() > 10 { ", …" } else { "" }
        ));
    }
    // the union of size columns in the order the whole sweep meets them: runs in
    // order, each run's new sizes in its shard's header order (which is the run's
    // own order for sizes its shard had not met before either)
    let naxes = first.axes.len();
    let mut sizes: Vec<String> = Vec::new();
    for &(si, ri) in slot.iter().flatten() {
        let s = &shards[si];
        let r = &s.rows[ri].1;
        for (k, name) in s.sizes.iter().enumerate() {
            if !r[3 + naxes + 2 * k].is_empty() && !sizes.contains(name) {
                sizes.push(name.clone());
            }
        }
    }
    // a workload column is in the whole sweep's CSV when some run reports it,
    // that is when some shard's header has it
    let figures: Vec<&str> = WORKLOAD_COLUMNS
        .iter()
        .copied()
        .filter(|c| shards.iter().any(|s| s.figures.iter().any(|f| f == c)))
        .collect();
    let mut out = String::new();
    for a in &first.axes {
        let _ = write!(out, "{},", csv_field(a));
    }
    out.push_str("fidelity");
    for k in &sizes {
        let _ = write!(out, ",{k}_time_us,{k}_busbw_GBps");
    }
    for c in &figures {
        let _ = write!(out, ",{c}");
    }
    let _ = writeln!(out, ",{}", TAIL_COLUMNS.join(","));
    for &(si, ri) in slot.iter().flatten() {
        let s = &shards[si];
        let r = &s.rows[ri].1;
        let mut fields: Vec<&str> = r[2..3 + naxes].iter().map(String::as_str).collect();
        for k in &sizes {
            match s.sizes.iter().position(|n| n == k) {
                Some(j) => {
                    fields.push(&r[3 + naxes + 2 * j]);
                    fields.push(&r[4 + naxes + 2 * j]);
                }
                None => fields.extend(["", ""]),
            }
        }
        for c in &figures {
            match s.figures.iter().position(|f| f == c) {
                Some(j) => fields.push(&r[s.figures_at + j]),
                None => fields.push(""),
            }
        }
        fields.extend(r[r.len() - TAIL_COLUMNS.len()..].iter().map(String::as_str));
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        let _ = writeln!(out, "{}", line.join(","));
    }
    Ok(out)
}

/// The sweep report: mean busbw against each swept parameter (one line per
/// combination of the other parameters), every run's busbw curve, and the table.
pub fn html(title: &str, axes: &[Axis], runs: &[SweepRun]) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<section id=\"sec-summary\"><h2>Sweep</h2><p>{} runs of <code>{}</code> over {}.</p></section>",
        runs.len(),
        esc(title),
        axes.iter()
            .map(|a| format!("<code>{}</code> ∈ {{{}}}", esc(&a.key), esc(&a.values.join(", "))))
            .collect::<Vec<_>>()
            .join(" × ")
    );
    b.push_str("<section id=\"sec-sweep\"><h2>Figure of merit per parameter</h2>\n");
    for (ai, a) in axes.iter().enumerate() {
        // group runs by the values of the other axes
        let mut groups: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for r in runs {
            let Ok(rep) = &r.result else { continue };
            let others: Vec<String> = axes
                .iter()
                .zip(&r.values)
                .enumerate()
                .filter(|(j, _)| *j != ai)
                .map(|(_, (ax, v))| format!("{}={v}", ax.key))
                .collect();
            let name = if others.is_empty() {
                "mean busbw".to_string()
            } else {
                others.join(", ")
            };
            let x = a
                .values
                .iter()
                .position(|v| *v == r.values[ai])
                .unwrap_or(0) as f64;
            match groups.iter_mut().find(|g| g.0 == name) {
                Some(g) => g.1.push((x, mean_busbw(rep))),
                None => groups.push((name, vec![(x, mean_busbw(rep))])),
            }
        }
        b.push_str(&svg::line_chart(&LineChart {
            id: format!("chart-sweep-{}", html::slug(&a.key)),
            title: format!("Mean busbw versus {}", a.key),
            x_label: a.key.clone(),
            y_label: "mean busbw (GB/s)".into(),
            x_axis: XAxis::Categories(a.values.clone()),
            lines: groups
                .into_iter()
                .map(|(name, points)| Line { name, points })
                .collect(),
            markers: Vec::new(),
            steps: false,
        }));
    }
    b.push_str("</section>\n");
    let ok: Vec<(String, Report)> = runs
        .iter()
        .filter_map(|r| {
            r.result.as_ref().ok().map(|rep| {
                let label: Vec<String> = axes
                    .iter()
                    .zip(&r.values)
                    .map(|(a, v)| format!("{}={v}", a.key))
                    .collect();
                (label.join(", "), rep.clone())
            })
        })
        .collect();
    if ok.iter().any(|(_, r)| !r.collectives.is_empty()) {
        let (labels, reports): (Vec<String>, Vec<Report>) = ok.into_iter().unzip();
        b.push_str("<section id=\"sec-busbw\"><h2>Bus bandwidth versus size, every run</h2>\n");
        b.push_str(&svg::line_chart(&html::busbw_chart(
            &reports,
            Some(&labels),
        )));
        b.push_str("</section>\n");
    }
    b.push_str("<section id=\"sec-table\"><h2>Runs</h2><pre>");
    b.push_str(&esc(&csv(axes, runs)));
    b.push_str("</pre></section>\n");
    html::page(&format!("fabricsim sweep: {title}"), &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_capped_by_the_runs_and_a_maximum() {
        assert_eq!(threads(100_000, 3), 3);
        assert_eq!(threads(100_000, 100_000), MAX_JOBS);
        assert_eq!(threads(2, 10), 2);
        assert!(threads(0, 1) == 1);
    }

    const TEXT: &str = "name = \"t\" # x\n\n[cluster]\nnodes = 4 # four\n\n[fabric]  # net\nlink_rate = \"100Gbps\"\n";

    #[test]
    fn set_replaces_the_value_at_its_span_and_keeps_comments() {
        let t = rewrite(TEXT, "cluster.nodes", "8");
        assert!(t.contains("nodes = 8 # four\n"), "{t}");
        let t = rewrite(TEXT, "fabric.link_rate", &toml_value("200Gbps"));
        assert!(t.contains("link_rate = \"200Gbps\"\n"), "{t}");
    }

    #[test]
    fn set_inserts_an_absent_key_in_its_table_or_appends_the_table() {
        let t = rewrite(TEXT, "fabric.link_latency", "\"1us\"");
        assert!(
            t.contains("[fabric]  # net\nlink_latency = \"1us\"\nlink_rate"),
            "{t}"
        );
        let t = rewrite(TEXT, "simulation.seed", "7");
        assert!(t.ends_with("\n[simulation]\nseed = 7\n"), "{t}");
        let t: toml::Table = toml::from_str(&t).unwrap();
        assert_eq!(t["simulation"]["seed"].as_integer(), Some(7));
    }

    #[test]
    fn values_are_kept_when_toml_and_quoted_otherwise() {
        assert_eq!(toml_value("8"), "8");
        assert_eq!(toml_value("3.0"), "3.0");
        assert_eq!(toml_value("true"), "true");
        assert_eq!(toml_value("100ns"), "\"100ns\"");
        assert_eq!(toml_value("[\"1MiB\", \"2MiB\"]"), "[\"1MiB\", \"2MiB\"]");
        assert_eq!(toml_value("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn set_arguments_split_on_top_level_commas_only() {
        let a = parse_set("workload.sizes=[\"1MiB\",\"2MiB\"],[\"4MiB\"]").unwrap();
        assert_eq!(a.values, vec!["[\"1MiB\",\"2MiB\"]", "[\"4MiB\"]"]);
        assert!(parse_set("nodes").is_err());
        assert!(parse_set("=4").is_err());
        assert!(parse_set("cluster.nodes=4,").is_err());
        assert!(parse_set("cluster..nodes=4").is_err());
    }

    #[test]
    fn combinations_run_first_axis_slowest() {
        let ax = |k: &str, n: usize| Axis {
            key: k.into(),
            values: (0..n).map(|i| i.to_string()).collect(),
        };
        let c = combinations(&[ax("a", 2), ax("b", 3)]);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec![0, 0]);
        assert_eq!(c[1], vec![0, 1]);
        assert_eq!(c[3], vec![1, 0]);
    }
}

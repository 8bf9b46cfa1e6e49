//! `fabricsim check`: simulate the operation and sizes of a measured nccl-tests table
//! on a scenario and lay measured and simulated side by side.
//!
//! Per size the error is `simulated time / measured time − 1`: negative when the
//! real cluster is slower than the simulated fabric. A row is *slow* when its
//! measured busbw is below the simulated busbw by more than the tolerance, that is
//! when the error is below `−tolerance`. Over several sizes the error is summarised
//! as the geometric mean of the time ratio's distance from 1,
//! `exp(mean |ln(sim / measured)|) − 1`: 10% means the two are a factor 1.10 apart
//! on (geometric) average, in whichever direction.

use std::fmt::Write as _;

use serde::Serialize;

use super::cluster::{self, BaseError, ScenarioSource};
use super::nccltests::{Measured, NcclOp};
use crate::config::{Fidelity, Scenario};
use crate::run::{self, RunOptions};
use crate::units::format_bytes;

/// What `check` and `calibrate` are told on the command line.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Fidelity (default: flow).
    pub fidelity: Fidelity,
    /// `auto` or an algorithm name.
    pub algo: String,
    /// Tolerance below the simulated busbw before a row is flagged slow (0.15 = 15%).
    pub tolerance: f64,
    /// Compare the in-place columns instead of the out-of-place ones.
    pub in_place: bool,
    /// `--nodes`.
    pub nodes: Option<u32>,
    /// Extra overrides (`--set key=value`).
    pub sets: Vec<(String, String)>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            fidelity: Fidelity::Flow,
            algo: "auto".into(),
            tolerance: 0.15,
            in_place: false,
            nodes: None,
            sets: Vec::new(),
        }
    }
}

/// One measured size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeasuredPoint {
    /// Line in the measured file.
    pub line: usize,
    /// Size in bytes.
    pub bytes: u64,
    /// Measured time, microseconds.
    pub time_us: f64,
    /// Measured busbw, GB/s.
    pub busbw_gbps: f64,
}

/// A measured file made ready to simulate: its scenario (before any fitted
/// parameter), the overrides that made it match the file, and its points.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The measured file.
    pub measured: Measured,
    /// The nccl-tests operation.
    pub op: NcclOp,
    /// Overrides applied to the base scenario to match the file (nodes, GPUs per node).
    pub sets: Vec<(String, String)>,
    /// `--nodes` to apply.
    pub nodes: Option<u32>,
    /// The scenario as built (for ranks, nodes).
    pub scenario: Scenario,
    /// The base scenario text.
    pub src: ScenarioSource,
    /// `auto` or an algorithm (the command line's, or the file's `# algo:` line).
    pub algo: String,
    /// Measured points, ascending size, size 0 left out.
    pub points: Vec<MeasuredPoint>,
    /// Guesses of the parser and warnings about the match, in words.
    pub notes: Vec<String>,
}

/// Matches a measured file to the base scenario.
///
/// With `--preset` and no `--nodes`, the cluster takes the file's nodes and GPUs per
/// node (noted). Otherwise a difference in nodes or GPUs per node is a warning, and
/// a different number of ranks is refused: a collective over other ranks is another
/// measurement.
///
/// # Errors
/// No operation, an operation fabricsim does not simulate, a rank count that cannot
/// match, no usable row, or a scenario that does not validate.
pub fn prepare(
    m: &Measured,
    src: &ScenarioSource,
    opts: &CheckOptions,
) -> Result<Prepared, BaseError> {
    let file = &m.file;
    let Some(op) = m.op else {
        return Err(BaseError::Usage(format!(
            "{file}: cannot tell which nccl-tests binary wrote it (no `# Collective test starting` line, no *_perf name, no operation in the file name); rename it, e.g. all_reduce_perf-{}", 
            std::path::Path::new(file).file_name().map_or(String::new(), |f| f.to_string_lossy().to_string())
        )));
    };
    let Some(cop) = op.collective() else {
        return Err(BaseError::Usage(format!(
            "{file}: {}_perf measures an operation fabricsim does not simulate; it simulates all_reduce, all_gather, reduce_scatter, alltoall and broadcast",
            op.name()
        )));
    };
    let mut notes: Vec<String> = m.guesses.iter().map(|g| format!("guess: {g}")).collect();
    let meta = |k: &str| {
        m.meta
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let mut algo = opts.algo.clone();
    if algo == "auto" {
        if let Some(a) = meta("algo") {
            let a = a.split_whitespace().next().unwrap_or("auto").to_string();
            notes.push(format!("algorithm {a} from the file's `# algo:` line"));
            algo = a;
        }
    }
    cluster::algo_choice(&algo, cop).map_err(|e| BaseError::Usage(format!("{file}: {e}")))?;
    // the file's own description of its hardware (`# set: key=value, key=value`)
    let mut sets = Vec::new();
    if let Some(line) = meta("set") {
        for kv in line.split(',') {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(BaseError::Usage(format!(
                    "{file}: `# set: {line}`: expected key=value, key=value"
                )));
            };
            sets.push((k.trim().to_string(), v.trim().to_string()));
        }
        notes.push(format!("overrides from the file's `# set:` line: {line}"));
    }
    sets.extend(opts.sets.iter().cloned());
    let mut nodes = opts.nodes;
    let base = cluster::build(src, &sets, nodes)?;
    if src.preset.is_some() && opts.nodes.is_none() {
        // a built-in cluster takes the measured shape
        let gpn_base = base.cluster().gpus_per_host;
        let (n, g) = match (m.nodes, m.gpus_per_node, m.ranks) {
            (Some(n), Some(g), _) => (Some(n), Some(g)),
            (_, _, Some(r)) if r <= gpn_base => (Some(1), Some(r)),
            (_, _, Some(r)) if r % gpn_base == 0 => (Some(r / gpn_base), None),
            _ => (None, None),
        };
        if m.nodes.is_none() {
            if let Some(n) = n {
                notes.push(format!(
                    "guess: the file names no hosts: {} ranks taken as {n} node(s) of {} GPUs",
                    m.ranks.unwrap_or(0),
                    g.unwrap_or(gpn_base)
                ));
            }
        }
        if let Some(n) = n {
            nodes = Some(n);
        }
        if let Some(g) = g.filter(|&g| g != gpn_base) {
            sets.push(("cluster.gpus_per_node".into(), g.to_string()));
            if base.cluster().nics_per_host > g || g % base.cluster().nics_per_host != 0 {
                sets.push(("cluster.nics_per_node".into(), g.to_string()));
            }
            notes.push(format!(
                "the preset's nodes have {gpn_base} GPUs; the file's have {g}: simulated with {g} GPUs per node"
            ));
        }
    }
    let scenario = cluster::build(src, &sets, nodes)?;
    let sim_ranks = scenario.num_gpus();
    let (sn, sg) = (scenario.cluster().hosts, scenario.cluster().gpus_per_host);
    match m.ranks {
        Some(r) if r != sim_ranks => {
            return Err(BaseError::Usage(format!(
                "{file}: the measurement has {r} ranks{}; the scenario {} has {sim_ranks} GPUs ({sn} nodes x {sg}); give --nodes or a scenario with {r} GPUs",
                match (m.nodes, m.gpus_per_node) {
                    (Some(n), Some(g)) => format!(" ({n} nodes x {g} GPUs)"),
                    _ => String::new(),
                },
                src.label
            )));
        }
        None => notes.push(format!(
            "guess: the file does not say how many ranks ran; simulated on all {sim_ranks} GPUs of the scenario"
        )),
        _ => {}
    }
    if let (Some(n), Some(g)) = (m.nodes, m.gpus_per_node) {
        if (n, g) != (sn, sg) {
            notes.push(format!(
                "warning: the file ran on {n} nodes x {g} GPUs, the scenario has {sn} nodes x {sg} GPUs: same ranks, different split between NVLink and network"
            ));
        }
    }
    let mut points = Vec::new();
    let mut skipped_zero = 0;
    for r in &m.rows {
        let s = if opts.in_place {
            r.in_place.as_ref()
        } else {
            r.out_of_place.as_ref()
        };
        let Some(s) = s.or(r.out_of_place.as_ref()).or(r.in_place.as_ref()) else {
            continue;
        };
        if r.bytes == 0 || s.time_us <= 0.0 {
            skipped_zero += 1;
            continue;
        }
        if points.iter().any(|p: &MeasuredPoint| p.bytes == r.bytes) {
            notes.push(format!(
                "line {}: size {} appears again; the first row is used",
                r.line, r.bytes
            ));
            continue;
        }
        points.push(MeasuredPoint {
            line: r.line,
            bytes: r.bytes,
            time_us: s.time_us,
            busbw_gbps: s.busbw_gbps,
        });
    }
    if skipped_zero > 0 {
        notes.push(format!(
            "{skipped_zero} row(s) of size 0 or time 0 left out"
        ));
    }
    if points.is_empty() {
        return Err(BaseError::Usage(format!(
            "{file}: no row with a size above 0 to compare"
        )));
    }
    points.sort_by_key(|p| p.bytes);
    Ok(Prepared {
        measured: m.clone(),
        op,
        sets,
        nodes,
        scenario,
        src: src.clone(),
        algo,
        points,
        notes,
    })
}

/// Simulates `p`'s sizes with `extra` overrides on top of its own; returns the
/// simulated (time µs, busbw GB/s, algorithm) per point.
///
/// # Errors
/// An override that does not validate, or a failed run.
pub fn simulate(
    p: &Prepared,
    opts: &CheckOptions,
    extra: &[(String, String)],
) -> Result<Vec<(f64, f64, String)>, BaseError> {
    let mut sets = p.sets.clone();
    sets.extend(extra.iter().cloned());
    let mut s = cluster::build(&p.src, &sets, p.nodes)?;
    let cop = p.op.collective().expect("prepare checked the operation");
    let algo = cluster::algo_choice(&p.algo, cop).map_err(BaseError::Usage)?;
    let dtype = cluster::dtype(
        p.measured
            .rows
            .first()
            .map_or("float", |r| r.dtype.as_str()),
    );
    let sizes: Vec<u64> = p.points.iter().map(|x| x.bytes).collect();
    cluster::set_collective(&mut s, cop, algo, sizes, dtype).map_err(BaseError::Usage)?;
    let ro = RunOptions {
        fidelity: Some(opts.fidelity),
        ..RunOptions::default()
    };
    let rep = run::run(&s, &ro).map_err(|e| BaseError::Usage(format!("{}: {e}", s.file())))?;
    p.points
        .iter()
        .map(|pt| {
            rep.collectives
                .iter()
                .find(|c| c.bytes == pt.bytes)
                .map(|c| (c.time_us, c.busbw_gbps, c.algorithm.clone()))
                .ok_or_else(|| BaseError::Usage(format!("size {} was not simulated", pt.bytes)))
        })
        .collect()
}

/// One size, measured beside simulated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckRow {
    /// Line in the measured file.
    pub line: usize,
    /// Size in bytes.
    pub bytes: u64,
    /// Measured time, µs.
    pub measured_us: f64,
    /// Simulated time, µs.
    pub simulated_us: f64,
    /// Measured busbw, GB/s.
    pub measured_busbw_gbps: f64,
    /// Simulated busbw, GB/s.
    pub simulated_busbw_gbps: f64,
    /// simulated / measured − 1.
    pub error: f64,
    /// Measured busbw below the simulated by more than the tolerance.
    pub slow: bool,
    /// The algorithm the simulation ran.
    pub algorithm: String,
}

/// The geometric-mean error of size bands: ≤ 64 KiB, 64 KiB–64 MiB, ≥ 64 MiB.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bands {
    /// Sizes up to 64 KiB.
    pub small: Option<f64>,
    /// Sizes above 64 KiB and below 64 MiB.
    pub medium: Option<f64>,
    /// Sizes of 64 MiB and more.
    pub large: Option<f64>,
}

/// `check` on one file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    /// The measured file.
    pub file: String,
    /// Operation (nccl-tests name).
    pub op: &'static str,
    /// Ranks simulated.
    pub ranks: u32,
    /// Nodes simulated.
    pub nodes: u32,
    /// GPUs per node simulated.
    pub gpus_per_node: u32,
    /// GPU model in the file.
    pub gpu: Option<String>,
    /// The base scenario.
    pub scenario: String,
    /// Fidelity.
    pub fidelity: &'static str,
    /// In-place or out-of-place columns.
    pub columns: &'static str,
    /// Tolerance for `slow`.
    pub tolerance: f64,
    /// Guesses and warnings.
    pub notes: Vec<String>,
    /// Per size.
    pub rows: Vec<CheckRow>,
    /// Geometric-mean error over all sizes.
    pub geomean_error: f64,
    /// Per size band.
    pub bands: Bands,
    /// The row farthest off (by |ln ratio|): its error.
    pub worst_error: f64,
    /// Sizes flagged slow.
    pub slow_sizes: Vec<u64>,
    /// The `# source:`/`# hardware:` lines of the file's leading comments.
    pub meta: Vec<(String, String)>,
}

/// `exp(mean |ln(1 + e)|) − 1` over errors `e`; `None` for none.
pub fn geomean_error(errors: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for e in errors {
        s += (1.0 + e).ln().abs();
        n += 1;
    }
    (n > 0).then(|| (s / n as f64).exp() - 1.0)
}

/// Runs `check` on one prepared file.
///
/// # Errors
/// As [`simulate`].
pub fn check(p: &Prepared, opts: &CheckOptions) -> Result<CheckResult, BaseError> {
    let sim = simulate(p, opts, &[])?;
    let rows: Vec<CheckRow> = p
        .points
        .iter()
        .zip(sim)
        .map(|(m, (t, b, a))| {
            let error = t / m.time_us - 1.0;
            CheckRow {
                line: m.line,
                bytes: m.bytes,
                measured_us: m.time_us,
                simulated_us: t,
                measured_busbw_gbps: m.busbw_gbps,
                simulated_busbw_gbps: b,
                error,
                slow: error < -opts.tolerance,
                algorithm: a,
            }
        })
        .collect();
    let band = |f: &dyn Fn(u64) -> bool| {
        geomean_error(rows.iter().filter(|r| f(r.bytes)).map(|r| r.error))
    };
    let worst = rows
        .iter()
        .max_by(|a, b| {
            (1.0 + a.error)
                .ln()
                .abs()
                .total_cmp(&(1.0 + b.error).ln().abs())
        })
        .map_or(0.0, |r| r.error);
    Ok(CheckResult {
        file: p.measured.file.clone(),
        op: p.op.name(),
        ranks: p.scenario.num_gpus(),
        nodes: p.scenario.cluster().hosts,
        gpus_per_node: p.scenario.cluster().gpus_per_host,
        gpu: p.measured.gpu.clone(),
        scenario: p.src.label.clone(),
        fidelity: opts.fidelity.name(),
        columns: if opts.in_place {
            "in-place"
        } else {
            "out-of-place"
        },
        tolerance: opts.tolerance,
        notes: p.notes.clone(),
        geomean_error: geomean_error(rows.iter().map(|r| r.error)).unwrap_or(0.0),
        bands: Bands {
            small: band(&|b| b <= 64 << 10),
            medium: band(&|b| b > 64 << 10 && b < 64 << 20),
            large: band(&|b| b >= 64 << 20),
        },
        worst_error: worst,
        slow_sizes: rows.iter().filter(|r| r.slow).map(|r| r.bytes).collect(),
        meta: p.measured.meta.clone(),
        rows,
    })
}

fn pct(e: f64) -> String {
    format!("{:+.1}%", e * 100.0)
}

fn pct_opt(e: Option<f64>) -> String {
    e.map_or("–".into(), |e| format!("{:.1}%", e * 100.0))
}

/// The side-by-side table of one result.
pub fn render(r: &CheckResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# fabricsim check {} | {} | {} ranks = {} nodes x {} GPUs{} | {} columns",
        r.file,
        r.op,
        r.ranks,
        r.nodes,
        r.gpus_per_node,
        r.gpu.as_ref().map_or(String::new(), |g| format!(" ({g})")),
        r.columns
    );
    let _ = writeln!(
        s,
        "# simulated on {} at {} fidelity",
        r.scenario, r.fidelity
    );
    for n in &r.notes {
        let _ = writeln!(s, "# {n}");
    }
    let _ = writeln!(s, "#");
    let _ = writeln!(
        s,
        "# {:>12}  {:>10}  {:>10}  {:>9}  {:>9}  {:>8}  algorithm",
        "size", "measured", "simulated", "measured", "simulated", "error"
    );
    let _ = writeln!(
        s,
        "# {:>12}  {:>10}  {:>10}  {:>9}  {:>9}  {:>8}",
        "(B)", "(us)", "(us)", "busbw", "busbw", "sim/meas"
    );
    for row in &r.rows {
        let line = format!(
            "  {:>12}  {:>10.2}  {:>10.2}  {:>9.2}  {:>9.2}  {:>8}  {:<16}{}",
            row.bytes,
            row.measured_us,
            row.simulated_us,
            row.measured_busbw_gbps,
            row.simulated_busbw_gbps,
            pct(row.error),
            row.algorithm,
            if row.slow { "  SLOW" } else { "" }
        );
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let _ = writeln!(
        s,
        "# geomean error over {} sizes: {:.1}% (≤64KiB {}, 64KiB–64MiB {}, ≥64MiB {}); worst row {}",
        r.rows.len(),
        r.geomean_error * 100.0,
        pct_opt(r.bands.small),
        pct_opt(r.bands.medium),
        pct_opt(r.bands.large),
        pct(r.worst_error)
    );
    if r.slow_sizes.is_empty() {
        let _ = writeln!(
            s,
            "# no size is more than {:.0}% below the simulated busbw",
            r.tolerance * 100.0
        );
    } else {
        let _ = writeln!(
            s,
            "# SLOW: {} of {} sizes measure more than {:.0}% below the simulated busbw: {}",
            r.slow_sizes.len(),
            r.rows.len(),
            r.tolerance * 100.0,
            r.slow_sizes
                .iter()
                .map(|&b| format_bytes(b))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s
}

/// One Markdown table row per result (for docs/validation.md).
pub fn markdown(results: &[CheckResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| case | hardware | op | ranks (nodes x GPUs) | sizes | fidelity | ≤ 64 KiB | 64 KiB–64 MiB | ≥ 64 MiB | overall | worst row | slow rows |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        let meta = |k: &str| {
            r.meta
                .iter()
                .find(|(key, _)| key == k)
                .map_or(String::new(), |(_, v)| v.replace('|', "/"))
        };
        let name = std::path::Path::new(&r.file)
            .file_name()
            .map_or(r.file.clone(), |f| f.to_string_lossy().to_string());
        let label = match meta("label") {
            l if l.is_empty() => meta("hardware"),
            l => l,
        };
        let (lo, hi) = (
            r.rows.first().map_or(0, |x| x.bytes),
            r.rows.last().map_or(0, |x| x.bytes),
        );
        let sizes = if lo == hi {
            format_bytes(lo)
        } else {
            format!("{}–{}", format_bytes(lo), format_bytes(hi))
        };
        let _ = writeln!(
            s,
            "| `{name}` | {label} | {} | {} ({} x {}) | {sizes} | {} | {} | {} | {} | {} | {} | {} |",
            r.op,
            r.ranks,
            r.nodes,
            r.gpus_per_node,
            r.fidelity,
            pct_opt(r.bands.small),
            pct_opt(r.bands.medium),
            pct_opt(r.bands.large),
            pct_opt(Some(r.geomean_error)),
            pct(r.worst_error),
            r.slow_sizes.len()
        );
    }
    s
}

/// A self-contained HTML report: per file, measured and simulated busbw against
/// size (log x, like nccl-tests plots) and the side-by-side table.
pub fn html(results: &[CheckResult]) -> String {
    use crate::report::html::{page, slug};
    use crate::report::svg::{esc, line_chart, Line, LineChart, XAxis};
    let mut b = String::new();
    for r in results {
        let _ = writeln!(
            b,
            "<section id=\"{}\"><h2>{}</h2>",
            slug(&format!("check-{}", r.file)),
            esc(&format!("{}: {} on {} ranks", r.file, r.op, r.ranks))
        );
        let chart = LineChart {
            id: slug(&format!("busbw-{}", r.file)),
            title: "bus bandwidth versus size".into(),
            x_label: "size (bytes)".into(),
            y_label: "busbw (GB/s)".into(),
            x_axis: XAxis::Bytes,
            lines: vec![
                Line {
                    name: "measured".into(),
                    points: r
                        .rows
                        .iter()
                        .map(|x| (x.bytes as f64, x.measured_busbw_gbps))
                        .collect(),
                },
                Line {
                    name: format!("simulated ({})", r.fidelity),
                    points: r
                        .rows
                        .iter()
                        .map(|x| (x.bytes as f64, x.simulated_busbw_gbps))
                        .collect(),
                },
            ],
            markers: Vec::new(),
            steps: false,
        };
        b.push_str(&line_chart(&chart));
        b.push_str("<pre>");
        b.push_str(&esc(&render(r)));
        b.push_str("</pre></section>\n");
    }
    page("fabricsim check: measured versus simulated", &b)
}

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
    /// The value of each axis, in axis order.
    pub values: Vec<String>,
    /// Its report, or why it could not run.
    pub result: Result<Report, String>,
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
    for c in &combos {
        let sets: Vec<(String, String)> = axes
            .iter()
            .zip(c)
            .map(|(a, &i)| (a.key.clone(), a.values[i].clone()))
            .collect();
        let s = apply(file, text, &sets)?;
        scenarios.push((sets.into_iter().map(|(_, v)| v).collect::<Vec<_>>(), s));
    }
    let work = || {
        scenarios
            .par_iter()
            .enumerate()
            .map(|(i, (values, s))| {
                on_event(SweepEvent::Started(i));
                let result = run::run(s, opts).map_err(|e| e.to_string());
                on_event(SweepEvent::Finished(i));
                SweepRun {
                    values: values.clone(),
                    result,
                }
            })
            .collect::<Vec<_>>()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads(jobs, scenarios.len()))
        .build();
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
    let keys = size_keys(runs);
    let mut s = String::new();
    for a in axes {
        let _ = write!(s, "{},", csv_field(&a.key));
    }
    s.push_str("fidelity");
    for (op, b) in &keys {
        let _ = write!(s, ",{op}_{b}_time_us,{op}_{b}_busbw_GBps");
    }
    s.push_str(
        ",mean_busbw_GBps,flows,fct_p50_us,fct_p99_us,drops,ecn_marks,pfc_pause_frames,events,error\n",
    );
    for r in runs {
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
                let _ = writeln!(
                    s,
                    ",{:.4},{},{:.4},{:.4},{},{},{},{},",
                    mean_busbw(rep),
                    rep.flows.count,
                    rep.flows.fct_us.p50,
                    rep.flows.fct_us.p99,
                    cell(rep.fabric.drops),
                    cell(rep.fabric.ecn_marks),
                    cell(rep.fabric.pfc_pause_frames),
                    rep.sim.events
                );
            }
            Err(e) => {
                s.push_str(&",".repeat(keys.len() * 2 + 9));
                let _ = writeln!(s, "{}", csv_field(e));
            }
        }
    }
    s
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

//! `fabricsim calibrate`: fit scenario keys to measured nccl-tests tables.
//!
//! The objective is least squares on log time over the fit rows,
//! `Σ ln(simulated / measured)²`, each evaluation a full simulation of every measured
//! file with the candidate values applied as `--set`-style overrides (so any numeric,
//! time, rate or size key the scenario schema has can be fitted, and a bad one is the
//! usual located diagnostic). The search is coordinate descent: a golden-section
//! search per parameter over its bounds (on a log scale when the bounds are positive),
//! repeated for a few rounds when there is more than one parameter.

use std::fmt::Write as _;

use super::cluster::BaseError;
use super::compare::{geomean_error, simulate, CheckOptions, Prepared};
use crate::units::{format_bytes, parse_rate, parse_size, parse_time};

/// The unit a parameter is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain number (`0.85`).
    Plain,
    /// A time (`2us`), held in picoseconds.
    Time,
    /// A rate (`400Gbps`), held in bits/s.
    Rate,
    /// A size (`4KiB`), held in bytes.
    Size,
}

/// One fitted key and its bounds (in the unit's base: ps, bit/s, bytes or plain).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Dotted scenario key.
    pub key: String,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Unit.
    pub unit: Unit,
}

impl Param {
    /// `value` written for the scenario file.
    pub fn format(&self, v: f64) -> String {
        match self.unit {
            Unit::Plain => format!("{}", (v * 1e6).round() / 1e6),
            Unit::Time => format!("{}ns", (v / 1e3 * 1e3).round() / 1e3),
            Unit::Rate => format!("{}Gbps", (v / 1e9 * 1e4).round() / 1e4),
            Unit::Size => format!("{}", v.round() as u64),
        }
    }

    /// `value` for people.
    pub fn show(&self, v: f64) -> String {
        match self.unit {
            Unit::Size => format_bytes(v.round() as u64),
            Unit::Time if v >= 1e6 => format!("{}us", (v / 1e3).round() / 1e3),
            _ => self.format(v),
        }
    }
}

fn value(s: &str) -> Option<(f64, Unit)> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some((v, Unit::Plain));
    }
    if let Ok(t) = parse_time(s) {
        return Some((t.0 as f64, Unit::Time));
    }
    if let Ok(r) = parse_rate(s) {
        return Some((r.0 as f64, Unit::Rate));
    }
    if let Ok(b) = parse_size(s) {
        return Some((b as f64, Unit::Size));
    }
    None
}

/// Parses `KEY=LO..HI` (`fabric.link_latency=0.5us..10us`, `cluster.nvlink_efficiency=0.5..1`).
///
/// # Errors
/// A message naming what is wrong.
pub fn parse_param(arg: &str) -> Result<Param, String> {
    let expected =
        "KEY=LO..HI, e.g. fabric.link_latency=0.5us..10us or fabric.link_rate=100Gbps..400Gbps";
    let Some((key, range)) = arg.split_once('=') else {
        return Err(format!("--param {arg:?}: expected {expected}"));
    };
    let key = key.trim();
    if key.is_empty()
        || !key
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return Err(format!(
            "--param {arg:?}: {key:?} is not a dotted key; expected {expected}"
        ));
    }
    let Some((lo, hi)) = range.split_once("..") else {
        return Err(format!(
            "--param {arg:?}: no `..` between the bounds; expected {expected}"
        ));
    };
    let (Some((lo, ul)), Some((hi, uh))) = (value(lo), value(hi)) else {
        return Err(format!(
            "--param {arg:?}: bounds {lo:?} and {hi:?}: expected numbers, times (2us), rates (400Gbps) or sizes (4KiB)"
        ));
    };
    // a bare 0 parses as a number and as a time: follow the other bound
    let unit = if ul == uh {
        ul
    } else if lo == 0.0 && ul == Unit::Plain {
        uh
    } else if hi == 0.0 && uh == Unit::Plain {
        ul
    } else {
        return Err(format!(
            "--param {arg:?}: the two bounds are in different kinds of unit"
        ));
    };
    if lo < 0.0 || hi <= lo {
        return Err(format!("--param {arg:?}: expected 0 ≤ LO < HI"));
    }
    Ok(Param {
        key: key.to_string(),
        lo,
        hi,
        unit,
    })
}

/// Parses `MIN..MAX` sizes (`1M..1G`).
///
/// # Errors
/// A message naming what is wrong.
pub fn parse_size_range(arg: &str) -> Result<(u64, u64), String> {
    let bad = || format!("--fit-sizes {arg:?}: expected MIN..MAX sizes, e.g. 64K..16M");
    let (a, b) = arg.split_once("..").ok_or_else(bad)?;
    let (a, b) = (
        parse_size(a.trim()).map_err(|_| bad())?,
        parse_size(b.trim()).map_err(|_| bad())?,
    );
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// What a calibration found.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// Fitted value per parameter, in order.
    pub values: Vec<f64>,
    /// Geometric-mean error on the fit rows before and after.
    pub fit_before: Option<f64>,
    /// After.
    pub fit_after: Option<f64>,
    /// On the held-out rows before.
    pub held_before: Option<f64>,
    /// After.
    pub held_after: Option<f64>,
    /// Fit rows and held-out rows.
    pub fit_rows: usize,
    /// Held-out rows.
    pub held_rows: usize,
    /// Simulations run.
    pub evaluations: usize,
    /// Sum of squared log errors at the end.
    pub objective: f64,
}

/// Errors (sim/meas − 1) of every point, split into (fit, held out).
fn errors(
    files: &[Prepared],
    opts: &CheckOptions,
    sets: &[(String, String)],
    fit: (u64, u64),
) -> Result<(Vec<f64>, Vec<f64>), BaseError> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for p in files {
        let sim = simulate(p, opts, sets)?;
        for (pt, (t, _, _)) in p.points.iter().zip(sim) {
            let e = t / pt.time_us - 1.0;
            if pt.bytes >= fit.0 && pt.bytes <= fit.1 {
                a.push(e);
            } else {
                b.push(e);
            }
        }
    }
    Ok((a, b))
}

fn sets_for(params: &[Param], values: &[f64]) -> Vec<(String, String)> {
    params
        .iter()
        .zip(values)
        .map(|(p, &v)| (p.key.clone(), p.format(v)))
        .collect()
}

/// Fits `params` to the fit rows (sizes within `fit`) of `files`.
///
/// # Errors
/// A parameter value the scenario refuses, or a failed run.
pub fn calibrate(
    files: &[Prepared],
    opts: &CheckOptions,
    params: &[Param],
    fit: (u64, u64),
    rounds: usize,
) -> Result<Calibration, BaseError> {
    // every key must exist and take both bounds before any search
    for p in files {
        for bound in [0usize, 1] {
            let vals: Vec<f64> = params
                .iter()
                .map(|q| if bound == 0 { q.lo } else { q.hi })
                .collect();
            let mut sets = p.sets.clone();
            sets.extend(sets_for(params, &vals));
            super::cluster::build(&p.src, &sets, p.nodes)?;
        }
    }
    let (fb, hb) = errors(files, opts, &[], fit)?;
    if fb.is_empty() {
        return Err(BaseError::Usage(format!(
            "--fit-sizes {}..{}: no measured row in that range",
            format_bytes(fit.0),
            format_bytes(fit.1)
        )));
    }
    let mut evaluations = 1;
    let objective = |values: &[f64], evals: &mut usize| -> Result<f64, BaseError> {
        *evals += 1;
        let (f, _) = errors(files, opts, &sets_for(params, values), fit)?;
        Ok(f.iter().map(|e| (1.0 + e).ln().powi(2)).sum())
    };
    // start in the middle of each range (geometric when positive)
    let log = |p: &Param| p.lo > 0.0;
    let to_x = |p: &Param, v: f64| if log(p) { v.ln() } else { v };
    let from_x = |p: &Param, x: f64| if log(p) { x.exp() } else { x };
    let mut values: Vec<f64> = params
        .iter()
        .map(|p| from_x(p, 0.5 * (to_x(p, p.lo) + to_x(p, p.hi))))
        .collect();
    let rounds = if params.len() == 1 { 1 } else { rounds.max(1) };
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        for (i, p) in params.iter().enumerate() {
            let (mut a, mut b) = (to_x(p, p.lo), to_x(p, p.hi));
            let tol = (b - a) * 2e-5;
            let eval = |x: f64, vals: &mut Vec<f64>, ev: &mut usize| -> Result<f64, BaseError> {
                vals[i] = from_x(p, x);
                objective(vals, ev)
            };
            let mut c = b - phi * (b - a);
            let mut d = a + phi * (b - a);
            let mut fc = eval(c, &mut values, &mut evaluations)?;
            let mut fd = eval(d, &mut values, &mut evaluations)?;
            while b - a > tol {
                if fc <= fd {
                    b = d;
                    d = c;
                    fd = fc;
                    c = b - phi * (b - a);
                    fc = eval(c, &mut values, &mut evaluations)?;
                } else {
                    a = c;
                    c = d;
                    fc = fd;
                    d = a + phi * (b - a);
                    fd = eval(d, &mut values, &mut evaluations)?;
                }
            }
            let (x, fx) = if fc <= fd { (c, fc) } else { (d, fd) };
            values[i] = from_x(p, x);
            best = fx;
        }
    }
    let (fa, ha) = errors(files, opts, &sets_for(params, &values), fit)?;
    evaluations += 1;
    Ok(Calibration {
        values,
        fit_before: geomean_error(fb.iter().copied()),
        fit_after: geomean_error(fa.iter().copied()),
        held_before: geomean_error(hb.iter().copied()),
        held_after: geomean_error(ha.iter().copied()),
        fit_rows: fa.len(),
        held_rows: ha.len(),
        evaluations,
        objective: best,
    })
}

/// The fitted values as a scenario fragment, with a comment naming the inputs.
pub fn toml_fragment(
    c: &Calibration,
    params: &[Param],
    inputs: &[String],
    base: &str,
    opts: &CheckOptions,
    fit: (u64, u64),
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# fabricsim calibrate {}: least squares on ln(time)",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "# measured: {}", inputs.join(", "));
    let _ = writeln!(
        s,
        "# fit rows: sizes {}..{} ({} rows); held out: {} rows",
        format_bytes(fit.0),
        format_bytes(fit.1),
        c.fit_rows,
        c.held_rows
    );
    let _ = writeln!(
        s,
        "# base: {}, fidelity {}, algorithm {}",
        base,
        opts.fidelity.name(),
        opts.algo
    );
    let _ = writeln!(
        s,
        "# geomean error on the fit rows: {} before, {} after",
        pct(c.fit_before),
        pct(c.fit_after)
    );
    let mut tables: Vec<(&str, Vec<(&str, String)>)> = Vec::new();
    for (p, &v) in params.iter().zip(&c.values) {
        let (table, leaf) = p.key.rsplit_once('.').unwrap_or(("", p.key.as_str()));
        let val = crate::sweep::toml_value(&p.format(v));
        match tables.iter_mut().find(|t| t.0 == table) {
            Some(t) => t.1.push((leaf, val)),
            None => tables.push((table, vec![(leaf, val)])),
        }
    }
    for (table, keys) in tables {
        if !table.is_empty() {
            let _ = writeln!(s, "[{table}]");
        }
        for (k, v) in keys {
            let _ = writeln!(s, "{k} = {v}");
        }
    }
    s
}

fn pct(e: Option<f64>) -> String {
    e.map_or("–".into(), |e| format!("{:.2}%", e * 100.0))
}

/// The summary `calibrate` prints.
pub fn summary(c: &Calibration, params: &[Param]) -> String {
    let mut s = String::new();
    for (p, &v) in params.iter().zip(&c.values) {
        let at_bound =
            (v - p.lo).abs() <= (p.hi - p.lo) * 1e-3 || (p.hi - v).abs() <= (p.hi - p.lo) * 1e-3;
        let _ = writeln!(
            s,
            "{} = {}   (bounds {}..{}){}",
            p.key,
            p.show(v),
            p.show(p.lo),
            p.show(p.hi),
            if at_bound {
                "  at a bound: widen it"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        s,
        "geomean error, fit rows ({}):      {} before, {} after",
        c.fit_rows,
        pct(c.fit_before),
        pct(c.fit_after)
    );
    if c.held_rows > 0 {
        let _ = writeln!(
            s,
            "geomean error, held-out rows ({}): {} before, {} after",
            c.held_rows,
            pct(c.held_before),
            pct(c.held_after)
        );
    } else {
        let _ = writeln!(
            s,
            "no held-out rows (every size was used to fit; see --fit-sizes)"
        );
    }
    let _ = writeln!(s, "{} simulations", c.evaluations);
    s
}

//! Several runs side by side in the terminal: per collective size the time and
//! busbw of each run and the busbw ratio of each run to the first, then the flow
//! and fabric headline figures.

use std::fmt::Write;

use super::Report;

/// A letter per run: `A`, `B`, … (then `R27`, … past `Z`).
pub fn letter(i: usize) -> String {
    if i < 26 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        format!("R{}", i + 1)
    }
}

/// `b / a`, or NaN when `a` is zero (printed as `-`).
pub fn ratio(b: f64, a: f64) -> f64 {
    if a != 0.0 {
        b / a
    } else {
        f64::NAN
    }
}

fn fmt_ratio(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        "-".into()
    }
}

/// The comparison table. Rows are matched by (op, size), sizes ascending; a size
/// only some runs have shows `-` for the others. Columns: per run `X time(us)` and
/// `X busbw`, then `X/A` = busbw of run X over busbw of run A for every run after
/// the first. The headline figures below show `n/a` (ratio `-`) for a run whose
/// fidelity does not model them (no flows; drops, ECN marks and PFC pauses below
/// the packet level), and a figure no run models is left out. Runs without
/// collectives (traffic patterns, flow lists) get no busbw table at all: their
/// headline figures are the makespan and the FCTs.
pub fn table(reports: &[Report], labels: &[String]) -> String {
    let mut s = String::new();
    for (i, l) in labels.iter().enumerate() {
        let r = reports.get(i);
        let _ = writeln!(
            s,
            "# {} = {} ({}, {} fidelity)",
            letter(i),
            l,
            r.map_or("", |r| r.scenario.as_str()),
            r.map_or("", |r| r.fidelity.as_str())
        );
    }
    let mut keys: Vec<(&str, u64)> = Vec::new();
    for r in reports {
        for c in &r.collectives {
            if !keys.contains(&(c.op.as_str(), c.bytes)) {
                keys.push((&c.op, c.bytes));
            }
        }
    }
    // ops in first-seen order, sizes ascending within an op
    let op_rank = |op: &str| keys.iter().position(|k| k.0 == op).unwrap_or(0);
    let mut keys = {
        let mut k = keys.clone();
        k.sort_by_key(|&(op, b)| (op_rank(op), b));
        k
    };
    keys.dedup();
    if keys.is_empty() {
        // traffic, flow-list runs: no collective rows, so no busbw table (an
        // empty one with 0.000 busbw would read as a measurement)
        let _ = write!(s, "# {:<25}", "figure");
        for i in 0..reports.len() {
            let _ = write!(s, " {:>14} {:>12}", "", letter(i));
        }
        for i in 1..reports.len() {
            let _ = write!(s, " {:>10}", format!("{}/A", letter(i)));
        }
        s.push('\n');
    } else {
        let _ = write!(s, "# {:>12} {:>12}", "op", "size(B)");
        for i in 0..reports.len() {
            let l = letter(i);
            let _ = write!(
                s,
                " {:>14} {:>12}",
                format!("{l} time(us)"),
                format!("{l} busbw")
            );
        }
        for i in 1..reports.len() {
            let _ = write!(s, " {:>10}", format!("{}/A busbw", letter(i)));
        }
        s.push('\n');
        for (op, bytes) in &keys {
            let _ = write!(s, "  {op:>12} {bytes:>12}");
            let found: Vec<Option<&super::CollectiveRow>> = reports
                .iter()
                .map(|r| {
                    r.collectives
                        .iter()
                        .find(|c| c.op == *op && c.bytes == *bytes)
                })
                .collect();
            for c in &found {
                match c {
                    Some(c) => {
                        let _ = write!(s, " {:>14.2} {:>12.2}", c.time_us, c.busbw_gbps);
                    }
                    None => {
                        let _ = write!(s, " {:>14} {:>12}", "-", "-");
                    }
                }
            }
            for c in found.iter().skip(1) {
                let v = match (found[0], c) {
                    (Some(a), Some(b)) => ratio(b.busbw_gbps, a.busbw_gbps),
                    _ => f64::NAN,
                };
                let _ = write!(s, " {:>10}", fmt_ratio(v));
            }
            s.push('\n');
        }
    }
    // A figure a run does not model is `n/a` (and its ratio `-`), never a 0 set
    // against another run's measured count; a row no run models is left out.
    let mut line = |name: &str, f: &dyn Fn(&Report) -> Option<f64>, prec: usize| {
        let vals: Vec<Option<f64>> = reports.iter().map(f).collect();
        if vals.iter().all(Option::is_none) {
            return;
        }
        let _ = write!(s, "# {name:<25}");
        for v in &vals {
            let cell = v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.prec$}"));
            let _ = write!(s, " {:>14} {:>12}", "", cell);
        }
        for v in vals.iter().skip(1) {
            let r = match (vals[0], v) {
                (Some(a), Some(b)) => ratio(*b, a),
                _ => f64::NAN,
            };
            let _ = write!(s, " {:>10}", fmt_ratio(r));
        }
        s.push('\n');
    };
    line(
        "avg busbw (GB/s)",
        &|r| (!r.collectives.is_empty()).then(|| mean_busbw(r)),
        3,
    );
    line("makespan (us)", &|r| Some(r.makespan_us), 2);
    line(
        "flow p50 FCT (us)",
        &|r| (r.flows.count > 0).then_some(r.flows.fct_us.p50),
        2,
    );
    line(
        "flow p99 FCT (us)",
        &|r| (r.flows.count > 0).then_some(r.flows.fct_us.p99),
        2,
    );
    line(
        "flow max FCT (us)",
        &|r| (r.flows.count > 0).then_some(r.flows.fct_us.max),
        2,
    );
    line("drops", &|r| r.fabric.drops.map(|v| v as f64), 0);
    line("ECN marks", &|r| r.fabric.ecn_marks.map(|v| v as f64), 0);
    // InfiniBand CC's: a row only when some run ran it
    line("FECN marks", &|r| r.fabric.fecn_marks.map(|v| v as f64), 0);
    line("BECNs", &|r| r.fabric.becns.map(|v| v as f64), 0);
    line(
        "PFC pauses",
        &|r| r.fabric.pfc_pause_frames.map(|v| v as f64),
        0,
    );
    line(
        "PFC watchdog fires",
        &|r| r.pfc_watchdog_triggers().map(|v| v as f64),
        0,
    );
    line(
        "PFC watchdog drops",
        &|r| r.pfc_watchdog_drops().map(|v| v as f64),
        0,
    );
    line(
        "PFC headroom drops",
        &|r| r.pfc_headroom_drops().map(|v| v as f64),
        0,
    );
    line(
        "PFC deadlock cycles",
        &|r| r.pfc_deadlock_cycles().map(|v| v as f64),
        0,
    );
    s
}

/// Mean busbw over the collective rows (0 when there are none).
pub fn mean_busbw(r: &Report) -> f64 {
    if r.collectives.is_empty() {
        0.0
    } else {
        r.collectives.iter().map(|c| c.busbw_gbps).sum::<f64>() / r.collectives.len() as f64
    }
}

//! The terminal rendering: an nccl-tests-style table plus fabric counters.

use std::fmt::Write;

use super::{or_na, FabricReport, Report};
use crate::units::format_bytes;

/// Renders the report for a terminal.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# fabricsim {} | scenario {} | fidelity {} | seed {}",
        r.version, r.scenario, r.fidelity, r.seed
    );
    let _ = writeln!(
        s,
        "# topology {}: {} hosts, {} GPUs, {} switches, {} links",
        r.topology.shape, r.topology.hosts, r.topology.gpus, r.topology.switches, r.topology.links
    );
    if !r.topology.tiers.is_empty() {
        let _ = writeln!(s, "# links: {}", r.topology.tiers_line());
    }
    if !r.collectives.is_empty() {
        s.push_str(&collective_table(r));
    }
    if let Some(t) = &r.training {
        s.push_str(&super::workload::render_training(t));
    }
    if let Some(i) = &r.inference {
        s.push_str(&super::workload::render_inference(i));
    }
    s.push_str(&super::jobs::render(r));
    if r.collectives.is_empty() && r.training.is_none() && r.inference.is_none() {
        let gbps = if r.makespan_us > 0.0 {
            r.fabric.bytes_delivered as f64 * 8.0 / (r.makespan_us * 1e-6) / 1e9
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "# makespan {:.2} us; aggregate goodput {:.1} Gb/s",
            r.makespan_us, gbps
        );
    }
    if r.flows.count > 0 {
        let f = &r.flows;
        let slow = |p: fn(&super::Percentiles) -> f64| {
            f.slowdown
                .as_ref()
                .map_or_else(|| "n/a".to_string(), |s| format!("{:.2}", p(s)))
        };
        let _ = writeln!(
            s,
            "# flows {}: FCT p50 {:.2} us, p99 {:.2} us, p99.9 {:.2} us, max {:.2} us; slowdown p50 {}, p99 {}",
            f.count,
            f.fct_us.p50,
            f.fct_us.p99,
            f.fct_us.p999,
            f.fct_us.max,
            slow(|p| p.p50),
            slow(|p| p.p99)
        );
    }
    s.push_str(&fabric_line(&r.fabric));
    for c in &r.classes {
        let _ = writeln!(
            s,
            "# class {} ({}, {}): {} delivered, {} data drops, {} PAUSE frames",
            c.name,
            c.weight.map_or_else(
                || format!("strict priority {}", c.priority),
                |w| format!("priority {}, weight {w}", c.priority)
            ),
            if c.lossless { "lossless" } else { "lossy" },
            format_bytes(c.payload_delivered),
            c.data_drops,
            c.pause_frames
        );
    }
    if let Some(d) = &r.deadlock {
        let cycle: Vec<String> = d
            .cycle
            .iter()
            .map(|h| format!("link {} (node {} -> {})", h.link, h.from, h.to))
            .collect();
        let _ = writeln!(
            s,
            "# {} DEADLOCK detected at {:.2} us (no transmission since {:.2} us): {} cycle {}",
            d.kind,
            d.detected_at_us,
            d.stalled_since_us,
            match d.kind {
                crate::backend::DeadlockKind::Pfc => "paused",
                crate::backend::DeadlockKind::Credit => "out-of-credit",
            },
            if cycle.is_empty() {
                "not found among the blocked links".to_string()
            } else {
                cycle.join(" => ")
            }
        );
        if d.during.is_some() || !d.ops_in_flight.is_empty() {
            let _ = writeln!(
                s,
                "#   froze during {}{}",
                d.during.as_deref().unwrap_or("the run"),
                if d.ops_in_flight.is_empty() {
                    String::new()
                } else {
                    format!(", in {}", d.ops_in_flight.join(", "))
                }
            );
        }
    }
    if let Some(p) = &r.pfc {
        if p.headroom_packets_dropped > 0 {
            let _ = writeln!(
                s,
                "# PFC headroom full: {} packets dropped (a PAUSE came too late for what was in flight; the transport resends them)",
                p.headroom_packets_dropped
            );
        }
        for c in &p.deadlock_cycles {
            let cycle: Vec<String> = c
                .cycle
                .iter()
                .map(|(l, a, b)| format!("link {l} (node {a} -> {b})"))
                .collect();
            let _ = writeln!(
                s,
                "# PFC deadlock cycle found at {:.2} us (a lane paused since {:.2} us), the run went on: {}",
                c.detected_at_ps as f64 / 1e6,
                c.paused_since_ps as f64 / 1e6,
                cycle.join(" => ")
            );
        }
        if p.watchdog_triggers > 0 {
            let _ = writeln!(
                s,
                "# PFC watchdog fired {} times on {} lanes, dropped {} packets ({} wire bytes)",
                p.watchdog_triggers,
                p.watchdog_lanes.len(),
                p.watchdog_packets_dropped,
                p.watchdog_wire_bytes_dropped
            );
            for w in &p.watchdog_lanes {
                let _ = writeln!(
                    s,
                    "#   link {} (node {} -> {}) lane {}: first at {:.2} us, last at {:.2} us, {} triggers, {} packets, {} bytes dropped",
                    w.link,
                    w.from,
                    w.to,
                    w.vl,
                    w.first_at_ps as f64 / 1e6,
                    w.last_at_ps as f64 / 1e6,
                    w.triggers,
                    w.packets_dropped,
                    w.wire_bytes_dropped
                );
            }
        }
    }
    if !r.listed_flows.is_empty() {
        const SHOWN: usize = 64;
        let _ = writeln!(
            s,
            "#\n# {:>16} {:>7} {:>7} {:>12} {:>12} {:>12} {:>12}",
            "flow", "src", "dst", "bytes", "start(us)", "end(us)", "fct(us)"
        );
        for f in r.listed_flows.iter().take(SHOWN) {
            let _ = writeln!(
                s,
                "  {:>16} {:>7} {:>7} {:>12} {:>12.3} {:>12.3} {:>12.3}",
                f.id, f.src, f.dst, f.bytes, f.start_us, f.end_us, f.fct_us
            );
        }
        if r.listed_flows.len() > SHOWN {
            let _ = writeln!(
                s,
                "# ... {} more flows (every one in --json, `listed_flows`)",
                r.listed_flows.len() - SHOWN
            );
        }
    }
    for f in &r.faults {
        let _ = writeln!(
            s,
            "# fault {:?} ({} at {:.1} us from the start of each run) applied to every run",
            f.name, f.kind, f.at_us
        );
    }
    for ig in &r.ignored_settings {
        let _ = writeln!(
            s,
            "# note: {} is not used in this run: {}",
            ig.key, ig.reason
        );
    }
    let _ = writeln!(
        s,
        "# simulated {} events in {:.3} s ({:.2} M events/s)",
        r.sim.events,
        r.sim.wall_s,
        r.sim.events_per_s / 1e6
    );
    s
}

/// The `# fabric:` line: every counter, `n/a` where the fidelity does not model it.
pub fn fabric_line(c: &FabricReport) -> String {
    let corrupted = match c.drops_corrupted {
        Some(n) if n > 0 => format!(" ({n} corrupted)"),
        _ => String::new(),
    };
    let trimmed = match (c.packets_trimmed, c.bytes_trimmed) {
        (Some(n), Some(b)) => format!(", {n} trimmed ({} cut)", format_bytes(b)),
        _ => String::new(),
    };
    // InfiniBand CC's counts only where the run ran it (JSON keeps the keys)
    let ib_cc = match (c.fecn_marks, c.becns) {
        (Some(f), Some(b)) => format!(", {f} FECN marks, {b} BECNs"),
        _ => String::new(),
    };
    format!(
        "# fabric: {} delivered, {} drops{corrupted}{trimmed}, {} ECN marks, {} CNPs{ib_cc}, {} PFC pauses, {} retransmitted, max queue {}\n",
        format_bytes(c.bytes_delivered),
        or_na(c.drops),
        or_na(c.ecn_marks),
        or_na(c.cnps),
        or_na(c.pfc_pause_frames),
        or_na(c.retransmitted_packets),
        c.max_queue_bytes.map_or_else(|| "n/a".to_string(), format_bytes)
    )
}

/// Only the collective rows, with nccl-tests' columns.
pub fn collective_table(r: &Report) -> String {
    collective_rows(&r.collectives)
}

/// `rows` with nccl-tests' columns (a report's, or one job's).
pub fn collective_rows(rows: &[super::CollectiveRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#\n# {:>12} {:>12} {:>8} {:>16} {:>6} {:>6} {:>12} {:>10} {:>10} {:>10}",
        "size",
        "count",
        "type",
        "algorithm",
        "proto",
        "ranks",
        "time(us)",
        "algbw",
        "busbw",
        "wirebw"
    );
    let _ = writeln!(
        s,
        "# {:>12} {:>12} {:>8} {:>16} {:>6} {:>6} {:>12} {:>10} {:>10} {:>10}",
        "(B)", "(elements)", "", "", "", "", "", "(GB/s)", "(GB/s)", "(GB/s)"
    );
    for c in rows {
        let wire = c
            .wirebw_gbps
            .map_or_else(|| "n/a".to_string(), |w| format!("{w:.2}"));
        let _ = writeln!(
            s,
            "  {:>12} {:>12} {:>8} {:>16} {:>6} {:>6} {:>12.2} {:>10.2} {:>10.2} {:>10}",
            c.bytes,
            c.count,
            c.dtype,
            c.algorithm,
            c.protocol,
            c.ranks,
            c.time_us,
            c.algbw_gbps,
            c.busbw_gbps,
            wire
        );
    }
    let healthy: Vec<_> = rows
        .iter()
        .filter_map(|c| Some((c.bytes, c.healthy_time_us?, c.healthy_busbw_gbps?, c)))
        .collect();
    if !healthy.is_empty() {
        let _ = writeln!(
            s,
            "#\n# with the faults against the healthy fabric:\n# {:>12} {:>12} {:>12} {:>10} {:>10} {:>9}",
            "size", "time(us)", "healthy(us)", "busbw", "healthy", "slowdown"
        );
        for (bytes, h_time, h_busbw, c) in healthy {
            let slowdown = if h_time > 0.0 {
                c.time_us / h_time
            } else {
                1.0
            };
            let _ = writeln!(
                s,
                "  {:>12} {:>12.2} {:>12.2} {:>10.2} {:>10.2} {:>8.3}x",
                bytes, c.time_us, h_time, c.busbw_gbps, h_busbw, slowdown
            );
        }
    }
    if !rows.is_empty() {
        let avg = rows.iter().map(|c| c.busbw_gbps).sum::<f64>() / rows.len() as f64;
        let _ = writeln!(s, "# Avg bus bandwidth    : {avg:.3} GB/s\n#");
    }
    s
}

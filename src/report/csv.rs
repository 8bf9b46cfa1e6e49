//! CSV exports (one header line, comma-separated, no quoting needed: fields are
//! numbers and identifiers). A counter the run's fidelity does not model is an
//! empty cell, never a 0.

use std::fmt::Write;

use super::Report;

/// One row per collective size.
pub fn collectives(r: &Report) -> String {
    let mut s = String::from(
        "scenario,fidelity,op,algorithm,bytes,count,type,ranks,time_us,algbw_GBps,busbw_GBps,protocol,channels,wirebw_GBps,healthy_time_us,healthy_busbw_GBps\n",
    );
    for c in &r.collectives {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{:.4},{:.4},{:.4},{},{},{},{},{}",
            csv_field(&r.scenario),
            r.fidelity,
            c.op,
            c.algorithm,
            c.bytes,
            c.count,
            c.dtype,
            c.ranks,
            c.time_us,
            c.algbw_gbps,
            c.busbw_gbps,
            c.protocol,
            c.channels,
            c.wirebw_gbps
                .map_or_else(String::new, |w| format!("{w:.4}")),
            c.healthy_time_us
                .map_or_else(String::new, |t| format!("{t:.4}")),
            c.healthy_busbw_gbps
                .map_or_else(String::new, |b| format!("{b:.4}"))
        );
    }
    s
}

/// A counter's cell: empty where the run's fidelity does not model it.
pub fn cell(v: Option<u64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// One row per link that carried traffic (queue, drop, credit and pause columns
/// empty below the packet level).
pub fn links(r: &Report) -> String {
    let mut s =
        String::from("link,bytes,utilization,drops,max_queue_bytes,avg_queue_bytes,stall_ps,paused_ps,pause_frames,ecn_marks\n");
    for l in &r.links {
        let _ = writeln!(
            s,
            "{},{},{:.6},{},{},{},{},{},{},{}",
            l.link,
            l.bytes,
            l.utilization,
            cell(l.drops),
            cell(l.max_queue_bytes),
            l.avg_queue_bytes
                .map_or_else(String::new, |v| format!("{v:.1}")),
            cell(l.stall_ps),
            cell(l.paused_ps),
            cell(l.pause_frames),
            cell(l.ecn_marks)
        );
    }
    s
}

/// One row per egress lane the PFC watchdog fired on (`pfc_watchdog.csv`,
/// packet level, when it fired): times in ps, drops in packets and wire bytes.
pub fn pfc_watchdog(r: &Report) -> String {
    let mut s = String::from(
        "link,from,to,lane,first_at_ps,last_at_ps,last_drop_at_ps,triggers,packets_dropped,wire_bytes_dropped\n",
    );
    for w in r.pfc.iter().flat_map(|p| &p.watchdog_lanes) {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{}",
            w.link,
            w.from,
            w.to,
            w.vl,
            w.first_at_ps,
            w.last_at_ps,
            w.last_drop_at_ps,
            w.triggers,
            w.packets_dropped,
            w.wire_bytes_dropped
        );
    }
    s
}

/// One row per link of each cycle of paused links found (`pfc_cycles.csv`,
/// packet level, when one was found): the cycle's index and when it was found
/// (ps), then the link and its ends, in the cycle's order.
pub fn pfc_cycles(r: &Report) -> String {
    let mut s = String::from("cycle,detected_at_ps,paused_since_ps,position,link,from,to\n");
    for (i, c) in r.pfc.iter().flat_map(|p| &p.deadlock_cycles).enumerate() {
        for (k, (l, a, b)) in c.cycle.iter().enumerate() {
            let _ = writeln!(
                s,
                "{i},{},{},{k},{l},{a},{b}",
                c.detected_at_ps, c.paused_since_ps
            );
        }
    }
    s
}

/// One row per queue pair (`queue_pairs.csv`, with `--links`).
pub fn queue_pairs(r: &Report) -> String {
    let mut s = String::from("src,dst,messages,bytes,retransmitted_packets,timeouts\n");
    for q in &r.queue_pairs {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{}",
            q.src, q.dst, q.messages, q.bytes, q.retransmitted_packets, q.timeouts
        );
    }
    s
}

/// Quotes a free-text field if it holds a comma or quote.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per transfer (`flows.csv`): the collective size it belongs to, its task
/// index, endpoints, size, completion time, ideal time and slowdown (an empty cell
/// where the fidelity does not model slowdowns, as every CSV writes an unmodelled
/// counter). Runs with more
/// than [`super::FlowRecords::CAP`] transfers keep a uniform sample (every
/// `stride`-th transfer); the first line then says so as a `#` comment.
pub fn flows(r: &Report) -> String {
    let rec = &r.flow_records;
    let mut s = String::new();
    if rec.stride > 1 {
        let _ = writeln!(
            s,
            "# downsampled: {} of {} transfers (every {}th)",
            rec.rows.len(),
            rec.total,
            rec.stride
        );
    }
    s.push_str("collective_bytes,task,src,dst,bytes,fct_us,ideal_us,slowdown\n");
    for f in &rec.rows {
        // empty where the fidelity does not model slowdowns (analytical: 1 by construction)
        let slow = match (&r.flows.slowdown, f.ideal_us > 0.0) {
            (None, _) => String::new(),
            (Some(_), true) => format!("{:.4}", f.fct_us / f.ideal_us),
            (Some(_), false) => format!("{:.4}", 1.0),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.4},{:.4},{}",
            f.collective_bytes, f.task, f.src, f.dst, f.bytes, f.fct_us, f.ideal_us, slow
        );
    }
    s
}

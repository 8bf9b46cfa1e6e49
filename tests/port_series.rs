//! PFC and ECN per-port time series in packet-level reports (issues 14, 15).
//!
//! The sampler keeps each port's cumulative paused lane-time and ECN marks;
//! a series is their increase per interval. So the area under a port's
//! `pfc_paused` series is its paused time up to the last sample, and the area
//! under `ecn_marks_per_us` its marks up to then: both are checked against the
//! port's own end-of-run counters (`links[]`), which in turn must add up to the
//! fabric's (`fabric.ecn_marks`). No closed form is needed: these are
//! bookkeeping identities, exact up to what happens after the last sample.

mod common;

use fabricsim::backend::Series;
use fabricsim::config::Fidelity;
use fabricsim::report::Report;
use fabricsim::run::RunOptions;

fn run_example(file: &str, fidelity: Fidelity) -> Report {
    common::run_with(
        file,
        &common::example(file),
        &RunOptions {
            fidelity: Some(fidelity),
            collect_links: true,
            detail: true,
            ..RunOptions::default()
        },
    )
}

/// The link index a series is about: `"<kind> link 12 (a -> b)"`.
fn link_of(s: &Series) -> u32 {
    let rest = s
        .name
        .split_once(" link ")
        .expect("series names its link")
        .1;
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// Σ value × Δt over the series, with Δt in picoseconds (the first point's
/// interval starts at time 0, where every cumulative counter is 0).
fn area_ps(s: &Series) -> f64 {
    let mut prev = 0.0;
    let mut a = 0.0;
    for p in &s.samples {
        a += p.value * (p.t_us - prev) * 1e6;
        prev = p.t_us;
    }
    a
}

fn of_kind<'a>(r: &'a Report, kind: &str) -> Vec<&'a Series> {
    r.series
        .iter()
        .filter(|s| s.name.split_whitespace().next() == Some(kind))
        .collect()
}

#[test]
fn pfc_paused_series_integrate_to_the_ports_paused_time() {
    // 8 → 1 RoCE incast with PFC and no congestion control: the senders' NIC
    // ports and the switch ports towards the victim are paused for most of it.
    let r = run_example("incast-roce-pfc-only.toml", Fidelity::Packet);
    let paused = of_kind(&r, "pfc_paused");
    assert!(
        !paused.is_empty(),
        "no pfc_paused series: {:?}",
        r.series.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let end_ps = r.makespan_us * 1e6;
    for s in &paused {
        let l = link_of(s);
        let link = r
            .links
            .iter()
            .find(|x| x.link == l)
            .expect("paused link is listed");
        let total = link.paused_ps.expect("packet level models pauses") as f64;
        assert!(
            total > 0.0,
            "{}: a series for a port that never paused",
            s.name
        );
        let last = s.samples.last().unwrap().t_us * 1e6;
        let area = area_ps(s);
        // What the series misses is paused time after its last sample: at most
        // (end − last) per lane; the example has 2 lanes, data on one.
        let after = (end_ps - last).max(0.0) * 2.0;
        println!(
            "{}: area {:.0} ps, counter {:.0} ps, after last sample ≤ {:.0}",
            s.name, area, total, after
        );
        assert!(
            area <= total + 1.0,
            "{}: area {area} > paused {total}",
            s.name
        );
        assert!(
            area >= total - after - 1.0,
            "{}: area {area} < paused {total} − {after}",
            s.name
        );
        assert!(s
            .samples
            .iter()
            .all(|p| p.value >= 0.0 && p.value <= 2.0 + 1e-9));
    }
    // The port paused longest is among those the series show.
    let most = r.links.iter().max_by_key(|x| x.paused_ps).unwrap().link;
    assert!(
        paused.iter().any(|s| link_of(s) == most),
        "link {most} paused longest"
    );
}

#[test]
fn ecn_series_integrate_to_the_ports_marks_and_the_marks_to_the_fabric() {
    let r = run_example("incast-roce-pfc-dcqcn.toml", Fidelity::Packet);
    let fabric = r.fabric.ecn_marks.expect("packet level models marks");
    assert!(fabric > 0, "the DCQCN incast marks");
    let per_link: u64 = r.links.iter().map(|l| l.ecn_marks.unwrap()).sum();
    assert_eq!(
        per_link, fabric,
        "every mark is counted at the port that made it"
    );
    let marks = of_kind(&r, "ecn_marks_per_us");
    assert!(!marks.is_empty());
    for s in &marks {
        let l = link_of(s);
        let count = r
            .links
            .iter()
            .find(|x| x.link == l)
            .unwrap()
            .ecn_marks
            .unwrap() as f64;
        // marks per µs × µs: the marks made up to the last sample (an integer)
        let area = area_ps(s) / 1e6;
        println!(
            "{}: {:.3} marks by the series, {} counted",
            s.name, area, count
        );
        assert!(area <= count + 1e-6, "{}: {area} > {count}", s.name);
        assert!(
            (area - area.round()).abs() < 1e-6,
            "{}: {area} is not a whole number of marks",
            s.name
        );
        assert!(area > 0.0);
    }
}

#[test]
fn below_the_packet_level_links_have_no_ecn_count_and_no_such_series() {
    let r = run_example("incast-roce-pfc-dcqcn.toml", Fidelity::Flow);
    assert!(r
        .links
        .iter()
        .all(|l| l.ecn_marks.is_none() && l.paused_ps.is_none()));
    assert!(of_kind(&r, "pfc_paused").is_empty() && of_kind(&r, "ecn_marks_per_us").is_empty());
    let csv = fabricsim::report::csv::links(&r);
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",pause_frames,ecn_marks"), "{header}");
    // empty cells, not zeros, where the fidelity does not model it
    assert!(csv.lines().skip(1).all(|row| row.ends_with(",,")), "{csv}");
}

#[test]
fn a_lossless_run_without_pfc_pressure_has_no_pause_series() {
    // The lossy incast never pauses: no series may claim it did.
    let r = run_example("incast-roce-lossy.toml", Fidelity::Packet);
    assert!(of_kind(&r, "pfc_paused").is_empty());
    assert!(!of_kind(&r, "queue_bytes").is_empty());
}

/// The report's link timeline at the packet level: every wire byte a port
/// sends (data, ACKs, CNPs, PAUSE frames), spread over its serialization, so
/// each listed link's timeline adds up to that link's byte counter, and no
/// bucket is busier than the line rate. Observing must not change the run.
#[test]
fn packet_link_timeline_adds_up_to_the_link_counters() {
    let r = run_example("incast-roce-pfc-only.toml", Fidelity::Packet);
    let tl = r
        .link_timeline
        .as_ref()
        .expect("the packet level fills the link timeline when asked for detail");
    assert!(!tl.links.is_empty());
    for l in &tl.links {
        let counted = r
            .links
            .iter()
            .find(|x| x.link == l.link)
            .expect("a link in the timeline carried traffic")
            .bytes as f64;
        // the buckets are f64 sums of whole wire sizes, resampled once: exact
        // up to rounding of the spread at bucket edges
        assert!(
            (l.bytes as f64 - counted).abs() <= 1.0 + counted * 1e-12,
            "{}: timeline {} B vs counter {counted} B",
            l.name,
            l.bytes
        );
        assert!(l.utilization.iter().all(|&u| (0.0..=1.0).contains(&u)));
    }
    // The busiest link is the switch port towards the victim: saturated for
    // most of the incast (its counter says busy for `utilization` of the run),
    // so its timeline's mean equals that utilization.
    let top = &tl.links[0];
    let mean = top.utilization.iter().sum::<f64>() / top.utilization.len() as f64;
    let counted = r
        .links
        .iter()
        .find(|x| x.link == top.link)
        .unwrap()
        .utilization;
    assert!(
        (mean - counted).abs() < 0.02,
        "{}: timeline mean {mean:.4} vs busy fraction {counted:.4}",
        top.name
    );
    assert!(mean > 0.8, "the victim's port is the bottleneck: {mean}");

    // the same run without the observer: same results
    let plain = common::run_with(
        "incast-roce-pfc-only.toml",
        &common::example("incast-roce-pfc-only.toml"),
        &RunOptions {
            fidelity: Some(Fidelity::Packet),
            collect_links: true,
            ..RunOptions::default()
        },
    );
    assert!(plain.link_timeline.is_none());
    assert_eq!(plain.makespan_us, r.makespan_us);
    // (not the event count: `detail` also samples the ports' queues, which
    // adds sampling events)
    assert_eq!(plain.fabric.pfc_pause_frames, r.fabric.pfc_pause_frames);
    assert_eq!(
        plain.links.iter().map(|l| l.bytes).collect::<Vec<_>>(),
        r.links.iter().map(|l| l.bytes).collect::<Vec<_>>()
    );
}

/// The flow level's timeline, resampled over several runs laid end to end
/// (one per collective size), keeps every byte: a run's last bucket reaches
/// past the run's end and is clipped to it, not spread off the axis (it lost
/// up to a bucket's share of bytes before).
#[test]
fn flow_link_timeline_keeps_every_byte_across_runs() {
    let r = run_example("allreduce-leaf-spine.toml", Fidelity::Flow);
    let tl = r.link_timeline.as_ref().expect("flow fills the timeline");
    assert!(tl.segments.len() > 1, "several sizes, several runs");
    for l in &tl.links {
        let counted = r.links.iter().find(|x| x.link == l.link).unwrap().bytes as f64;
        assert!(
            (l.bytes as f64 - counted).abs() <= 1.0 + counted * 1e-9,
            "{}: timeline {} B vs counter {counted} B",
            l.name,
            l.bytes
        );
    }
}

//! Every shipped example runs; the seed moves ECMP paths. That no setting silently
//! does nothing is checked key by key in tests/every_key.rs.

use std::path::PathBuf;

use fabricsim::config::{self, Fidelity};
use fabricsim::run::{run, RunOptions};

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

fn headline(text: &str, file: &str, f: Fidelity) -> Option<Vec<u64>> {
    let s = config::parse(file, text).ok()?;
    let r = run(
        &s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
    .ok()?;
    // time in ns per collective row: the figure of merit of a collective sweep;
    // a training step's time, an inference batch's prefill, TPOT and total
    let mut h: Vec<u64> = r
        .collectives
        .iter()
        .map(|c| (c.time_us * 1e3).round() as u64)
        .collect();
    if let Some(t) = &r.training {
        h.push((t.step_time_s * 1e9).round() as u64);
        h.extend(
            t.faults
                .iter()
                .map(|f| (f.step_time_s * 1e9).round() as u64),
        );
    }
    if let Some(i) = &r.inference {
        h.push((i.prefill_ms * 1e6).round() as u64);
        h.push((i.tpot_ms.p50 * 1e6).round() as u64);
        h.push((i.total_ms * 1e6).round() as u64);
    }
    Some(h)
}

#[test]
fn every_example_validates_and_runs_analytically() {
    for p in examples() {
        let s = config::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let r = run(
            &s,
            &RunOptions {
                fidelity: Some(Fidelity::Analytical),
                ..RunOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            !r.collectives.is_empty()
                || r.flows.count > 0
                || r.training.is_some()
                || r.inference.is_some(),
            "{}",
            p.display()
        );
    }
}

/// Replaces the value of `key` in `text` by `new`.
fn replace_value(text: &str, key: &str, new: &str) -> Option<String> {
    let src = config::Source::new("x.toml", text);
    let span = src.span_of(key)?;
    Some(format!(
        "{}{}{}",
        &text[..span.start],
        new,
        &text[span.end..]
    ))
}

#[test]
fn seed_changes_ecmp_paths_at_flow_level() {
    // All-to-all over a 3:1 leaf-spine: which uplink each flow hashes to decides
    // the collisions, so another seed gives another completion time.
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/alltoall-oversubscribed.toml"
    );
    let text = std::fs::read_to_string(p).unwrap();
    let base = headline(&text, p, Fidelity::Flow).unwrap();
    let differs = (4..12).any(|seed| {
        let t = replace_value(&text, "simulation.seed", &seed.to_string()).unwrap();
        headline(&t, p, Fidelity::Flow).unwrap() != base
    });
    assert!(differs, "no seed changed the ECMP outcome");
}

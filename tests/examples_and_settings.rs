//! Every shipped example runs, and no setting silently does nothing: each numeric
//! setting a fidelity claims to use changes the result when perturbed.

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

/// Settings that only constrain the build (a spine must have a port per leaf) and
/// cannot change a result of a valid scenario; they are validated, not simulated.
/// The seed is not a quantity: where ECMP has nothing to choose (a ring on a
/// non-blocking fabric) any seed gives the same result, rightly.
/// `seed_changes_ecmp_paths_at_flow_level` checks it where paths collide.
const CONSTRAINT_ONLY: [&str; 2] = ["topology.spine_radix", "simulation.seed"];

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

/// Candidate perturbations of a value: halve and double its number, keeping the unit.
fn perturbations(value: &str) -> Vec<String> {
    let v = value.trim();
    let (quote, inner) = if v.starts_with('"') {
        ("\"", v.trim_matches('"'))
    } else {
        ("", v)
    };
    let end = inner
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(inner.len());
    let (num, unit) = inner.split_at(end);
    let Ok(x) = num.parse::<f64>() else {
        return Vec::new();
    };
    let integral = !num.contains('.');
    let fmt = |y: f64| {
        if integral && y.fract() == 0.0 {
            format!("{quote}{}{unit}{quote}", y as i64)
        } else {
            format!("{quote}{y}{unit}{quote}")
        }
    };
    // halve and double, then a factor of 10 either way (a size sweep's last size
    // changes only when it crosses the next step)
    let mut out: Vec<String> = [x * 2.0, x / 2.0, x * 10.0, x / 10.0]
        .into_iter()
        .filter(|y| !unit.is_empty() || !integral || y.fract() == 0.0)
        .map(fmt)
        .collect();
    if x == 0.0 {
        out.push(format!("{quote}100{unit}{quote}"));
    }
    out
}

#[test]
fn no_numeric_setting_silently_does_nothing() {
    for p in examples() {
        let text = std::fs::read_to_string(&p).unwrap();
        let file = p.display().to_string();
        let s = config::load(&p).unwrap();
        if matches!(s.workload, config::WorkloadSpec::Traffic(_)) {
            // A traffic pattern involves only its own participants (an incast's 33
            // hosts of a larger cluster): cluster-wide keys may rightly change
            // nothing. These examples are packet-level; tests/packet_scenarios.rs
            // checks their figures.
            continue;
        }
        for f in [Fidelity::Analytical, Fidelity::Flow] {
            let ignored: Vec<String> = s.ignored_settings(f).into_iter().map(|i| i.key).collect();
            let base = headline(&text, &file, f).unwrap();
            for key in &s.keys_set {
                if ignored.contains(key)
                    || CONSTRAINT_ONLY.contains(&key.as_str())
                    || key == "name"
                    || key == "description"
                {
                    continue;
                }
                let src = config::Source::new(&file, &text);
                let Some(value) = src.text_of(key) else {
                    continue;
                };
                let cands = perturbations(value);
                if cands.is_empty() {
                    continue; // not numeric (names, booleans, lists)
                }
                // lazily: stop at the first perturbation that changes the result
                let mut valid = 0;
                let changed = cands.iter().any(|new| {
                    match replace_value(&text, key, new).and_then(|t| headline(&t, &file, f)) {
                        Some(h) => {
                            valid += 1;
                            h != base
                        }
                        None => false,
                    }
                });
                if valid == 0 {
                    // every perturbation is refused by validation (e.g. more NICs than
                    // GPUs): the key is pinned by the others, there is nothing to compare
                    continue;
                }
                assert!(
                    changed,
                    "{file}: `{key}` = {value} changes nothing at {f:?} fidelity (tried {cands:?}); \
                     use it or list it in ignored_settings"
                );
            }
        }
    }
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

//! A bounded fuzz target over scenario text: mutants of the shipped examples go
//! through `config::parse` (what `fabricsim validate` and `run` call) and, when
//! they parse, through what `validate` does next (the ignored-settings notes at
//! every fidelity) and, for small clusters, the topology build.
//!
//! Each case takes one example and applies 1–4 mutations: delete a line,
//! duplicate a line, swap the values of two `key = value` lines, put a key of
//! one example into another, replace a value with a random number (negative,
//! zero, huge, fractional, NaN, inf) or a random string (units, garbage, empty),
//! duplicate or drop a `[section]` header, insert random bytes, truncate the
//! text. A deterministic generator (SplitMix64, seed below) makes every run the
//! same 10,000 cases; set `FABRICSIM_FUZZ_CASES` for more and
//! `FABRICSIM_FUZZ_SEED` for others, e.g. locally before a release.
//!
//! What must hold for every case (CONTRIBUTING: "Bad input is a located
//! diagnostic … never a panic"):
//! - no panic (`catch_unwind` around each call);
//! - an error has at least one diagnostic, each naming the file, a field, what
//!   was found and what is expected (none empty), at a line that exists in the
//!   text (or line 0 for a key that is missing, then named by its field) and a
//!   column ≥ 1 on a line; its rendering starts with `error: fuzz.toml:`.
//!
//! Budget: 10,000 cases take 1–3 s on the shared 2-core machine (the test
//! profile is optimized too; 2,000 took 0.2 s, so five times the planned count
//! stays far inside a 30 s bound);
//! the test prints its counts and time. 600,000 cases (seeds 1–3) ran clean
//! when it was written. `FABRICSIM_FUZZ_RUN=1` also runs each parsed scenario
//! of ≤ 64 GPUs at the analytical fidelity (~0.1 s each, outside CI's budget).

use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use fabricsim::config::{self, Fidelity};

const FILE: &str = "fuzz.toml";
const DEFAULT_CASES: u64 = 10_000;
const DEFAULT_SEED: u64 = 0x5eed_f00d_0012;

/// SplitMix64 (Steele, Lea & Flood 2014): small, seedable, good enough to pick
/// mutations.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn examples() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    assert!(v.len() >= 10, "the shipped examples: {}", v.len());
    v
}

/// `key = value` lines of every example: (key, value) pairs to graft.
fn key_values(ex: &[(String, String)]) -> Vec<(String, String)> {
    let mut kv = Vec::new();
    for (_, text) in ex {
        for line in text.lines() {
            if let Some((k, v)) = split_kv(line) {
                kv.push((k.to_string(), v.to_string()));
            }
        }
    }
    kv
}

fn split_kv(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    if t.starts_with('#') || t.starts_with('[') {
        return None;
    }
    let (k, v) = line.split_once('=')?;
    let v = v.split(" #").next().unwrap_or(v);
    Some((k.trim(), v.trim()))
}

fn random_value(r: &mut Rng) -> String {
    let n = r.next();
    match r.below(16) {
        0 => "0".into(),
        1 => format!("-{}", n % 1000),
        2 => format!("{}", n), // up to 1.8e19: past i64
        3 => format!("{}", n % 100),
        4 => format!("{:.3}", (n % 100_000) as f64 / 1000.0),
        5 => r
            .pick(&["nan", "inf", "-inf", "1e308", "-0.0", "1e-300"])
            .to_string(),
        6 => r.pick(&["true", "false"]).to_string(),
        7 => format!(
            "\"{}{}\"",
            n % 10_000,
            r.pick(&[
                "Gbps", "GB/s", "us", "ns", "ps", "s", "KiB", "MiB", "GiB", "TiB", "B", "%", "",
                "bogus"
            ])
        ),
        8 => r
            .pick(&[
                "\"\"",
                "\"0Gbps\"",
                "\"-1us\"",
                "\"1e30B\"",
                "\"NaNGbps\"",
                "\"1e19\"",
                "\"ring\"",
                "\"auto\"",
                "\"flow\"",
                "\"packet\"",
                "\"dgx-h100-node\"",
                "\"/dev/zero\"",
                "\"ü\u{1F600}\"",
            ])
            .to_string(),
        9 => "[1, 2, 3]".into(),
        10 => "[]".into(),
        11 => "{ a = 1 }".into(),
        12 => "\"unterminated".into(),
        13 => "1979-05-27T07:32:00Z".into(),
        14 => format!("0x{:x}", n % 65536),
        _ => format!(
            "\"{}\"",
            (0..r.below(12))
                .map(|_| (b'a' + r.below(26) as u8) as char)
                .collect::<String>()
        ),
    }
}

/// One mutation of `lines`.
fn mutate(lines: &mut Vec<String>, r: &mut Rng, kv: &[(String, String)]) {
    if lines.is_empty() {
        lines.push(String::new());
    }
    let i = r.below(lines.len());
    match r.below(10) {
        // delete a line
        0 => {
            lines.remove(i);
        }
        // duplicate a line (a duplicate key or table is a TOML error)
        1 => {
            let l = lines[i].clone();
            lines.insert(r.below(lines.len() + 1), l);
        }
        // swap the values of two key = value lines
        2 => {
            let j = r.below(lines.len());
            if let (Some((ki, vi)), Some((kj, vj))) = (split_kv(&lines[i]), split_kv(&lines[j])) {
                let (a, b) = (format!("{ki} = {vj}"), format!("{kj} = {vi}"));
                lines[i] = a;
                lines[j] = b;
            }
        }
        // a random value for a key
        3 | 4 => {
            if let Some((k, _)) = split_kv(&lines[i]) {
                lines[i] = format!("{k} = {}", random_value(r));
            }
        }
        // a key = value line from any example, anywhere (wrong section, new key)
        5 => {
            let (k, v) = r.pick(kv);
            lines.insert(r.below(lines.len() + 1), format!("{k} = {v}"));
        }
        // a random key with a random value
        6 => {
            let (k, _) = r.pick(kv);
            let v = random_value(r);
            lines.insert(r.below(lines.len() + 1), format!("{k} = {v}"));
        }
        // a section header moved, duplicated or made an array of tables
        7 => {
            let h = *r.pick(&[
                "[cluster]",
                "[topology]",
                "[fabric]",
                "[workload]",
                "[simulation]",
                "[[faults]]",
                "[workload.model]",
                "[workload.parallel]",
                "[fabric.dcqcn]",
                "[[cluster]]",
                "[nonsense]",
                "[workload.extra_flows]",
            ]);
            lines.insert(r.below(lines.len() + 1), h.to_string());
        }
        // random bytes inside a line
        8 => {
            let l = &mut lines[i];
            let at = (0..=l.len())
                .filter(|&k| l.is_char_boundary(k))
                .nth(r.below(l.len() + 1))
                .unwrap_or(0);
            let junk = *r.pick(&[
                "\"", "=", "[", "]", "{", "\\", "\u{0}", "\u{7f}", "é", "#", "'''", "\n",
            ]);
            l.insert_str(at, junk);
        }
        // truncate the text at a random line, inside it
        _ => {
            lines.truncate(i + 1);
            let l = &mut lines[i];
            let cut = (0..=l.len())
                .filter(|&k| l.is_char_boundary(k))
                .nth(r.below(l.len() + 1))
                .unwrap_or(0);
            l.truncate(cut);
        }
    }
}

/// What a diagnostic must carry; `Err(reason)` if it does not.
fn check_error(e: &config::ConfigError, text: &str) -> Result<(), String> {
    if e.diagnostics.is_empty() {
        return Err("an error with no diagnostic".into());
    }
    let nlines = text.lines().count().max(1) + 1; // a missing final line counts
    for d in &e.diagnostics {
        let s = d.to_string();
        if d.file != FILE {
            return Err(format!("diagnostic names file {:?}: {s}", d.file));
        }
        if d.field.trim().is_empty() || d.found.trim().is_empty() || d.expected.trim().is_empty() {
            return Err(format!("diagnostic with an empty part: {d:?}"));
        }
        if d.line > nlines {
            return Err(format!(
                "line {} of a {}-line text: {s}",
                d.line,
                nlines - 1
            ));
        }
        if d.line > 0 && d.col == 0 {
            return Err(format!("line without column: {s}"));
        }
        if !s.starts_with(&format!("error: {FILE}:")) {
            return Err(format!("rendering does not start with the file: {s}"));
        }
    }
    if e.to_string().trim().is_empty() {
        return Err("empty rendering".into());
    }
    Ok(())
}

/// How one case ended.
enum Outcome {
    /// Parsed and validated (`built`: its topology was built too).
    Parsed { built: bool },
    /// Refused with located diagnostics.
    Located,
    /// A diagnostic or run error that breaks the rules, and why.
    Bad(String),
}

/// Runs `s` at the analytical fidelity: it must succeed or fail with a message
/// that prints no saturated time (2^64 ps = 18446744.074 s; issue 12: times
/// never saturate).
fn run_analytical(s: &config::Scenario) -> Result<(), String> {
    let opts = fabricsim::run::RunOptions {
        fidelity: Some(Fidelity::Analytical),
        ..Default::default()
    };
    match fabricsim::run::run(s, &opts) {
        Ok(_) => Ok(()),
        Err(e) => {
            let m = e.to_string();
            if m.trim().is_empty() || m.contains("18446744") {
                Err(format!("analytical run: {m:?}"))
            } else {
                Ok(())
            }
        }
    }
}

#[test]
fn mutated_examples_parse_or_fail_with_located_diagnostics() {
    let cases: u64 = std::env::var("FABRICSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let seed: u64 = std::env::var("FABRICSIM_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    // FABRICSIM_FUZZ_RUN=1 also runs every parsed scenario of at most 64 GPUs at
    // the analytical fidelity (~0.1 s each, so not in CI's budget)
    let run_too = std::env::var("FABRICSIM_FUZZ_RUN").is_ok_and(|v| v == "1");
    let ex = examples();
    let kv = key_values(&ex);
    let mut r = Rng(seed);
    let t0 = Instant::now();
    let (mut ok, mut err, mut built) = (0u64, 0u64, 0u64);
    let mut failures: Vec<String> = Vec::new();
    // keep the default hook's backtrace noise out of the output; panics are
    // collected and reported below with the input that caused them
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    for case in 0..cases {
        let (name, text) = r.pick(&ex);
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        for _ in 0..1 + r.below(4) {
            mutate(&mut lines, &mut r, &kv);
        }
        let text = lines.join("\n");
        let res = panic::catch_unwind(AssertUnwindSafe(|| {
            match config::parse(FILE, &text) {
                Ok(s) => {
                    let small = s.num_gpus() <= 256;
                    // what `validate` does with a parsed scenario (it plans the run:
                    // builds the topology), at every fidelity, on the small ones
                    for f in [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet] {
                        if !small {
                            break;
                        }
                        if let Ok(ignored) = fabricsim::run::ignored_settings(&s, f) {
                            for ig in ignored {
                                assert!(!ig.key.is_empty() && !ig.reason.is_empty());
                            }
                        }
                    }
                    if small {
                        s.build_topology()
                            .unwrap_or_else(|e| panic!("a validated scenario's topology: {e}"));
                    }
                    if run_too && s.num_gpus() <= 64 {
                        if let Err(why) = run_analytical(&s) {
                            return Outcome::Bad(why);
                        }
                    }
                    Outcome::Parsed { built: small }
                }
                Err(e) => match check_error(&e, &text) {
                    Ok(()) => Outcome::Located,
                    Err(why) => Outcome::Bad(why),
                },
            }
        }));
        match res {
            Ok(Outcome::Parsed { built: b }) => {
                ok += 1;
                built += b as u64;
            }
            Ok(Outcome::Located) => err += 1,
            Ok(Outcome::Bad(why)) => failures.push(format!(
                "case {case} (from {name}): {why}\n--- text ---\n{text}\n"
            )),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!(
                    "case {case} (from {name}): PANIC {msg}\n--- text ---\n{text}\n"
                ))
            }
        }
    }
    panic::set_hook(hook);
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "fuzz: {cases} cases (seed {seed:#x}) in {secs:.1} s: {ok} parsed ({built} topologies built), {err} located errors, {} failures",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // the mutations must reach both sides of the validator, or the target is blind
    assert!(ok > cases / 20 && err > cases / 5, "ok {ok}, err {err}");
}

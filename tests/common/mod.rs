//! Fixtures the integration tests share (`mod common;` in a test file): the
//! shipped examples, and a scenario text run as the CLI runs it.

// each test binary compiles this module and uses its own subset of it
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use fabricsim::config::{self, Fidelity, Scenario};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

/// Path of a shipped example, `examples/<name>`.
pub fn example_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// Text of a shipped example, `examples/<name>`.
pub fn example(name: &str) -> String {
    let p = example_path(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A scenario text parsed as if read from `file` (which names it in errors).
pub fn parse(file: &str, text: &str) -> Scenario {
    config::parse(file, text).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario text with `opts`.
pub fn run_with(file: &str, text: &str, opts: &RunOptions) -> Report {
    run(&parse(file, text), opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario text at the packet level with everything a law's test
/// reads: per-link counters, sampled series (`detail`) and per-flow records.
pub fn run_packet(file: &str, text: &str) -> Report {
    run_with(
        file,
        text,
        &RunOptions {
            fidelity: Some(Fidelity::Packet),
            collect_links: true,
            detail: true,
            flow_records: true,
            ..RunOptions::default()
        },
    )
}

//! Wall time to simulate one training step of the `llama2-70b` preset (Llama 2 70B,
//! TP=8 PP=4 DP=16 on 512 H100s, 64 micro-batches) at the analytical and flow
//! fidelities.
//!
//! `cargo bench --bench training` runs each case in its own process (peak memory is
//! per case) and prints wall time (DAG generation + run), DAG events, peak RSS and
//! the simulated step. `cargo bench --bench training -- CASE` runs one case:
//! `ana-one`, `flow-one` (one data-parallel replica built, `replicas = "one"`),
//! `ana-all`, `flow-all` (all 512 GPUs' tasks).

use std::process::Command;
use std::time::Instant;

use fabricsim::config;
use fabricsim::run::{run, RunOptions};

fn scenario(fidelity: &str, replicas: &str) -> String {
    format!(
        r#"name = "llama2-70b step"
[cluster]
preset = "dgx-h100-node"
nodes = 64
[topology]
kind = "rail_optimized"
radix = 64
[fabric]
preset = "ib-ndr-400"
[workload]
kind = "training"
preset = "llama2-70b"
[workload.parallel]
replicas = "{replicas}"
[simulation]
fidelity = "{fidelity}"
"#
    )
}

use fabricsim::metrics::peak_rss_mib;

fn run_case(case: &str) {
    let (fid, rep) = match case {
        "ana-one" => ("analytical", "one"),
        "flow-one" => ("flow", "one"),
        "ana-all" => ("analytical", "all"),
        "flow-all" => ("flow", "all"),
        other => {
            eprintln!("unknown case {other}; cases: ana-one flow-one ana-all flow-all");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    let s = config::parse(case, &scenario(fid, rep)).unwrap_or_else(|e| panic!("{e}"));
    let r = run(&s, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let wall = t.elapsed().as_secs_f64();
    let tr = r.training.expect("a training section");
    println!(
        "{case:<9} llama2-70b, 512 GPUs, {fid}, replicas = {rep} ({} GPUs built)\n          wall {wall:.2} s, {} events, peak RSS {:.0} MiB; step {:.3} s, exposed comm {:.3} s, MFU {:.1}%",
        tr.gpus_simulated,
        r.sim.events,
        peak_rss_mib(),
        tr.step_time_s,
        tr.exposed_comm_s,
        100.0 * tr.mfu
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(case) = args.first() {
        run_case(case);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    for case in ["ana-one", "flow-one", "ana-all", "flow-all"] {
        let status = Command::new(&exe).arg(case).status().expect("spawn case");
        if !status.success() {
            eprintln!("case {case} failed");
        }
    }
}

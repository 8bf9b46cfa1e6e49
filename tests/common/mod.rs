//! Fixtures the integration tests share (`mod common;` in a test file): the
//! shipped examples, and a scenario text run as the CLI runs it.

// each test binary compiles this module and uses its own subset of it
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use fabricsim::config::{self, Fidelity, Scenario};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::{
    build, ClusterSpec, FabricLinkSpec, NicOverride, Topology, TopologySpec,
};
use fabricsim::units::{Rate, SimTime};

/// `hosts` hosts of one GPU and one NIC on one switch: `rate` host links of
/// `link_ns` ns, a switch pipeline of `switch_ns` ns, PCIe at 512 Gb/s and
/// 10 ns (NVLink, unused with one GPU per host, at 3,600 Gb/s and 10 ns).
pub fn one_switch(hosts: u32, rate: Rate, link_ns: u64, switch_ns: u64) -> Topology {
    one_switch_with(hosts, rate, link_ns, switch_ns, Vec::new())
}

/// [`one_switch`] with some hosts' NICs at their own rate.
pub fn one_switch_with(
    hosts: u32,
    rate: Rate,
    link_ns: u64,
    switch_ns: u64,
    nic_overrides: Vec<NicOverride>,
) -> Topology {
    let cluster = ClusterSpec {
        hosts,
        gpus_per_host: 1,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(10),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(10),
    };
    let fabric = FabricLinkSpec {
        link_rate: rate,
        link_latency: SimTime::from_ns(link_ns),
        switch_latency: SimTime::from_ns(switch_ns),
        nic_overrides,
        ..Default::default()
    };
    build(&cluster, &fabric, &TopologySpec::SingleSwitch).unwrap()
}

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
    run_with(file, text, &packet_options())
}

/// The options of [`run_packet`].
pub fn packet_options() -> RunOptions {
    RunOptions {
        fidelity: Some(Fidelity::Packet),
        collect_links: true,
        detail: true,
        flow_records: true,
        ..RunOptions::default()
    }
}

/// A report as JSON without `sim` (wall time, events per second): what two
/// runs of one scenario must agree on.
pub fn json_without_sim(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("sim");
    v
}

/// The examples made for the packet level, and two jobs sharing a
/// leaf-spine (gated releases across jobs), sorted by name.
pub fn packet_examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).ok()?;
            let name = p.file_name()?.to_str()?.to_string();
            (text.contains("fidelity = \"packet\"") || name == "two-jobs-leaf-spine.toml")
                .then_some(name)
        })
        .collect();
    names.sort();
    names
}

/// An incast on one RoCEv2 switch without PFC or ECN, as the delay- and
/// telemetry-based laws' tests run it: `senders` GPUs (one per node) send
/// `bytes` each to GPU 0, 4 KiB MTU with 78 B of RoCEv2 framing, 500 ns
/// switch latency. The law's test picks the rate, link latency, per-port
/// `buffer`, `cc`, sample interval, and any `extra` `[fabric]` lines.
pub struct RoceIncast<'a> {
    /// `name` of the scenario.
    pub name: &'a str,
    /// `fabric.cc`.
    pub cc: &'a str,
    /// Sending GPUs.
    pub senders: u32,
    /// `fabric.link_rate`, e.g. "100Gbps".
    pub rate: &'a str,
    /// `fabric.link_latency`.
    pub link_latency: &'a str,
    /// `fabric.buffer` (per port).
    pub buffer: &'a str,
    /// Bytes per sender.
    pub bytes: &'a str,
    /// `simulation.sample_interval`.
    pub sample_interval: &'a str,
    /// Lines appended to `[fabric]` (sub-tables included).
    pub extra: &'a str,
}

impl RoceIncast<'_> {
    /// The scenario text.
    pub fn text(&self) -> String {
        format!(
            r#"
name = "{name}"
[cluster]
nodes = {nodes}
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "single_switch"
[fabric]
kind = "roce"
link_rate = "{rate}"
mtu = "4KiB"
header_bytes = 78
link_latency = "{latency}"
switch_latency = "500ns"
buffer = "{buffer}"
pfc = false
ecn = false
cc = "{cc}"
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
sample_interval = "{sample}"
"#,
            name = self.name,
            nodes = self.senders + 1,
            rate = self.rate,
            latency = self.link_latency,
            buffer = self.buffer,
            cc = self.cc,
            extra = self.extra,
            senders = self.senders,
            bytes = self.bytes,
            sample = self.sample_interval,
        )
    }
}

//! The hostile corpus of issue 12: thousands of bad, absurd or unusual inputs,
//! each run through the real binary under a memory cap (`prlimit --as`, 2 GiB)
//! and a time limit (20 s, as a hang detector, not a speed test). Every case
//! must end with exit code 0 (ok), 1 (the run failed), 2 (bad input) or 3 (PFC
//! deadlock), with a message on stderr when it fails, and never a panic, an
//! abort ("memory allocation failed" is SIGABRT) or a hang.
//!
//! Cases are generated: a table of mutations (huge, negative, zero, NaN, ±inf,
//! wrong-type values) applied to every numeric key of the schema on a shipped
//! example that uses it, the same mutations on two small scenarios that are
//! also *run*, and a list of whole-file and command-line cases (empty file,
//! binary garbage, deep nesting, `/dev/zero` paths, the issue's aborts, full
//! disks). The test prints the counts per exit code;
//! `FABRICSIM_HOSTILE_VERBOSE=1` also prints each case's first stderr line.

mod common;
use common::example;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");
/// Address-space cap of every child: the issue's "peak memory under 2 GiB".
const MEMORY_CAP: &str = "--as=2147483648";
/// A case running longer than this has hung.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Values written in place of a key's value, as TOML source.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "\"abc\"",
    "true",
    "[1, 2]",
    "{ a = 1 }",
    "\"1e30GiB\"",
    "\"-5us\"",
    "\"1e19\"",
    "\"1e6s\"",
    "\"0\"",
    "\"\"",
];

/// (section, numeric or quantity keys, the example that uses them).
const KEYS: &[(&str, &[&str], &str)] = &[
    (
        "cluster",
        &[
            "nodes",
            "gpus_per_node",
            "nics_per_node",
            "nvlink_bandwidth",
            "nvlink_latency",
            "pcie_bandwidth",
            "pcie_latency",
            "host_copy_bandwidth",
            "host_copy_latency",
            "nvlink_efficiency",
        ],
        "allreduce-leaf-spine.toml",
    ),
    (
        "topology",
        &["radix", "oversubscription"],
        "allreduce-leaf-spine.toml",
    ),
    (
        "topology",
        &["k", "planes", "dual_tor"],
        "permutation-fat-tree.toml",
    ),
    (
        "topology",
        &["planes", "dual_tor"],
        "allreduce-leaf-spine.toml",
    ),
    (
        "topology",
        &["radix", "spine_radix", "planes"],
        "hierarchical-rail.toml",
    ),
    (
        "topology",
        &[
            "groups",
            "routers_per_group",
            "hosts_per_router",
            "global_links_per_router",
        ],
        "dragonfly-alltoall.toml",
    ),
    (
        "fabric",
        &[
            "link_rate",
            "mtu",
            "header_bytes",
            "link_latency",
            "switch_latency",
            "nic_efficiency",
            "qps_per_connection",
            "sharp_groups",
        ],
        "allreduce-infiniband-sharp.toml",
    ),
    (
        "fabric",
        &[
            "buffer",
            "shared_buffer",
            "shared_buffer_alpha",
            "virtual_lanes",
            "tcp_packet_overhead",
            "tcp_jitter",
            "tcp_tso_bytes",
            "window",
            "ack_every",
            "rto",
            "rto_low",
            "tcp_min_rto",
            "tcp_max_rto",
            "tcp_initial_window",
            "tcp_delayed_ack",
            "flowlet_gap",
            "pfc_xoff",
            "pfc_xon",
            "pfc_headroom",
            "pfc_pause_quanta",
            "pfc_alpha",
            "pfc_headroom_pool",
            "pfc_watchdog",
            "pfc_watchdog_restore",
            "ecn_kmin",
            "ecn_kmax",
            "ecn_pmax",
            "dctcp_g",
        ],
        "incast-roce-pfc-dcqcn.toml",
    ),
    (
        "fabric.swift",
        &[
            "queue_target",
            "ai",
            "beta",
            "max_mdf",
            "fs_range",
            "min_cwnd",
        ],
        "incast-roce-swift.toml",
    ),
    (
        "fabric.classes",
        &[
            "name", "priority", "weight", "pfc", "ecn_kmin", "ecn_kmax", "ecn_pmax",
        ],
        "traffic-classes-roce.toml",
    ),
    (
        "fabric",
        &["ack_class", "cnp_class", "virtual_lanes"],
        "traffic-classes-roce.toml",
    ),
    ("workload", &["class"], "traffic-classes-roce.toml"),
    (
        "fabric.hpcc",
        &["eta", "max_stage", "w_ai", "base_rtt"],
        "incast-roce-hpcc.toml",
    ),
    (
        "fabric.timely",
        &[
            "t_low",
            "t_high",
            "min_rtt",
            "alpha",
            "beta",
            "delta",
            "hai_threshold",
            "seg_bytes",
        ],
        "incast-roce-timely.toml",
    ),
    (
        "fabric.ib_cc",
        &[
            "threshold",
            "marking_rate",
            "packet_size",
            "ccti_increase",
            "ccti_limit",
            "ccti_min",
            "ccti_timer",
        ],
        "incast-infiniband-cc.toml",
    ),
    (
        "fabric.dcqcn",
        &[
            "g",
            "alpha_interval",
            "rate_increase_interval",
            "byte_counter",
            "fast_recovery_steps",
            "rate_ai",
            "rate_hai",
            "min_rate",
            "cnp_interval",
            "initial_alpha",
        ],
        "incast-roce-pfc-dcqcn.toml",
    ),
    (
        "workload",
        &[
            "min_bytes",
            "max_bytes",
            "step_factor",
            "chunk",
            "root",
            "channels",
            "step_latency",
            "nvlink_step_latency",
        ],
        "allreduce-leaf-spine.toml",
    ),
    ("workload", &["sizes"], "hierarchical-rail.toml"),
    (
        "workload",
        &["alltoall_skew"],
        "alltoall-oversubscribed.toml",
    ),
    ("workload", &["traces", "algorithm"], "training-chakra.toml"),
    (
        "workload",
        &["bytes", "senders", "receiver"],
        "incast-infiniband.toml",
    ),
    (
        "workload.model",
        &[
            "layers",
            "hidden",
            "ffn",
            "heads",
            "kv_heads",
            "vocab",
            "seq_len",
            "global_batch",
            "micro_batch",
        ],
        "training-llama2-7b.toml",
    ),
    (
        "workload.model",
        &["experts", "top_k", "moe_every", "expert_skew"],
        "training-mixtral-moe.toml",
    ),
    (
        "workload.parallel",
        &[
            "data",
            "tensor",
            "pipeline",
            "expert",
            "zero",
            "bucket",
            "gradient_compression",
            "step_latency",
            "nvlink_step_latency",
        ],
        "training-llama2-7b.toml",
    ),
    (
        "workload.gpu",
        &[
            "peak_tflops_bf16",
            "peak_tflops_fp16",
            "peak_tflops_fp8",
            "peak_tflops_fp32",
            "efficiency",
            "hbm_bandwidth",
        ],
        "training-llama2-7b.toml",
    ),
    (
        "workload.inference",
        &[
            "requests",
            "prompt_tokens",
            "output_tokens",
            "output_tokens_max",
        ],
        "inference-llama2-70b.toml",
    ),
    (
        "faults",
        &[
            "at",
            "gpu",
            "factor",
            "nic",
            "link",
            "switch",
            "rate",
            "bit_error_rate",
        ],
        "training-faults.toml",
    ),
    (
        "jobs",
        &["nodes", "node_list", "start"],
        "two-jobs-leaf-spine.toml",
    ),
    (
        "jobs.workload",
        &["sizes", "chunk", "channels", "step_latency"],
        "two-jobs-leaf-spine.toml",
    ),
    (
        "simulation",
        &[
            "seed",
            "sample_interval",
            "time_limit",
            "deadlock_timeout",
            "max_memory",
            "max_events",
        ],
        "incast-infiniband.toml",
    ),
];

/// A small collective scenario the corpus also runs (analytical and flow).
const MINI_FLOW: &str = r#"name = "mini"
[cluster]
nodes = 4
gpus_per_node = 2
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "leaf_spine"
radix = 4
[fabric]
kind = "infiniband"
link_rate = "400Gbps"
[workload]
kind = "collective"
op = "allreduce"
min_bytes = "64KiB"
max_bytes = "1MiB"
step_factor = 4
[simulation]
fidelity = "flow"
"#;

/// A small packet-level incast the corpus also runs.
const MINI_PACKET: &str = r#"name = "mini-packet"
[cluster]
nodes = 5
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "single_switch"
[fabric]
kind = "roce"
link_rate = "100Gbps"
buffer = "64KiB"
[workload]
kind = "traffic"
pattern = "incast"
senders = 4
bytes = "64KiB"
[simulation]
fidelity = "packet"
max_events = 5e6
time_limit = "10ms"
"#;

/// A random-traffic scenario (CDF, load, duration).
const MINI_RANDOM: &str = r#"[cluster]
nodes = 4
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "single_switch"
[fabric]
preset = "ib-ndr-400"
[workload]
kind = "traffic"
pattern = "random"
load = 0.3
duration = "20us"
[simulation]
fidelity = "flow"
"#;

/// One case: the scenario text (written to `case-N.toml`, named by `{}` in the
/// arguments) and the command line.
struct Case {
    name: String,
    text: Option<Vec<u8>>,
    args: Vec<String>,
    /// Standard output goes to /dev/full.
    stdout_full: bool,
}

impl Case {
    fn file(name: impl Into<String>, text: impl Into<Vec<u8>>, args: &[&str]) -> Case {
        Case {
            name: name.into(),
            text: Some(text.into()),
            args: args.iter().map(|s| s.to_string()).collect(),
            stdout_full: false,
        }
    }

    fn cli(name: impl Into<String>, args: &[&str]) -> Case {
        Case {
            name: name.into(),
            text: None,
            args: args.iter().map(|s| s.to_string()).collect(),
            stdout_full: false,
        }
    }
}

/// Sets `key = value` in `[section]` of `text` (replacing the key's line, or
/// inserting it under the section header, or appending the section). For
/// `faults` it edits the first `[[faults]]` table.
fn set_key(text: &str, section: &str, key: &str, value: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut header_at: Option<usize> = None;
    let mut done = false;
    let mut seen_faults = 0;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            let name = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            if name == "faults" {
                seen_faults += 1;
            }
            current = if name == "faults" && seen_faults > 1 {
                "faults#later".into()
            } else {
                name
            };
            if current == section && header_at.is_none() {
                header_at = Some(out.len());
            }
        } else if !done && current == section {
            let k = t.split('=').next().unwrap_or("").trim();
            if k == key && t.contains('=') {
                out.push(format!("{key} = {value}"));
                done = true;
                continue;
            }
        }
        out.push(line.to_string());
    }
    if !done {
        match header_at {
            Some(i) => out.insert(i + 1, format!("{key} = {value}")),
            None => {
                out.push(format!("[{section}]"));
                out.push(format!("{key} = {value}"));
            }
        }
    }
    out.join("\n") + "\n"
}

fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    // 1. every numeric key of the schema, every hostile value, validated
    for (section, keys, file) in KEYS {
        let base = example(file);
        for key in *keys {
            for v in VALUES {
                cases.push(Case::file(
                    format!("{file} {section}.{key} = {v}"),
                    set_key(&base, section, key, v),
                    &["validate", "{}"],
                ));
            }
        }
    }
    // 2. the same on small scenarios that are also run
    let flow_keys: &[(&str, &[&str])] = &[
        (
            "cluster",
            &[
                "nodes",
                "gpus_per_node",
                "nics_per_node",
                "nvlink_bandwidth",
                "nvlink_latency",
            ],
        ),
        ("topology", &["radix"]),
        (
            "fabric",
            &["link_rate", "mtu", "header_bytes", "link_latency"],
        ),
        (
            "workload",
            &["min_bytes", "max_bytes", "step_factor", "chunk", "channels"],
        ),
    ];
    for (section, keys) in flow_keys {
        for key in *keys {
            for v in VALUES {
                let text = set_key(MINI_FLOW, section, key, v);
                cases.push(Case::file(
                    format!("mini {section}.{key} = {v} (run, analytical)"),
                    text.clone(),
                    &["run", "{}", "--fidelity", "analytical", "-q"],
                ));
                cases.push(Case::file(
                    format!("mini {section}.{key} = {v} (run, flow)"),
                    text,
                    &["run", "{}", "-q", "--json"],
                ));
            }
        }
    }
    let packet_keys: &[(&str, &[&str])] = &[
        (
            "fabric",
            &[
                "buffer",
                "window",
                "ack_every",
                "rto",
                "mtu",
                "ecn_kmin",
                "pfc_xoff",
            ],
        ),
        ("workload", &["bytes", "senders"]),
        (
            "simulation",
            &["time_limit", "deadlock_timeout", "max_events"],
        ),
    ];
    for (section, keys) in packet_keys {
        for key in *keys {
            for v in VALUES {
                cases.push(Case::file(
                    format!("mini-packet {section}.{key} = {v} (run)"),
                    set_key(MINI_PACKET, section, key, v),
                    &["run", "{}", "-q"],
                ));
            }
        }
    }
    for (key, values) in [
        ("load", &["0", "1e-300", "1", "2", "nan", "\"x\""][..]),
        (
            "duration",
            &["\"1e6s\"", "\"1e-30s\"", "\"1ms\"", "0", "\"1e300s\""][..],
        ),
        (
            "cdf",
            &[
                "\"/dev/zero\"",
                "\"/nonexistent\"",
                "\"/\"",
                "\"fb_hadoop\"",
                "\"web_search\"",
                "3",
            ][..],
        ),
    ] {
        for v in values {
            cases.push(Case::file(
                format!("random workload.{key} = {v} (run)"),
                set_key(MINI_RANDOM, "workload", key, v),
                &["run", "{}", "-q"],
            ));
        }
    }
    // 3. the issue's aborts, at their own fidelity
    let ls = example("allreduce-leaf-spine.toml");
    let incast = example("incast-infiniband.toml");
    for (name, text) in [
        (
            "nodes = 1e9",
            set_key(&ls, "cluster", "nodes", "1000000000"),
        ),
        (
            "gpus_per_node = 100000",
            set_key(
                &set_key(&ls, "cluster", "gpus_per_node", "100000"),
                "cluster",
                "nics_per_node",
                "1",
            ),
        ),
        ("chunk = 1B", set_key(&ls, "workload", "chunk", "\"1B\"")),
        (
            "sizes = [1e19]",
            set_key(&ls, "workload", "max_bytes", "\"1e19\""),
        ),
        (
            "duration = 1e6s",
            set_key(MINI_RANDOM, "workload", "duration", "\"1e6s\""),
        ),
        (
            "1 TiB packet incast",
            set_key(&incast, "workload", "bytes", "\"1TiB\""),
        ),
        (
            "fat-tree k = 100000",
            set_key(
                &example("permutation-fat-tree.toml"),
                "topology",
                "k",
                "100000",
            ),
        ),
        (
            "leaf-spine radix = 1e9",
            set_key(&ls, "topology", "radix", "1000000000"),
        ),
    ] {
        for cmd in ["validate", "run"] {
            cases.push(Case::file(
                format!("issue: {name} ({cmd})"),
                text.clone(),
                &[cmd, "{}", "-q"][..if cmd == "run" { 3 } else { 2 }],
            ));
        }
    }
    // 4. whole files
    let deep_array = format!("x = {}1{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let deep_table = format!("x = {}1{}\n", "{a=".repeat(50_000), "}".repeat(50_000));
    let deep_keys = format!("{} = 1\n", vec!["a"; 10_000].join("."));
    let mut garbage = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..65536 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        garbage.push((x >> 16) as u8);
    }
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("empty file", Vec::new()),
        ("only a comment", b"# nothing\n".to_vec()),
        ("binary garbage", garbage),
        ("invalid UTF-8", b"name = \"\xff\xfe\"\n".to_vec()),
        ("NUL bytes", b"[cluster]\0nodes = 4\n".to_vec()),
        ("deeply nested arrays", deep_array.into_bytes()),
        ("deeply nested inline tables", deep_table.into_bytes()),
        ("10,000 dotted keys", deep_keys.into_bytes()),
        (
            "a 10 MB line",
            format!("name = \"{}\"\n", "a".repeat(10 << 20)).into_bytes(),
        ),
        (
            "unknown section",
            format!("{ls}\n[bogus]\nx = 1\n").into_bytes(),
        ),
        (
            "unknown key",
            set_key(&ls, "cluster", "nodez", "4").into_bytes(),
        ),
        (
            "missing cluster",
            strip_section(&ls, "cluster").into_bytes(),
        ),
        (
            "missing topology",
            strip_section(&ls, "topology").into_bytes(),
        ),
        ("missing fabric", strip_section(&ls, "fabric").into_bytes()),
        (
            "missing workload",
            strip_section(&ls, "workload").into_bytes(),
        ),
        ("cluster is a string", b"cluster = \"big\"\n".to_vec()),
        (
            "duplicate key",
            format!("{ls}\n[cluster]\nnodes = 4\n").into_bytes(),
        ),
        (
            "2,000 sizes",
            set_key(
                &ls,
                "workload",
                "sizes",
                &format!(
                    "[{}]",
                    (1..=2_000)
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            )
            .replace("min_bytes", "# min_bytes")
            .replace("max_bytes", "# max_bytes")
            .replace("step_factor", "# step_factor")
            .into_bytes(),
        ),
        (
            "100,000 extra flows",
            set_key(
                &incast,
                "workload",
                "extra_flows",
                &format!(
                    "[{}]",
                    vec!["{ src = 1, dst = 0, bytes = 1 }"; 100_000].join(",")
                ),
            )
            .into_bytes(),
        ),
        ("50,000 flows in one dependency chain", {
            let mut t = String::from(
                    "[cluster]\nnodes = 4\ngpus_per_node = 1\nnics_per_node = 1\nnvlink_bandwidth = \"450GB/s\"\n[topology]\nkind = \"leaf_spine\"\nradix = 4\n[fabric]\npreset = \"ib-ndr-400\"\n[workload]\nkind = \"flows\"\n",
                );
            for i in 0..50_000u32 {
                let after = if i > 0 {
                    format!("after = [{}]\n", i - 1)
                } else {
                    String::new()
                };
                t.push_str(&format!(
                    "[[workload.flows]]\nid = {i}\nsrc = {}\ndst = {}\nbytes = 64\n{after}",
                    i % 4,
                    (i + 1) % 4
                ));
            }
            t.into_bytes()
        }),
        ("a dependency cycle through 50,000 flows", {
            let mut t = String::from(
                    "[cluster]\nnodes = 4\ngpus_per_node = 1\nnics_per_node = 1\nnvlink_bandwidth = \"450GB/s\"\n[topology]\nkind = \"leaf_spine\"\nradix = 4\n[fabric]\npreset = \"ib-ndr-400\"\n[workload]\nkind = \"flows\"\n",
                );
            for i in 0..50_000u32 {
                t.push_str(&format!(
                    "[[workload.flows]]\nid = {i}\nsrc = 0\ndst = 1\nbytes = 64\nafter = [{}]\n",
                    (i + 1) % 50_000
                ));
            }
            t.into_bytes()
        }),
        (
            "Chakra traces that are /dev/zero (a 64 MiB cap, then a located error)",
            format!(
                "{}\n[workload]\nkind = \"chakra\"\ntraces = [\"/dev/zero\"]\n",
                "[cluster]\nnodes = 1\ngpus_per_node = 1\nnics_per_node = 1\n[topology]\nkind = \"leaf_spine\"\nradix = 4\n[fabric]\npreset = \"ib-ndr-400\""
            )
            .into_bytes(),
        ),
        (
            "Chakra traces in a directory of no .et file",
            "[cluster]\nnodes = 1\ngpus_per_node = 1\nnics_per_node = 1\n[topology]\nkind = \"leaf_spine\"\nradix = 4\n[fabric]\npreset = \"ib-ndr-400\"\n[workload]\nkind = \"chakra\"\ntraces = \"/proc/self\"\n"
                .to_string()
                .into_bytes(),
        ),
        (
            "20,000 faults",
            "[[faults]]\nkind = \"slow_gpu\"\ngpu = 0\nfactor = 2\n"
                .repeat(20_000)
                .into_bytes(),
        ),
    ];
    for (name, text) in files {
        cases.push(Case::file(name, text.clone(), &["validate", "{}"]));
        cases.push(Case::file(
            format!("{name} (run)"),
            text,
            &["run", "{}", "-q"],
        ));
    }
    // 5. paths and command lines
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let small = ex.join("incast-infiniband.toml").display().to_string();
    let small = small.as_str();
    let nccl = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("validation/h100-2x8-gcp-a3mega-all_reduce.txt")
        .display()
        .to_string();
    let nccl = nccl.as_str();
    let inference = ex.join("inference-llama2-70b.toml").display().to_string();
    let training = ex.join("training-tiny-8gpu.toml").display().to_string();
    let out_dir =
        std::env::temp_dir().join(format!("fabricsim-hostile-chakra-{}", std::process::id()));
    let out_dir = out_dir.display().to_string();
    for args in [
        &["export-chakra", inference.as_str(), "-o", out_dir.as_str()][..],
        &["export-chakra", training.as_str(), "-o", "/dev/full/x"],
        &[
            "export-chakra",
            training.as_str(),
            "-o",
            out_dir.as_str(),
            "--prefix",
            "a/b",
        ],
        &["export-chakra", "/dev/zero", "-o", out_dir.as_str()],
        &["validate", "/dev/zero"],
        &["run", "/dev/zero"],
        &["validate", "/"],
        &["validate", "/nonexistent/scenario.toml"],
        &["check", "/dev/zero"],
        &["check", "/"],
        &["check", nccl, "--scenario", "/dev/zero"],
        &[
            "calibrate",
            "/dev/zero",
            "--param",
            "fabric.link_latency=1us..2us",
        ],
        &["collective", "allreduce", "--scenario", "/dev/zero"],
        &["compare", small, "/dev/zero"],
        &["sweep", "/dev/zero", "--set", "cluster.nodes=1,2"],
        &[
            "sweep",
            small,
            "--set",
            "fabric.link_latency=100ns,200ns",
            "--jobs",
            "100000",
            "-q",
        ],
        &[
            "sweep",
            small,
            "--set",
            "cluster.nodes=1,2,3",
            "--set",
            "fabric.link_latency=1ns,2ns,3ns",
            "--jobs",
            "0",
            "-q",
        ],
        &["sweep", small, "--set", "cluster.nodes=999999999999", "-q"],
        &["sweep", small, "--set", "nonsense"],
        &["run", small, "--report", "/nonexistent/dir/r.html", "-q"],
        &["run", small, "--out", "/dev/full", "-q"],
        &["run", small, "--report", "/dev/full", "-q"],
        &["run", small, "--seed", "18446744073709551615", "-q"],
        &["run", small, "--fidelity", "quantum"],
        &[
            "collective",
            "allreduce",
            "-b",
            "1",
            "-e",
            "16E",
            "--fidelity",
            "analytical",
            "-q",
        ],
        &[
            "collective",
            "allreduce",
            "-b",
            "1",
            "-e",
            "1G",
            "-f",
            "18446744073709551615",
            "-q",
        ],
        &["collective", "allreduce", "--nodes", "4294967295", "-q"],
        &["collective", "allreduce", "--channels", "4294967295", "-q"],
        &["collective", "nonsense", "-q"],
        &[
            "collective",
            "allreduce",
            "-b",
            "1M",
            "-e",
            "1M",
            "--algo",
            "ring",
            "--protocol",
            "x",
            "-q",
        ],
        &["check", nccl, "--tolerance", "nan"],
        &["check", nccl, "--nodes", "0"],
        &[
            "check",
            nccl,
            "--set",
            "cluster.nodes=100000000",
            "--fidelity",
            "analytical",
        ],
        &[
            "calibrate",
            nccl,
            "--param",
            "fabric.link_latency=1e300s..1e301s",
            "--fidelity",
            "analytical",
        ],
        &[
            "calibrate",
            nccl,
            "--param",
            "fabric.link_latency=2us..1us",
            "--fidelity",
            "analytical",
        ],
        &[
            "calibrate",
            nccl,
            "--param",
            "cluster.nodes=1..1000000000",
            "--fidelity",
            "analytical",
        ],
        &["presets"],
    ] {
        cases.push(Case::cli(args.join(" "), args));
    }
    for args in [
        &["demo", "--fidelity", "analytical"][..],
        &["presets"],
        &["validate", small],
        &["run", small, "--json", "-q"],
        &[
            "sweep",
            small,
            "--set",
            "fabric.link_latency=100ns,200ns",
            "-q",
        ],
        &["check", nccl, "--fidelity", "analytical"],
    ] {
        let mut c = Case::cli(format!("{} > /dev/full", args.join(" ")), args);
        c.stdout_full = true;
        cases.push(c);
    }
    cases
}

/// `text` without `[section]` and its keys.
fn strip_section(text: &str, section: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            skip = t.trim_matches(|c| c == '[' || c == ']') == section;
        }
        if !skip {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// How one case ended.
enum Outcome {
    Exit(i32, String),
    Signal(String),
    Hung,
}

fn run_case(i: usize, case: &Case, dir: &Path) -> Outcome {
    let scenario: PathBuf = dir.join(format!("case-{i}.toml"));
    if let Some(t) = &case.text {
        std::fs::write(&scenario, t).expect("write the case");
    }
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            if a == "{}" {
                scenario.display().to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let err_path = dir.join(format!("case-{i}.err"));
    let stderr = File::create(&err_path).expect("stderr file");
    let stdout = if case.stdout_full {
        Stdio::from(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full"),
        )
    } else {
        Stdio::null()
    };
    let mut cmd = if prlimit_works() {
        let mut c = Command::new("prlimit");
        c.arg(MEMORY_CAP).arg("--").arg(BIN);
        c
    } else {
        Command::new(BIN)
    };
    let mut child = cmd
        .args(&args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn fabricsim");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let err = std::fs::read(&err_path).unwrap_or_default();
    let err = String::from_utf8_lossy(&err[..err.len().min(4000)]).into_owned();
    let _ = std::fs::remove_file(&err_path);
    let _ = std::fs::remove_file(&scenario);
    match status {
        None => Outcome::Hung,
        Some(s) => match s.code() {
            Some(c) => Outcome::Exit(c, err),
            None => Outcome::Signal(format!("{s}: {err}")),
        },
    }
}

fn prlimit_works() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        Command::new("prlimit")
            .args([MEMORY_CAP, "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[test]
fn every_hostile_case_ends_with_a_clear_exit_code() {
    let cases = corpus();
    assert!(cases.len() >= 250, "{} cases", cases.len());
    if !prlimit_works() {
        eprintln!("note: prlimit is not available; running without the 2 GiB cap");
    }
    let dir = std::env::temp_dir().join(format!("fabricsim-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let next = AtomicUsize::new(0);
    let counts: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let outcome = run_case(i, case, &dir);
                let (key, bad) = match &outcome {
                    Outcome::Exit(c @ 0..=3, err) => {
                        let bad = if err.contains("panicked") {
                            Some(format!("panicked: {err}"))
                        } else if *c != 0 && *c != 3 && err.trim().is_empty() {
                            Some("failed without a message".to_string())
                        } else {
                            None
                        };
                        (format!("exit {c}"), bad)
                    }
                    Outcome::Exit(c, err) => (format!("exit {c}"), Some(err.clone())),
                    Outcome::Signal(m) => ("signal".into(), Some(m.clone())),
                    Outcome::Hung => (
                        "hung".into(),
                        Some(format!("still running after {TIME_LIMIT:?}")),
                    ),
                };
                if std::env::var_os("FABRICSIM_HOSTILE_VERBOSE").is_some() {
                    if let Outcome::Exit(c, err) = &outcome {
                        let first = err.lines().next().unwrap_or("");
                        println!(
                            "[{}] exit {c}: {}",
                            case.name,
                            first.chars().take(300).collect::<String>()
                        );
                    }
                }
                *counts.lock().unwrap().entry(key).or_default() += 1;
                if let Some(why) = bad {
                    let why: String = why.chars().take(600).collect();
                    failures.lock().unwrap().push(format!(
                        "[{}] {}: {why}",
                        case.name,
                        case.args.join(" ")
                    ));
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    let counts = counts.into_inner().unwrap();
    println!(
        "hostile corpus: {} cases in {:.1} s: {}",
        cases.len(),
        started.elapsed().as_secs_f64(),
        counts
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} cases ended badly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn set_key_replaces_inserts_and_appends() {
    let t = "[a]\nx = 1\n[b]\ny = 2\n";
    assert_eq!(set_key(t, "a", "x", "5"), "[a]\nx = 5\n[b]\ny = 2\n");
    assert_eq!(set_key(t, "b", "z", "5"), "[a]\nx = 1\n[b]\nz = 5\ny = 2\n");
    assert_eq!(
        set_key(t, "c", "z", "5"),
        "[a]\nx = 1\n[b]\ny = 2\n[c]\nz = 5\n"
    );
}

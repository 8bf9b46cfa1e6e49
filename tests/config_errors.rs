//! Bad scenario files: each gives a diagnostic naming the file, line, column,
//! field, what was found and what is expected — never a panic.

use fabricsim::config::{self, ConfigError, Diagnostic};

const GOOD: &str = r#"name = "t"
[cluster]
preset = "dgx-h100-node"
nodes = 4
[topology]
kind = "leaf_spine"
radix = 16
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "ring"
sizes = ["1MiB", "16MiB"]
[simulation]
fidelity = "flow"
seed = 7
"#;

fn errors(text: &str) -> ConfigError {
    match config::parse("bad.toml", text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

fn one(text: &str) -> Diagnostic {
    let e = errors(text);
    assert_eq!(e.diagnostics.len(), 1, "{e}");
    e.diagnostics[0].clone()
}

fn with(old: &str, new: &str) -> String {
    assert!(GOOD.contains(old), "{old}");
    GOOD.replacen(old, new, 1)
}

#[test]
fn the_reference_scenario_is_valid() {
    let s = config::parse("good.toml", GOOD).unwrap();
    assert_eq!(s.num_gpus(), 32);
    assert_eq!(s.seed(), 7);
}

#[test]
fn unknown_key_names_the_key_and_the_known_ones() {
    let d = one(&with("nodes = 4", "nodes = 4\nnodez = 5"));
    assert_eq!((d.line, d.col), (5, 1), "{d}");
    assert!(d.found.contains("nodez"), "{d}");
    assert!(d.expected.contains("nodes"), "{d}");
    assert_eq!(d.file, "bad.toml");
}

#[test]
fn rate_without_unit_is_refused() {
    let d = one(&with(
        "preset = \"ib-ndr-400\"",
        "preset = \"ib-ndr-400\"\nlink_rate = 400",
    ));
    assert_eq!(d.field, "fabric.link_rate");
    assert_eq!(d.line, 10);
    assert!(d.expected.contains("unit"), "{d}");
}

#[test]
fn zero_bandwidth_is_refused_before_the_run() {
    let d = one(&with(
        "preset = \"ib-ndr-400\"",
        "preset = \"ib-ndr-400\"\nlink_rate = \"0Gbps\"",
    ));
    assert_eq!(d.field, "fabric.link_rate");
    assert_eq!((d.line, d.col), (10, 13));
    assert!(
        d.found.contains("0Gbps") && d.expected.contains("above zero"),
        "{d}"
    );
}

#[test]
fn wrong_unit_names_the_accepted_units() {
    let d = one(&with(
        "nodes = 4",
        "nodes = 4\nnvlink_latency = \"3 parsecs\"",
    ));
    assert_eq!(d.field, "cluster.nvlink_latency");
    assert!(d.expected.contains("ns"), "{d}");
}

#[test]
fn a_window_that_is_neither_a_size_nor_bdp_names_both() {
    // the window takes a size or "bdp" (IRN's BDP-FC); a packet-level
    // fabric key, so the file must run at packet level
    let text = with("seed = 7", "seed = 7").replace("fidelity = \"flow\"", "fidelity = \"packet\"");
    assert!(config::parse(
        "ok.toml",
        &text.replace("[fabric]\n", "[fabric]\nwindow = \"bdp\"\n")
    )
    .is_ok());
    let d = one(&text.replace("[fabric]\n", "[fabric]\nwindow = \"bdpp\"\n"));
    assert_eq!(d.field, "fabric.window");
    assert_eq!(d.found, "\"bdpp\"");
    assert!(
        d.expected.contains("\"bdp\"") && d.expected.contains("64KiB"),
        "{d}"
    );
}

#[test]
fn negative_node_count_is_refused() {
    let d = one(&with("nodes = 4", "nodes = -4"));
    assert_eq!(d.field, "cluster.nodes");
    assert_eq!((d.line, d.col), (4, 9));
    assert_eq!(d.found, "-4");
}

#[test]
fn gpus_not_divisible_by_nics_is_refused() {
    let d = one(&with(
        "nodes = 4",
        "nodes = 4\ngpus_per_node = 8\nnics_per_node = 3",
    ));
    assert_eq!(d.field, "cluster.nics_per_node");
    assert!(d.expected.contains("divides"), "{d}");
}

#[test]
fn topology_too_small_for_the_cluster_is_refused() {
    // 1000 nodes × 8 NICs = 8000 NICs; a 16-port leaf-spine holds 16 leaves × 8 = 128.
    let d = one(&with("nodes = 4", "nodes = 1000"));
    assert_eq!(d.field, "topology.radix");
    assert!(d.expected.contains("at most 128 NICs"), "{d}");
    assert_eq!(d.line, 7);
}

#[test]
fn key_of_another_topology_kind_is_refused() {
    let d = one(&with("radix = 16", "radix = 16\nk = 8"));
    assert_eq!(d.field, "topology.k");
    assert!(d.expected.contains("radix, oversubscription"), "{d}");
}

#[test]
fn unknown_preset_lists_the_presets() {
    let d = one(&with("preset = \"ib-ndr-400\"", "preset = \"ib-ndr-9000\""));
    assert_eq!(d.field, "fabric.preset");
    assert!(
        d.expected.contains("ib-ndr-400") && d.expected.contains("roce-400"),
        "{d}"
    );
}

#[test]
fn algorithm_that_does_not_implement_the_op_is_refused() {
    let d = one(&with("op = \"allreduce\"", "op = \"alltoall\""));
    assert_eq!(d.field, "workload.algorithm");
    assert!(d.expected.contains("direct"), "{d}");
}

#[test]
fn bad_size_in_a_list_points_at_the_element() {
    let d = one(&with(
        "sizes = [\"1MiB\", \"16MiB\"]",
        "sizes = [\"1MiB\", \"16 MegaBytes\"]",
    ));
    assert_eq!(d.field, "workload.sizes.1");
    assert_eq!((d.line, d.col), (13, 18));
}

#[test]
fn wrong_type_names_found_and_expected() {
    let d = one(&with("seed = 7", "seed = \"seven\""));
    assert_eq!(d.field, "simulation.seed");
    assert!(d.found.contains("string"), "{d}");
    // the schema's words, not Rust's (issue 12: no `expected i64`)
    assert!(d.expected.contains("a whole number"), "{d}");
    assert!(d.expected.contains("seed = 4"), "{d}");
    assert!(!d.expected.contains("i64"), "{d}");
}

#[test]
fn every_problem_of_a_file_is_reported_syntax_and_types_included() {
    // four problems on four lines: a type error, a misspelt key, a syntax error
    // and a boolean written as a word; the parser goes on after each
    let text = "[cluster]\npreset = \"dgx-h100-node\"\nnodes = \"four\"\n\
                [fabric]\npreset = \"ib-ndr-400\"\nlink_rat = \"400Gbps\"\nmtu = \n\
                [topology]\nkind = \"single_switch\"\n\
                [workload]\nkind = \"collective\"\nop = \"all_reduce\"\nsizes = [\"1MiB\"]\npxn = \"yes\"\n";
    let err = config::parse("many.toml", text).unwrap_err();
    let at: Vec<(usize, &str)> = err
        .diagnostics
        .iter()
        .map(|d| (d.line, d.field.as_str()))
        .collect();
    assert_eq!(
        at,
        vec![
            (3, "cluster.nodes"),
            (6, "fabric.link_rat"),
            (7, "(syntax)"),
            (14, "workload.pxn"),
        ],
        "{err}"
    );
    let d = &err.diagnostics;
    assert!(d[0].expected.contains("a whole number"), "{}", d[0]);
    assert!(
        d[1].expected.contains("did you mean `link_rate`?"),
        "{}",
        d[1]
    );
    assert!(d[3].expected.contains("true or false"), "{}", d[3]);
}

#[test]
fn toml_syntax_error_is_located() {
    let d = one(&with("radix = 16", "radix = = 16"));
    assert_eq!(d.line, 7);
    assert!(d.col > 0);
}

#[test]
fn unknown_fidelity_is_refused() {
    let d = one(&with("fidelity = \"flow\"", "fidelity = \"quantum\""));
    assert_eq!(d.field, "simulation.fidelity");
    assert!(d.expected.contains("packet"));
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = with("nodes = 4", "nodes = 0").replace("fidelity = \"flow\"", "fidelity = \"x\"");
    let e = errors(&text);
    let fields: Vec<_> = e.diagnostics.iter().map(|d| d.field.as_str()).collect();
    assert!(
        fields.contains(&"cluster.nodes") && fields.contains(&"simulation.fidelity"),
        "{fields:?}"
    );
    let shown = e.to_string();
    assert!(shown.contains("bad.toml:4:9"), "{shown}");
    assert!(shown.contains("2 problems found"), "{shown}");
}

#[test]
fn min_above_max_is_refused() {
    let d = one(&with(
        "sizes = [\"1MiB\", \"16MiB\"]",
        "min_bytes = \"1GiB\"\nmax_bytes = \"1MiB\"",
    ));
    assert_eq!(d.field, "workload.max_bytes");
}

#[test]
fn odd_fat_tree_arity_is_refused() {
    let text = with(
        "kind = \"leaf_spine\"\nradix = 16",
        "kind = \"fat_tree\"\nk = 7",
    );
    let d = one(&text);
    assert_eq!(d.field, "topology.k");
}

#[test]
fn missing_file_is_a_diagnostic() {
    let e = config::load(std::path::Path::new("/nonexistent/scenario.toml")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/scenario.toml"));
}

#[test]
fn cli_exits_2_with_the_diagnostic_on_stderr() {
    let dir = std::env::temp_dir().join(format!("fabricsim-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, with("nodes = 4", "nodes = -4")).unwrap();
    for cmd in ["validate", "run"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricsim"))
            .arg(cmd)
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("bad.toml:4:9") && err.contains("cluster.nodes"),
            "{err}"
        );
    }
}

// ---------------------------------------------------------------- training, inference, faults

const TRAIN: &str = r#"name = "t"
[cluster]
preset = "dgx-h100-node"
nodes = 4
[topology]
kind = "leaf_spine"
radix = 16
[fabric]
preset = "ib-ndr-400"
[workload]
kind = "training"
[workload.model]
layers = 4
hidden = 1024
ffn = 4096
heads = 16
vocab = 1000
seq_len = 512
global_batch = 8
[workload.parallel]
data = 4
tensor = 8
"#;

fn train_with(old: &str, new: &str) -> String {
    assert!(TRAIN.contains(old), "{old}");
    TRAIN.replacen(old, new, 1)
}

#[test]
fn the_reference_training_scenario_is_valid() {
    let s = config::parse("t.toml", TRAIN).unwrap();
    assert_eq!(s.num_gpus(), 32);
    let p = config::parse(
        "p.toml",
        &train_with(
            "[workload.model]\nlayers = 4",
            "preset = \"llama2-7b\"\n[workload.model]\nlayers = 4",
        ),
    )
    .unwrap();
    let config::WorkloadSpec::Training(t) = p.workload() else {
        panic!()
    };
    assert_eq!(t.model.layers, 4); // the file overrides the preset
    assert_eq!(t.model.vocab, 1000);
}

#[test]
fn a_plan_that_does_not_fill_the_cluster_is_located() {
    let d = one(&train_with("data = 4", "data = 2"));
    assert_eq!(d.field, "workload.parallel.data", "{d}");
    assert_eq!(d.line, 21, "{d}");
    assert!(d.expected.contains("32 GPUs"), "{d}");
}

#[test]
fn tensor_degree_must_divide_heads() {
    let d = one(&train_with("heads = 16", "heads = 4"));
    assert_eq!(d.field, "workload.parallel.tensor", "{d}");
    assert!(d.expected.contains("heads"), "{d}");
}

#[test]
fn unknown_model_key_is_named() {
    let d = one(&train_with("ffn = 4096", "ffn = 4096\nfnn = 1"));
    assert!(d.found.contains("fnn"), "{d}");
    assert_eq!(d.line, 16, "{d}");
}

#[test]
fn unknown_model_preset_is_listed() {
    let d = one(&train_with(
        "[workload.model]",
        "preset = \"gpt5\"\n[workload.model]",
    ));
    assert_eq!(d.field, "workload.preset");
    assert!(d.expected.contains("llama2-70b"), "{d}");
}

#[test]
fn global_batch_must_split_into_micro_batches() {
    let d = one(&train_with("global_batch = 8", "global_batch = 6"));
    assert_eq!(d.field, "workload.model.global_batch", "{d}");
    assert_eq!(d.line, 19);
}

#[test]
fn bad_faults_are_located_in_the_array() {
    let text = format!(
        "{TRAIN}[[faults]]\nkind = \"slow_gpu\"\ngpu = 99\nfactor = 2.0\n[[faults]]\nkind = \"meteor\"\n[[faults]]\nkind = \"link_down\"\n"
    );
    let e = errors(&text);
    let fields: Vec<&str> = e.diagnostics.iter().map(|d| d.field.as_str()).collect();
    assert!(fields.contains(&"faults.1.kind"), "{e}");
    assert!(fields.contains(&"faults.2.nic"), "{e}");
    let gpu = e.diagnostics.iter().find(|d| d.field == "faults.0.gpu");
    // the range check needs the built topology, which runs once the rest is valid
    assert!(gpu.is_none() || gpu.is_some_and(|d| d.line == 25), "{e}");
    let d = one(&format!(
        "{TRAIN}[[faults]]\nkind = \"slow_gpu\"\ngpu = 99\nfactor = 2.0\n"
    ));
    assert_eq!(d.field, "faults.0.gpu", "{d}");
    assert_eq!(d.line, 25, "{d}");
    let d = one(&format!(
        "{TRAIN}[[faults]]\nkind = \"slow_gpu\"\ngpu = 1\nfactor = 0.5\n"
    ));
    assert_eq!(d.field, "faults.0.factor", "{d}");
}

#[test]
fn collective_keys_do_not_take_a_model() {
    let d = one(&with(
        "op = \"allreduce\"",
        "op = \"allreduce\"\npreset = \"llama2-7b\"",
    ));
    assert_eq!(d.field, "workload.preset", "{d}");
}

#[test]
fn flowlet_routing_is_named_and_a_zero_gap_is_refused() {
    let d = one(&with(
        "preset = \"ib-ndr-400\"",
        "preset = \"ib-ndr-400\"\nrouting = \"flowlets\"",
    ));
    assert_eq!((d.field.as_str(), d.line), ("fabric.routing", 10), "{d}");
    assert!(d.expected.contains("\"flowlet\""), "{d}");
    let d = one(&with(
        "preset = \"ib-ndr-400\"",
        "preset = \"ib-ndr-400\"\nrouting = \"flowlet\"\nflowlet_gap = \"0us\"",
    ));
    assert_eq!(
        (d.field.as_str(), d.line),
        ("fabric.flowlet_gap", 11),
        "{d}"
    );
    assert!(d.expected.contains("above zero"), "{d}");
    // A gap without flowlet routing is accepted and reported as unused.
    let s = config::parse(
        "ok.toml",
        &with(
            "preset = \"ib-ndr-400\"",
            "preset = \"ib-ndr-400\"\nflowlet_gap = \"10us\"",
        )
        .replace("fidelity = \"flow\"", "fidelity = \"packet\""),
    )
    .unwrap();
    let ignored = fabricsim::run::ignored_settings(&s, s.fidelity()).unwrap();
    assert!(
        ignored
            .iter()
            .any(|i| i.key == "fabric.flowlet_gap" && i.reason.contains("flowlet")),
        "{ignored:?}"
    );
}

#[test]
fn nccl_structure_keys_are_checked_at_their_line() {
    // issue 10's keys: each out-of-range value is one located diagnostic
    for (old, new, field, found) in [
        (
            "sizes = [",
            "channels = 0\nsizes = [",
            "workload.channels",
            "0",
        ),
        (
            "sizes = [",
            "channels = 65\nsizes = [",
            "workload.channels",
            "65",
        ),
        (
            "sizes = [",
            "protocol = \"fast\"\nsizes = [",
            "workload.protocol",
            "\"fast\"",
        ),
        (
            "sizes = [",
            "step_latency = 5\nsizes = [",
            "workload.step_latency",
            "5",
        ),
        (
            "nodes = 4",
            "nodes = 4\nnvlink_efficiency = 1.5",
            "cluster.nvlink_efficiency",
            "1.5",
        ),
        (
            "preset = \"ib-ndr-400\"",
            "preset = \"ib-ndr-400\"\nnic_efficiency = 0",
            "fabric.nic_efficiency",
            "0",
        ),
        (
            "preset = \"ib-ndr-400\"",
            "preset = \"ib-ndr-400\"\nqps_per_connection = 0",
            "fabric.qps_per_connection",
            "0",
        ),
    ] {
        let d = one(&with(old, new));
        assert_eq!(d.field, field, "{d}");
        assert!(d.found.contains(found), "{d}");
        assert!(d.line > 0, "{d}: located");
    }
}

// ---- issue 12: bounded resources and numbers that cannot lie

#[test]
fn a_billion_nodes_is_refused_before_anything_is_built() {
    // 10^9 nodes x 8 GPUs = 8e9 GPUs: more than 32-bit ids hold (2^31 kept)
    let d = one(&with("nodes = 4", "nodes = 1000000000"));
    assert_eq!((d.field.as_str(), d.line), ("cluster.nodes", 4), "{d}");
    assert!(d.found.contains("8000000000 GPUs"), "{d}");
}

#[test]
fn a_cluster_over_the_memory_budget_names_the_estimate_and_the_key() {
    // 4 x 100,000 GPUs: 1.6e6 directed host links at 256 B each ~ 0.4 GiB > 64 MiB
    let text = with(
        "nodes = 4",
        "nodes = 4\ngpus_per_node = 100000\nnics_per_node = 1",
    )
    .replace("seed = 7", "seed = 7\nmax_memory = \"64MiB\"");
    let d = one(&text);
    assert_eq!(d.field, "cluster.gpus_per_node", "{d}");
    assert!(d.found.contains("estimated at"), "{d}");
    assert!(d.expected.contains("simulation.max_memory = 64MiB"), "{d}");
}

#[test]
fn a_one_byte_chunk_is_refused_by_its_task_estimate() {
    // 16 MiB in 1-byte chunks over 32 ranks: ~1e9 transfers, ~160 GiB
    let d = one(&with("sizes = [", "chunk = \"1B\"\nsizes = ["));
    assert_eq!(d.field, "workload.chunk", "{d}");
    assert!(d.found.contains("tasks"), "{d}");
    assert!(d.expected.contains("simulation.max_memory"), "{d}");
}

#[test]
fn a_size_beyond_the_simulated_time_range_is_located() {
    // 1e19 B at 400 Gb/s takes 2e8 s, past 2^60 ps (13 days)
    let d = one(&with("[\"1MiB\", \"16MiB\"]", "[\"1MiB\", \"1e19\"]"));
    assert_eq!(d.field, "workload.sizes.1", "{d}");
    assert!(d.expected.contains("simulated-time range"), "{d}");
    assert!(d.expected.contains("400Gbps"), "{d}");
}

#[test]
fn a_packet_incast_over_the_event_budget_is_refused_with_its_estimate() {
    // 3 senders x 1 TiB in 4 KiB packets over 6 links: ~5e9 events > 1e6
    let text = with(
        "op = \"allreduce\"\nalgorithm = \"ring\"\nsizes = [\"1MiB\", \"16MiB\"]",
        "kind = \"traffic\"\npattern = \"incast\"\nsenders = 3\nbytes = \"1TiB\"",
    )
    .replace(
        "fidelity = \"flow\"",
        "fidelity = \"packet\"\nmax_events = 1e6",
    );
    let d = one(&text);
    assert_eq!(d.field, "workload.bytes", "{d}");
    assert!(d.found.contains("packet events"), "{d}");
    assert!(d.expected.contains("simulation.max_events = 1.0e6"), "{d}");
}

#[test]
fn budget_keys_are_validated() {
    let d = one(&with("seed = 7", "seed = 7\nmax_events = -3"));
    assert_eq!(d.field, "simulation.max_events", "{d}");
    let d = one(&with("seed = 7", "seed = 7\nmax_memory = \"lots\""));
    assert_eq!(d.field, "simulation.max_memory", "{d}");
    let s = config::parse(
        "good.toml",
        &with(
            "seed = 7",
            "seed = 7\nmax_memory = \"8GiB\"\nmax_events = 1e9",
        ),
    )
    .unwrap();
    assert_eq!(s.budget().max_memory, 8 << 30);
    assert_eq!(s.budget().max_events, 1_000_000_000);
}

#[test]
fn a_zero_time_limit_is_refused_before_the_run() {
    // a run that may not pass t = 0 can only end in a time-limit error; it is
    // refused at its key (the hostile corpus found it failing at run time)
    for zero in ["0", "\"0s\""] {
        let d = one(&with("seed = 7", &format!("seed = 7\ntime_limit = {zero}")));
        assert_eq!(d.field, "simulation.time_limit", "{d}");
        assert!(d.to_string().contains("positive"), "{d}");
    }
}

#[test]
fn an_endless_scenario_file_fails_fast() {
    let e = config::load(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(e.to_string().contains("64MiB"), "{e}");
}

#[test]
fn latencies_and_durations_stay_inside_the_simulated_time_range() {
    // a latency is added once per hop and step: 1e6 s each would sum past 2^64 ps
    let d = one(&with(
        "preset = \"ib-ndr-400\"",
        "preset = \"ib-ndr-400\"\nlink_latency = \"1e6s\"",
    ));
    assert_eq!(d.field, "fabric.link_latency", "{d}");
    assert!(d.expected.contains("at most 1s"), "{d}");
    // 2^60 ps is about 13 days; 1e7 s is past it
    let d = one(&with("seed = 7", "seed = 7\ntime_limit = \"1e7s\""));
    assert_eq!(d.field, "simulation.time_limit", "{d}");
    assert!(d.expected.contains("simulated-time range"), "{d}");
}

#[test]
fn a_fat_tree_too_large_to_build_blames_k() {
    let text = GOOD.replace(
        "kind = \"leaf_spine\"\nradix = 16",
        "kind = \"fat_tree\"\nk = 100000",
    );
    let d = one(&text);
    assert_eq!(d.field, "topology.k", "{d}");
    assert!(d.found.contains("switches"), "{d}");
}

/// Found by `tests/fuzz_scenarios.rs` (with `FABRICSIM_FUZZ_RUN=1`): a slow GPU's
/// `factor = 1e308`, or a GPU efficiency of 1e-12, passed validation and
/// saturated compute tasks at 2^64 ps; the analytical run then failed with "no
/// route at 18446744.074s". Now each is refused at its line: the step of
/// `examples/training-faults.toml` computes in ~0.04 s per GPU, so 1e308× is far
/// past 2^60 ps (13 days) and 1.5× (the example's) is well inside; at efficiency
/// 1e-12 the same step takes ~4e9 s.
#[test]
fn compute_beyond_the_simulated_time_range_is_refused_at_its_key() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/");
    let faults = std::fs::read_to_string(format!("{dir}training-faults.toml")).unwrap();
    assert!(config::parse("ok.toml", &faults).is_ok());
    let line_of =
        |text: &str, start: &str| text.lines().position(|l| l.starts_with(start)).unwrap() + 1;

    let slow = faults.replacen("factor = 1.5", "factor = 1e308", 1);
    let d = one(&slow);
    assert_eq!(d.field, "faults.0.factor", "{d}");
    assert_eq!(d.line, line_of(&slow, "factor = 1e308"), "{d}");
    assert!(
        d.found.starts_with("1e308") && d.expected.contains("2^60 ps"),
        "{d}"
    );

    let weak = faults.replacen(
        "preset = \"h100-sxm\"",
        "preset = \"h100-sxm\"\nefficiency = 1e-12",
        1,
    );
    let d = one(&weak);
    assert_eq!(d.field, "workload.gpu", "{d}");
    assert_eq!(d.line, line_of(&weak, "[workload.gpu]"), "{d}");

    // inference: the same GPU efficiency on the 70B decode example
    let inf = std::fs::read_to_string(format!("{dir}inference-llama2-70b.toml")).unwrap();
    let weak = format!("{inf}\n[workload.gpu]\nefficiency = 1e-12\n");
    let d = one(&weak);
    assert_eq!(d.field, "workload.gpu", "{d}");
}

#[test]
fn planes_and_dual_tor_are_checked_where_they_are_written() {
    // out of range: a located error naming the range
    for bad in ["0", "-3", "17", "9223372036854775807"] {
        let d = one(&with("radix = 16", &format!("radix = 16\nplanes = {bad}")));
        assert_eq!(d.field, "topology.planes", "{d}");
        assert_eq!(d.found, bad);
        assert!(d.expected.contains("from 1 to 16"), "{d}");
        assert_eq!(d.line, 8);
    }
    // a shape without planes or ToR pairs: the allowed list names the keys
    let d = one(&with(
        "kind = \"leaf_spine\"\nradix = 16",
        "kind = \"single_switch\"\nplanes = 2",
    ));
    assert_eq!(d.field, "topology.planes");
    assert!(d.expected.contains("no other keys"), "{d}");
    let d = one(&with(
        "kind = \"leaf_spine\"\nradix = 16",
        "kind = \"rail_optimized\"\nradix = 16\nspine_radix = 64\ndual_tor = true",
    ));
    assert_eq!(d.field, "topology.dual_tor");
    assert!(d.expected.contains("radix, spine_radix, planes"), "{d}");
    // wrong type
    let e = errors(&with("radix = 16", "radix = 16\ndual_tor = 2"));
    assert!(format!("{e}").contains("dual_tor"), "{e}");
    // dual ToR doubles the NIC ports: radix 4 leaves have 2 host ports, and
    // 4 × 8 NICs as 64 ToR ports need 32 leaves, more than a 4-port spine
    // reaches; the message says the counts are ports
    let d = one(&with("radix = 16", "radix = 4\ndual_tor = true"));
    assert_eq!(d.field, "topology.radix");
    assert!(d.expected.contains("dual_tor"), "{d}");
}

/// `Scenario::with_hosts` (what `--nodes` uses) re-runs the rules
/// `cluster.nodes` passed, so it accepts and refuses exactly what the same
/// scenario written with that many nodes does. GOOD is a leaf-spine of radix
/// 16: 16 leaves of 8 host ports (k²/2 = 128 ports, the two-tier Clos of
/// radix k) hold 16 DGX H100 nodes of 8 NICs, not 17; 600,000,000 nodes of 8
/// GPUs pass the 2^32 ids (`config::MAX_ENDPOINTS`); 0 nodes is no cluster.
#[test]
fn with_hosts_accepts_and_refuses_what_the_file_would() {
    let s = config::parse("good.toml", GOOD).unwrap();
    for n in [0u32, 1, 4, 16, 17, 600_000_000] {
        let text = with("nodes = 4", &format!("nodes = {n}"));
        let parsed = config::parse("good.toml", &text);
        let derived = s.with_hosts(n);
        assert_eq!(derived.is_ok(), parsed.is_ok(), "{n} nodes: {derived:?}");
        if let (Ok(d), Ok(p)) = (derived, parsed) {
            assert_eq!(d, p, "{n} nodes");
        }
    }
    assert_eq!(s.with_hosts(16).unwrap().cluster().hosts, 16);
    assert!(s.with_hosts(17).is_err());
}

/// `Scenario::with_collective` (the `check` command's collective, built
/// outside the validator) accepts and refuses what the file would: each
/// mutation below is also written as the file's `[workload]` and must fail
/// there too; the unchanged workload passes both ways and is the same
/// scenario. GOOD has 4 DGX nodes = 32 ranks.
#[test]
fn with_collective_accepts_and_refuses_what_the_file_would() {
    let s = config::parse("good.toml", GOOD).unwrap();
    let config::WorkloadSpec::Collective(w) = s.workload().clone() else {
        panic!("GOOD is a collective");
    };
    let same = s.clone().with_collective(w.clone()).unwrap();
    assert!(same.same_settings(&s) || same.workload() == s.workload());
    type Mutation = (
        &'static str,
        &'static str,
        fn(&mut config::CollectiveWorkload),
    );
    let cases: [Mutation; 5] = [
        ("sizes = [\"1MiB\", \"16MiB\"]", "sizes = []", |w| {
            w.sizes.clear()
        }),
        ("algorithm = \"ring\"", "channels = 65", |w| {
            w.channels = Some(65)
        }),
        ("algorithm = \"ring\"", "channels = 0", |w| {
            w.channels = Some(0)
        }),
        ("op = \"allreduce\"", "op = \"broadcast\"\nroot = 32", |w| {
            w.op = fabricsim::collective::CollectiveOp::Broadcast;
            w.algorithm = config::AlgoChoice::Auto;
            w.root = 32;
        }),
        (
            "sizes = [\"1MiB\", \"16MiB\"]",
            "sizes = [\"1MiB\", \"16MiB\"]\nchunk = \"0B\"",
            |w| w.chunk_bytes = 0,
        ),
    ];
    for (from, to, mutate) in cases {
        let mut text = GOOD.replace(from, to);
        if to.starts_with("op = \"broadcast\"") {
            text = text.replace("algorithm = \"ring\"\n", "");
        }
        assert!(
            config::parse("bad.toml", &text).is_err(),
            "the file accepts {to:?}"
        );
        let mut m = w.clone();
        mutate(&mut m);
        let e = s.clone().with_collective(m).expect_err(to);
        assert!(e.starts_with("workload."), "{to}: {e}");
    }
}

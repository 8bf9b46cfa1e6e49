//! No setting silently does nothing, by construction and by test (issue 12).
//!
//! The ignored settings of a run are the keys the file sets minus the keys the
//! run's readers consumed (`src/config/usage.rs`). This test sets every key of the
//! schema in turn — present in the file or inserted, numbers, names, booleans,
//! `[[faults]]` entries — on every shipped example that runs in well under a
//! second at a fidelity, at the analytical, flow and packet fidelities, and
//! requires of each valid variant either a changed result (the JSON report, less
//! the wall-clock `sim` block, the scenario hash and the list itself, plus the
//! per-flow records) or the key listed in `ignored_settings` — and of a listed
//! key, an unchanged result. It also checks that `validate`'s plan lists what
//! the run lists, and that the table of alternatives covers the whole schema
//! (a new key fails here until it has alternatives).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use fabricsim::config::{self, Fidelity};
use fabricsim::run::{run, RunOptions};

/// Two or three values per key of the schema, of which at least one differs
/// from any example's own value. Keys under `faults.N.` apply to a file's
/// existing `[[faults]]` entries.
const ALTERNATIVES: &[(&str, &[&str])] = &[
    ("name", &["\"renamed\""]),
    ("description", &["\"another note\""]),
    (
        "cluster.preset",
        &["\"dgx-a100-node\"", "\"dgx-b200-node\""],
    ),
    ("cluster.nodes", &["2", "6"]),
    ("cluster.gpus_per_node", &["2", "4"]),
    ("cluster.nics_per_node", &["1", "2"]),
    ("cluster.nvlink_bandwidth", &["\"100GB/s\"", "\"2000GB/s\""]),
    ("cluster.nvlink_latency", &["\"3us\"", "\"100ns\""]),
    ("cluster.pcie_bandwidth", &["\"8GB/s\"", "\"128GB/s\""]),
    ("cluster.pcie_latency", &["\"5us\"", "\"50ns\""]),
    ("cluster.gpu_direct", &["false", "true"]),
    ("cluster.host_copy_bandwidth", &["\"5GB/s\"", "\"200GB/s\""]),
    ("cluster.host_copy_latency", &["\"20us\"", "\"100ns\""]),
    ("cluster.nvlink_efficiency", &["0.5", "1.0"]),
    ("cluster.nvls", &["true", "false"]),
    ("topology.kind", &["\"single_switch\"", "\"fat_tree\""]),
    ("topology.radix", &["8", "16", "64"]),
    ("topology.spine_radix", &["8", "64"]),
    ("topology.oversubscription", &["4.0", "1.0"]),
    ("topology.k", &["4", "16"]),
    ("topology.groups", &["3", "9"]),
    ("topology.routers_per_group", &["2", "8"]),
    ("topology.hosts_per_router", &["1", "8"]),
    ("topology.global_links_per_router", &["1", "4"]),
    // every NIC a port in each plane; dual_tor: every port on a ToR pair
    ("topology.planes", &["2", "4"]),
    ("topology.dual_tor", &["true", "false"]),
    // a file topology needs kind = "file": on the examples' shapes it is refused
    ("topology.file", &["\"../tests/data/hpcc-leaf-spine.toml\""]),
    ("fabric.preset", &["\"roce-200\"", "\"ib-hdr-200\""]),
    (
        "fabric.kind",
        &["\"ethernet\"", "\"roce\"", "\"infiniband\""],
    ),
    ("fabric.link_rate", &["\"25Gbps\"", "\"800Gbps\""]),
    ("fabric.uplink_rate", &["\"25Gbps\"", "\"1600Gbps\""]),
    ("fabric.spine_rate", &["\"25Gbps\"", "\"1600Gbps\""]),
    ("fabric.global_rate", &["\"25Gbps\"", "\"1600Gbps\""]),
    // an array of tables written inline: node 1's NICs slow, or fast
    (
        "fabric.nic_overrides",
        &[
            "[{ nodes = [1], rate = \"10Gbps\" }]",
            "[{ nodes = [0, 1], rate = \"1600Gbps\" }]",
        ],
    ),
    ("fabric.mtu", &["\"1KiB\"", "\"9000B\""]),
    ("fabric.header_bytes", &["200", "20"]),
    ("fabric.link_latency", &["\"5us\"", "\"10ns\""]),
    ("fabric.switch_latency", &["\"5us\"", "\"10ns\""]),
    ("fabric.nic_efficiency", &["0.5", "1.0"]),
    ("fabric.qps_per_connection", &["4", "1"]),
    (
        "fabric.routing",
        &[
            "\"spray\"",
            "\"adaptive\"",
            "\"ecmp\"",
            "\"minimal\"",
            "\"valiant\"",
            "\"ugal\"",
            "\"ugal_g\"",
        ],
    ),
    ("fabric.buffer", &["\"8KiB\"", "\"4MiB\""]),
    ("fabric.shared_buffer", &["\"64KiB\"", "\"16MiB\""]),
    ("fabric.shared_buffer_alpha", &["0.125", "8.0"]),
    ("fabric.virtual_lanes", &["1", "4"]),
    ("fabric.vl_escalation", &["true", "false"]),
    ("fabric.cut_through", &["true", "false"]),
    ("fabric.transport", &["\"tcp\"", "\"rdma\""]),
    ("fabric.tcp_packet_overhead", &["\"10us\"", "\"10ns\""]),
    ("fabric.tcp_jitter", &["\"10us\"", "\"0ns\""]),
    ("fabric.tcp_tso_bytes", &["0", "\"1MiB\""]),
    ("fabric.window", &["\"16KiB\"", "\"64MiB\""]),
    ("fabric.ack_every", &["1", "64"]),
    ("fabric.rto", &["\"20us\"", "\"100ms\""]),
    ("fabric.flowlet_gap", &["\"1us\"", "\"1ms\""]),
    (
        "fabric.loss_recovery",
        &[
            "\"selective-repeat\"",
            "\"go-back-0\"",
            "\"go-back-n\"",
            "\"tcp\"",
        ],
    ),
    ("fabric.rto_low", &["\"1us\"", "\"10ms\""]),
    ("fabric.tcp_min_rto", &["\"1us\"", "\"1s\""]),
    ("fabric.tcp_max_rto", &["\"300ms\"", "\"600s\""]),
    ("fabric.tcp_initial_window", &["1", "1000"]),
    ("fabric.tcp_delayed_ack", &["\"40ms\"", "\"0\""]),
    ("fabric.tcp_sack", &["false", "true"]),
    ("fabric.tcp_rack", &["false", "true"]),
    ("fabric.tcp_dsack", &["false", "true"]),
    ("fabric.trimming", &["true", "false"]),
    ("fabric.pfc", &["true", "false"]),
    ("fabric.sharp", &["true", "false"]),
    ("fabric.sharp_groups", &["0", "1", "64"]),
    ("fabric.pfc_xoff", &["\"8KiB\"", "\"100KiB\""]),
    ("fabric.pfc_xon", &["\"2KiB\"", "\"50KiB\""]),
    ("fabric.pfc_headroom", &["\"200KiB\"", "\"1MiB\""]),
    ("fabric.pfc_pause_quanta", &["16", "65535"]),
    ("fabric.pfc_threshold", &["\"dynamic\"", "\"static\""]),
    ("fabric.pfc_alpha", &["0.125", "8.0"]),
    ("fabric.pfc_headroom_pool", &["\"4MiB\"", "\"64KiB\""]),
    ("fabric.pfc_watchdog", &["\"1us\"", "\"100us\""]),
    ("fabric.pfc_watchdog_restore", &["\"1us\"", "\"1ms\""]),
    ("fabric.ecn", &["true", "false"]),
    ("fabric.ecn_kmin", &["\"1KiB\"", "\"200KiB\""]),
    ("fabric.ecn_kmax", &["\"4KiB\"", "\"400KiB\""]),
    ("fabric.ecn_pmax", &["1.0", "0.01"]),
    ("fabric.ecn_mark_at", &["\"enqueue\"", "\"dequeue\""]),
    (
        "fabric.cc",
        &[
            "\"dcqcn\"",
            "\"dctcp\"",
            "\"swift\"",
            "\"timely\"",
            "\"hpcc\"",
            "\"ib\"",
            "\"newreno\"",
            "\"cubic\"",
            "\"none\"",
        ],
    ),
    ("fabric.ib_cc.threshold", &["15", "\"64KiB\"", "0"]),
    ("fabric.ib_cc.marking_rate", &["3", "100"]),
    ("fabric.ib_cc.packet_size", &["\"8KiB\"", "\"64B\""]),
    ("fabric.ib_cc.ccti_increase", &["4", "16"]),
    ("fabric.ib_cc.ccti_limit", &["8", "1000"]),
    ("fabric.ib_cc.ccti_min", &["2", "20"]),
    ("fabric.ib_cc.ccti_timer", &["1", "\"50us\""]),
    ("fabric.swift.queue_target", &["\"100ns\"", "\"20us\""]),
    ("fabric.swift.ai", &["0.1", "8"]),
    ("fabric.swift.beta", &["0.1", "1"]),
    ("fabric.swift.max_mdf", &["0.05", "0.9"]),
    ("fabric.swift.fs_range", &["0", "\"50us\""]),
    ("fabric.swift.min_cwnd", &["1", "0.001"]),
    ("fabric.timely.t_low", &["0", "\"100us\""]),
    ("fabric.timely.t_high", &["\"8us\"", "\"60us\""]),
    ("fabric.timely.min_rtt", &["\"2us\"", "\"path\""]),
    ("fabric.timely.alpha", &["0.1", "1"]),
    ("fabric.timely.beta", &["0.1", "1"]),
    ("fabric.timely.delta", &["\"1Mbps\"", "\"1Gbps\""]),
    ("fabric.timely.hai_threshold", &["1", "50"]),
    ("fabric.timely.seg_bytes", &["\"4KiB\"", "\"256KiB\""]),
    ("fabric.timely.update", &["\"rtt\"", "\"completion\""]),
    ("fabric.hpcc.eta", &["0.5", "1"]),
    ("fabric.hpcc.max_stage", &["0", "50"]),
    ("fabric.hpcc.w_ai", &["\"1B\"", "\"64KiB\""]),
    ("fabric.hpcc.base_rtt", &["\"1us\"", "\"100us\""]),
    ("fabric.dctcp_g", &["0.5", "0.001"]),
    ("fabric.dcqcn.g", &["0.5", "0.001"]),
    ("fabric.dcqcn.alpha_interval", &["\"1us\"", "\"1ms\""]),
    (
        "fabric.dcqcn.rate_increase_interval",
        &["\"1us\"", "\"1ms\""],
    ),
    ("fabric.dcqcn.byte_counter", &["\"64KiB\"", "\"1GiB\""]),
    ("fabric.dcqcn.fast_recovery_steps", &["1", "20"]),
    ("fabric.dcqcn.rate_ai", &["\"1Gbps\"", "\"50Gbps\""]),
    ("fabric.dcqcn.rate_hai", &["\"1Gbps\"", "\"100Gbps\""]),
    ("fabric.dcqcn.min_rate", &["\"1Gbps\"", "\"100Gbps\""]),
    ("fabric.dcqcn.cnp_interval", &["\"1us\"", "\"1ms\""]),
    ("fabric.dcqcn.initial_alpha", &["0.01", "0.5"]),
    ("fabric.dcqcn.profile", &["\"paper\"", "\"mellanox\""]),
    (
        "fabric.dcqcn.rate_decrease_interval",
        &["\"50us\"", "\"1us\""],
    ),
    ("fabric.dcqcn.clamp_tgt_rate", &["true", "false"]),
    ("fabric.dcqcn.min_dec_fac", &["0.9", "0.0"]),
    // traffic classes: the class all data rides made lossy (PFC fabrics drop
    // instead of pausing) and given tight ECN thresholds (ECN fabrics mark
    // sooner); a weighted pair with nothing mapped to the second class.
    // Elsewhere they change nothing and are listed.
    (
        "fabric.classes",
        &[
            "[{ name = \"bulk\", pfc = false, ecn_kmin = \"1KiB\", ecn_kmax = \"2KiB\" }]",
            "[{ name = \"a\", weight = 3 }, { name = \"b\", weight = 1 }]",
        ],
    ),
    // naming a class needs a [[fabric.classes]] table: alone, refused
    ("fabric.ack_class", &["\"bulk\""]),
    ("fabric.cnp_class", &["\"bulk\""]),
    ("workload.class", &["\"bulk\""]),
    ("workload.kind", &["\"collective\"", "\"traffic\""]),
    // another trace set shipped beside the example's (data = 8, ZeRO-1)
    ("workload.traces", &["\"chakra/dp8\""]),
    (
        "workload.op",
        &["\"all_gather\"", "\"broadcast\"", "\"all_reduce\""],
    ),
    (
        "workload.algorithm",
        &["\"tree\"", "\"ring\"", "\"hierarchical\"", "\"sharp\""],
    ),
    (
        "workload.inter_host",
        &["\"tree\"", "\"sharp\"", "\"ring\""],
    ),
    ("workload.sizes", &["[\"1MiB\"]", "[\"64KiB\", \"64MiB\"]"]),
    ("workload.min_bytes", &["\"4KiB\"", "\"4MiB\""]),
    ("workload.max_bytes", &["\"8MiB\"", "\"1GiB\""]),
    ("workload.step_factor", &["4", "16"]),
    ("workload.chunk", &["\"64KiB\"", "\"16MiB\""]),
    ("workload.dtype", &["\"int8\"", "\"double\""]),
    ("workload.root", &["1", "3"]),
    ("workload.channels", &["1", "8"]),
    ("workload.pxn", &["true", "false"]),
    ("workload.protocol", &["\"ll\"", "\"simple\""]),
    ("workload.step_latency", &["\"50us\"", "\"0ns\""]),
    ("workload.nvlink_step_latency", &["\"50us\"", "\"0ns\""]),
    ("workload.alltoall_skew", &["1.0", "2.0"]),
    (
        "workload.alltoall_load",
        // one load per rank of the 32-host all-to-all example
        &[
            "[8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]",
            "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8]",
        ],
    ),
    ("workload.pattern", &["\"alltoall\"", "\"permutation\""]),
    ("workload.bytes", &["\"4KiB\"", "\"8MiB\""]),
    ("workload.senders", &["2", "7"]),
    ("workload.receiver", &["1", "9"]),
    ("workload.per_host", &["true", "false"]),
    ("workload.cdf", &["\"websearch\"", "\"hadoop\""]),
    ("workload.load", &["0.1", "0.9"]),
    ("workload.duration", &["\"20us\"", "\"1ms\""]),
    ("workload.preset", &["\"llama2-7b\"", "\"mixtral-8x7b\""]),
    ("workload.model.layers", &["4", "96"]),
    ("workload.model.hidden", &["2048", "16384"]),
    ("workload.model.ffn", &["4096", "53248"]),
    ("workload.model.heads", &["16", "128"]),
    ("workload.model.kv_heads", &["1", "16"]),
    ("workload.model.vocab", &["1000", "256000"]),
    ("workload.model.seq_len", &["512", "16384"]),
    ("workload.model.global_batch", &["64", "4096"]),
    ("workload.model.micro_batch", &["2", "8"]),
    (
        "workload.model.precision",
        &["\"fp8\"", "\"fp32\"", "\"bf16\""],
    ),
    ("workload.model.gated_mlp", &["false", "true"]),
    ("workload.model.experts", &["4", "16"]),
    ("workload.model.top_k", &["1", "4"]),
    ("workload.model.moe_every", &["2", "4"]),
    ("workload.model.expert_skew", &["1.0", "2.0"]),
    (
        "workload.model.expert_load",
        &["[8, 1, 1, 1, 1, 1, 1, 1]", "[1, 1, 1, 1, 1, 1, 1, 8]"],
    ),
    ("workload.parallel.data", &["2", "4"]),
    ("workload.parallel.tensor", &["2", "4"]),
    ("workload.parallel.pipeline", &["2", "4"]),
    ("workload.parallel.expert", &["2", "4"]),
    ("workload.parallel.zero", &["3", "0"]),
    ("workload.parallel.sequence_parallel", &["true", "false"]),
    ("workload.parallel.bucket", &["\"1MiB\"", "\"1GiB\""]),
    ("workload.parallel.gradient_compression", &["0.25", "1.0"]),
    ("workload.parallel.grad_precision", &["\"fp32\"", "\"fp8\""]),
    ("workload.parallel.dp_algorithm", &["\"tree\"", "\"ring\""]),
    ("workload.parallel.tp_algorithm", &["\"tree\"", "\"ring\""]),
    ("workload.parallel.replicas", &["\"one\"", "\"all\""]),
    ("workload.parallel.step_latency", &["\"50us\"", "\"0ns\""]),
    (
        "workload.parallel.nvlink_step_latency",
        &["\"50us\"", "\"0ns\""],
    ),
    ("workload.gpu.preset", &["\"a100-sxm\"", "\"b200\""]),
    ("workload.gpu.peak_tflops_bf16", &["100", "5000"]),
    ("workload.gpu.peak_tflops_fp16", &["100", "5000"]),
    ("workload.gpu.peak_tflops_fp8", &["100", "9000"]),
    ("workload.gpu.peak_tflops_fp32", &["10", "500"]),
    ("workload.gpu.efficiency", &["0.2", "0.9"]),
    ("workload.gpu.hbm_bandwidth", &["\"500GB/s\"", "\"8TB/s\""]),
    ("workload.inference.requests", &["1", "64"]),
    ("workload.inference.prompt_tokens", &["16", "8192"]),
    ("workload.inference.output_tokens", &["1", "512"]),
    ("workload.inference.output_tokens_max", &["2", "1024"]),
    ("simulation.fidelity", &[]),
    ("simulation.seed", &["7", "12345"]),
    ("simulation.sample_interval", &["\"1us\"", "\"0s\""]),
    ("simulation.time_limit", &["\"10us\"", "\"100s\""]),
    ("simulation.deadlock_timeout", &["\"1us\"", "\"1s\""]),
    ("simulation.max_memory", &["\"64KiB\"", "\"8GiB\""]),
    ("simulation.threads", &["1", "2"]),
    ("simulation.max_events", &["10", "1e12"]),
    ("faults.N.kind", &["\"slow_gpu\"", "\"link_down\""]),
    ("faults.N.name", &["\"renamed\""]),
    ("faults.N.at", &["\"0us\"", "\"1ms\""]),
    ("faults.N.gpu", &["0", "1"]),
    ("faults.N.factor", &["1.5", "4.0"]),
    ("faults.N.nic", &["0", "1"]),
    ("faults.N.link", &["0", "1"]),
    ("faults.N.switch", &["0", "1"]),
    ("faults.N.rate", &["\"10Gbps\"", "\"100Gbps\""]),
    ("faults.N.bit_error_rate", &["1e-5", "0"]),
    ("workload.extra_flows.N.src", &["0", "1"]),
    ("workload.extra_flows.N.dst", &["2", "3"]),
    ("workload.extra_flows.N.bytes", &["\"64KiB\"", "\"4MiB\""]),
    ("workload.extra_flows.N.start", &["\"0us\"", "\"10us\""]),
    ("workload.extra_flows.N.class", &["\"bulk\""]),
    ("workload.flows.N.id", &["\"renamed\""]),
    ("workload.flows.N.src", &["0", "3"]),
    ("workload.flows.N.dst", &["1", "2"]),
    ("workload.flows.N.bytes", &["\"64KiB\"", "\"8MiB\""]),
    ("workload.flows.N.start", &["\"0us\"", "\"200us\""]),
    ("workload.flows.N.after", &["[]"]),
    ("workload.flows.N.after_sent", &["[]"]),
    // a `[[jobs]]` entry's own keys; its `[jobs.workload]` keys take the
    // alternatives of the `[workload]` key of the same name (see keys_to_try)
    ("jobs.N.name", &["\"renamed\""]),
    ("jobs.N.nodes", &["2", "4"]),
    ("jobs.N.node_list", &["[0, 1, 2, 3]", "[3, 2, 1, 0]"]),
    (
        "jobs.N.placement",
        &["\"packed\"", "\"spread\"", "\"random\"", "\"list\""],
    ),
    ("jobs.N.start", &["\"0us\"", "\"50us\""]),
    ("workload.flows.N.class", &["\"bulk\""]),
];

/// Keys that bound or label a run rather than shape it: a change leaves a
/// result that fits the bound the same (they are validated and enforced; the
/// error paths are tested in tests/hostile.rs and tests/bookkeeping.rs).
const BOUNDS_AND_LABELS: &[&str] = &[
    // labels: the report echoes them, the run does not depend on them
    "name",
    // a note for the reader of the file
    "description",
    "faults.N.name",
    // a spine must have a port per leaf: it constrains the build only
    "topology.spine_radix",
    // budgets: refuse a run above them, change nothing below
    "simulation.max_memory",
    "simulation.max_events",
    // limits and watchdogs: stop a run that reaches them
    "simulation.time_limit",
    "simulation.deadlock_timeout",
    // the fidelity is what each case sets
    "simulation.fidelity",
    // worker threads: the same result at every count (tests/threads.rs)
    "simulation.threads",
    // the sampled series go to the HTML report (`--report`), not the JSON
    "simulation.sample_interval",
];

/// Why `topology.planes` changes nothing at the analytical fidelity on an
/// example without contention bound or fault (the cases every_key found).
/// Why R_AI, R_HAI and F change nothing on the DCQCN incast example.
const DCQCN_FIRST_STEP_ONLY: &str = "with the ConnectX byte counter of 2 MB (64-byte units) no queue pair here gets past its first rate-increase event after a cut: each is cut again within the 300 us timer, or finishes, before a second event, and a cut resets both counters (traced for the victim in tests/dcqcn.rs); the first event is fast recovery, which F > 1, R_AI and R_HAI leave unchanged";

/// Why the seed changes nothing on flows-pipeline.toml since every listed
/// flow is its own connection (measured: seeds 1, 5, 7, 99, 2024, 12345
/// give the same result at both fidelities).
const SEED_PIPELINE: &str = "every chunk is its own connection: only the 1 -> 2 hop crosses a spine, its two chunks follow each other (b1 starts when b0 is done, after a1 has left), and the two spines are alike, so which one ECMP hashes each chunk onto changes no time";

const PLANES_GAP: &str = "a transfer's analytical cost is its own path alone (one NIC port, one plane, at the port's rate): more planes add parallel paths, which change only a contention bound or a faulted fabric, neither of which this example has";

/// Why `topology.dual_tor` changes nothing there, likewise.
const DUAL_TOR_GAP: &str = "a transfer's analytical cost is its own path alone (one port, one ToR, at the port's rate): the second ToR adds a parallel path, which changes only a contention bound or a faulted fabric, neither of which this example has";

/// What the readers do not yet see, each a (example, fidelity, key) that
/// changes nothing without being listed, and why: the setting acts only in a
/// regime or on a path this example never reaches, which no reader can tell
/// before the backend runs. Issue 12's note names them; the list may only
/// shrink: an entry that no longer fails is itself a failure.
const KNOWN_GAPS: &[(&str, Fidelity, &str, &str)] = &[
    (
        "incast-infiniband.toml",
        Fidelity::Packet,
        "fabric.loss_recovery",
        "lossless links (credits) and no fault: nothing is lost and no retransmission timer fires, so every recovery law sends the same packets; selective repeat's one-window bound (512 KiB) does not bind these flows; with \"tcp\" a tail-loss probe that fires while ACKs wait in deep queues sends the first unsent segment (RFC 8985 §7.3), the one these senders, bound by no window, send next anyway",
    ),
    (
        "incast-infiniband-cc.toml",
        Fidelity::Packet,
        "fabric.loss_recovery",
        "lossless links (credits) and no fault: nothing is lost and no retransmission timer fires, so every recovery law sends the same packets; with credits and CCTI pacing a sender's unacknowledged data stays far below selective repeat's one-window bound (512 KiB); with \"tcp\" a tail-loss probe that fires while ACKs wait in deep queues sends the first unsent segment (RFC 8985 §7.3), the one these senders, bound by no window, send next anyway",
    ),
    (
        "incast-roce-pfc-only.toml",
        Fidelity::Packet,
        "fabric.loss_recovery",
        "lossless links (PFC) and no fault: nothing is lost and no retransmission timer fires, so every recovery law sends the same packets; selective repeat's one-window bound (512 KiB) does not bind these flows; with \"tcp\" a tail-loss probe that fires while ACKs wait in deep queues sends the first unsent segment (RFC 8985 §7.3), the one these senders, bound by no window, send next anyway",
    ),
    (
        "incast-roce-timely.toml",
        Fidelity::Packet,
        "fabric.loss_recovery",
        "lossless links (PFC) and no fault: nothing is lost and no retransmission timer fires, so every recovery law sends the same packets; TIMELY paces each sender at its rate, which keeps its unacknowledged data below selective repeat's one-window bound; with \"tcp\" a tail-loss probe that fires while ACKs wait in deep queues sends the first unsent segment (RFC 8985 §7.3), the one these senders, bound by no window, send next anyway",
    ),
    ("allgather-fat-tree.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("allreduce-infiniband-sharp.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("allreduce-leaf-spine.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("allreduce-leaf-spine.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("allreduce-roce.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("flows-pipeline.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("flows-pipeline.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("hierarchical-rail.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-infiniband.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-infiniband.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("incast-infiniband-cc.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-infiniband-cc.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("training-chakra.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("training-chakra.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("incast-lossy-ethernet.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-lossy-ethernet.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("incast-roce-lossy.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-roce-lossy.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("incast-roce-pfc-dcqcn.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-roce-pfc-dcqcn.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("incast-roce-pfc-only.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("incast-roce-pfc-only.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    ("permutation-fat-tree.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("training-mixtral-moe.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("two-jobs-training.toml", Fidelity::Analytical, "topology.planes", PLANES_GAP),
    ("two-jobs-training.toml", Fidelity::Analytical, "topology.dual_tor", DUAL_TOR_GAP),
    (
        "training-chakra.toml",
        Fidelity::Analytical,
        "cluster.nvls",
        "auto chooses no NVLS algorithm for the traces' collectives (as for the training step they come from)",
    ),
    (
        "training-chakra.toml",
        Fidelity::Analytical,
        "fabric.sharp",
        "auto chooses no SHARP algorithm for the traces' collectives (as for the training step they come from)",
    ),
    (
        "training-chakra.toml",
        Fidelity::Flow,
        "cluster.nvls",
        "auto chooses no NVLS algorithm for the traces' collectives (as for the training step they come from)",
    ),
    (
        "training-chakra.toml",
        Fidelity::Flow,
        "fabric.sharp",
        "auto chooses no SHARP algorithm for the traces' collectives (as for the training step they come from)",
    ),
    (
        "training-chakra.toml",
        Fidelity::Flow,
        "fabric.qps_per_connection",
        "the step the traces come from (training-tiny-8gpu.toml) gives the identical result with 4 queue pairs too: its transfers do not contend on the paths more queue pairs would spread them over",
    ),
    (
        "flows-pipeline.toml",
        Fidelity::Analytical,
        "cluster.nodes",
        "more hosts add no flow, and without contention the listed flows' paths cost the same",
    ),
    (
        "flows-pipeline.toml",
        Fidelity::Flow,
        "simulation.seed",
        SEED_PIPELINE,
    ),
    (
        "flows-pipeline.toml",
        Fidelity::Packet,
        "simulation.seed",
        SEED_PIPELINE,
    ),
    (
        "flows-pipeline.toml",
        Fidelity::Packet,
        "fabric.vl_escalation",
        "a chain of single flows never fills a lossless loop that escalation would break",
    ),
    (
        "flows-pipeline.toml",
        Fidelity::Packet,
        "fabric.rto",
        "lossless credits and one flow per link: nothing is lost and ACKs return within \
         microseconds, so no retransmission timer fires (the run no longer waits for pending timers)",
    ),
    (
        "flows-pipeline.toml",
        Fidelity::Packet,
        "fabric.ecn",
        "one flow per link at a time: no queue reaches the marking threshold",
    ),
    (
        "allgather-fat-tree.toml",
        Fidelity::Analytical,
        "fabric.header_bytes",
        "the ring's closed form is bound by NVLink here",
    ),
    (
        "allgather-fat-tree.toml",
        Fidelity::Analytical,
        "fabric.mtu",
        "the ring's closed form is bound by NVLink here",
    ),
    (
        "allreduce-leaf-spine.toml",
        Fidelity::Analytical,
        "workload.chunk",
        "this algorithm's closed form does not pipeline by chunk",
    ),
    (
        "alltoall-oversubscribed.toml",
        Fidelity::Analytical,
        "workload.chunk",
        "the all-to-all's closed form does not pipeline by chunk",
    ),
    (
        "dragonfly-alltoall.toml",
        Fidelity::Analytical,
        "workload.chunk",
        "the all-to-all's closed form does not pipeline by chunk",
    ),
    (
        "alltoall-oversubscribed.toml",
        Fidelity::Analytical,
        "cluster.pcie_bandwidth",
        "the PCIe hop is never the bottleneck of this all-to-all",
    ),
    (
        "alltoall-oversubscribed.toml",
        Fidelity::Analytical,
        "cluster.preset",
        "the file sets every cluster figure the run uses",
    ),
    (
        "dragonfly-alltoall.toml",
        Fidelity::Analytical,
        "cluster.preset",
        "the file sets every cluster figure the run uses",
    ),
    (
        "hierarchical-rail.toml",
        Fidelity::Flow,
        "fabric.qps_per_connection",
        "one path per rail: queue pairs have no ECMP choice to make",
    ),
    (
        "incast-roce-pfc-dcqcn.toml",
        Fidelity::Packet,
        "fabric.dcqcn.fast_recovery_steps",
        DCQCN_FIRST_STEP_ONLY,
    ),
    (
        "incast-roce-pfc-dcqcn.toml",
        Fidelity::Packet,
        "fabric.dcqcn.rate_ai",
        DCQCN_FIRST_STEP_ONLY,
    ),
    (
        "incast-roce-pfc-dcqcn.toml",
        Fidelity::Packet,
        "fabric.dcqcn.rate_hai",
        DCQCN_FIRST_STEP_ONLY,
    ),
    (
        "incast-roce-pfc-only.toml",
        Fidelity::Packet,
        "fabric.kind",
        "roce and ethernet differ only in defaults the file sets",
    ),
    (
        "training-faults.toml",
        Fidelity::Analytical,
        "workload.gpu.hbm_bandwidth",
        "every kernel of this step is compute-bound",
    ),
    (
        "training-faults.toml",
        Fidelity::Flow,
        "workload.gpu.hbm_bandwidth",
        "every kernel of this step is compute-bound",
    ),
    (
        "training-mixtral-moe.toml",
        Fidelity::Analytical,
        "workload.gpu.hbm_bandwidth",
        "every kernel of this step is compute-bound",
    ),
    (
        "training-faults.toml",
        Fidelity::Analytical,
        "workload.parallel.nvlink_step_latency",
        "no collective of this plan has two ranks in one node",
    ),
    (
        "training-faults.toml",
        Fidelity::Flow,
        "workload.parallel.nvlink_step_latency",
        "no collective of this plan has two ranks in one node",
    ),
    (
        "training-faults.toml",
        Fidelity::Analytical,
        "fabric.sharp",
        "auto chooses no SHARP algorithm for this plan's collectives",
    ),
    (
        "training-faults.toml",
        Fidelity::Flow,
        "fabric.sharp",
        "auto chooses no SHARP algorithm for this plan's collectives",
    ),
    (
        "training-mixtral-moe.toml",
        Fidelity::Analytical,
        "fabric.sharp",
        "auto chooses no SHARP algorithm for this plan's collectives",
    ),
    (
        "hierarchical-rail.toml",
        Fidelity::Analytical,
        "fabric.uplink_rate",
        "one leaf per rail and a per-rail algorithm: every transfer turns at its rail's leaf, no spine link carries any",
    ),
    (
        "hierarchical-rail.toml",
        Fidelity::Flow,
        "fabric.uplink_rate",
        "one leaf per rail and a per-rail algorithm: every transfer turns at its rail's leaf, no spine link carries any",
    ),
    (
        "hierarchical-rail.toml",
        Fidelity::Flow,
        "simulation.seed",
        "one path per rail: ECMP has nothing to choose",
    ),
    (
        "training-mixtral-moe.toml",
        Fidelity::Analytical,
        "topology.radix",
        "the closed forms see the same paths with another leaf radix here",
    ),
    (
        "incast-infiniband.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "lanes matter where PFC pauses data; credits never block the control packets here",
    ),
    (
        "incast-lossy-ethernet.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "lanes matter where PFC pauses data; a lossy link drops instead",
    ),
    (
        "incast-roce-lossy.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "lanes matter where PFC pauses data; a lossy link drops instead",
    ),
    (
        "training-mixtral-moe.toml",
        Fidelity::Analytical,
        "cluster.nvls",
        "auto chooses no NVLS algorithm for this plan's collectives",
    ),    (
        "flows-pipeline.toml",
        Fidelity::Packet,
        "fabric.loss_recovery",
        "lossless links (credits) and no fault: nothing is lost and no retransmission timer fires, so every recovery law sends the same packets; selective repeat's one-window bound (512 KiB) does not bind these flows",
    ),
    (
        "incast-roce-hpcc.toml",
        Fidelity::Packet,
        "fabric.rto",
        "HPCC keeps the queues near empty and PFC loses nothing: every ACK returns within a few microseconds, so even a 20us timer never fires",
    ),
    (
        "incast-roce-hpcc.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "HPCC sends no CNPs, and the ACKs travel against the incast where no data queues: with one lane or four they wait behind nothing",
    ),
    (
        "incast-roce-pfc-dcqcn.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "the CNPs and ACKs travel against the incast where no data queues, and PFC pauses only the senders' direction: with one lane or four they wait behind nothing",
    ),
    (
        "incast-roce-timely.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "TIMELY sends no CNPs, and the ACKs travel against the incast where no data queues: with one lane or four they wait behind nothing",
    ),
    (
        "traffic-classes-roce.toml",
        Fidelity::Packet,
        "fabric.kind",
        "every default the kind chooses (transport, pfc, ecn, cc, rto) is written in the file, and the two classes' scheduling is the same on both kinds",
    ),
    (
        "traffic-classes-roce.toml",
        Fidelity::Packet,
        "fabric.virtual_lanes",
        "the lanes above the two classes carry only the ACKs, strict above both: a fourth lane moves them up one and they wait behind nothing more",
    ),
    (
        "traffic-classes-roce.toml",
        Fidelity::Packet,
        "fabric.rto_low",
        "measured: 1us, 100us and 10ms give the same run (299 resent, 3 timeouts): the storage writes lose packets in bursts with more than 3 outstanding, found by SACK NACKs or the 200us rto; IRN's RTO_low, which governs 3 or fewer outstanding, never expires here",
    ),
];

/// The keys each section of the schema accepts, read from the validator's own
/// "unknown field" message, so the list cannot drift from the code.
fn schema_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let sections = [
        ("", "zzz_probe = 1\n"),
        ("cluster.", "[cluster]\nzzz_probe = 1\n"),
        ("topology.", "[topology]\nzzz_probe = 1\n"),
        ("fabric.", "[fabric]\nzzz_probe = 1\n"),
        ("fabric.dcqcn.", "[fabric.dcqcn]\nzzz_probe = 1\n"),
        ("fabric.swift.", "[fabric.swift]\nzzz_probe = 1\n"),
        ("fabric.timely.", "[fabric.timely]\nzzz_probe = 1\n"),
        ("fabric.hpcc.", "[fabric.hpcc]\nzzz_probe = 1\n"),
        ("fabric.ib_cc.", "[fabric.ib_cc]\nzzz_probe = 1\n"),
        ("workload.", "[workload]\nzzz_probe = 1\n"),
        ("workload.model.", "[workload.model]\nzzz_probe = 1\n"),
        ("workload.parallel.", "[workload.parallel]\nzzz_probe = 1\n"),
        ("workload.gpu.", "[workload.gpu]\nzzz_probe = 1\n"),
        (
            "workload.inference.",
            "[workload.inference]\nzzz_probe = 1\n",
        ),
        ("simulation.", "[simulation]\nzzz_probe = 1\n"),
        ("faults.N.", "[[faults]]\nzzz_probe = 1\n"),
        (
            "workload.extra_flows.N.",
            "[[workload.extra_flows]]\nzzz_probe = 1\n",
        ),
        ("workload.flows.N.", "[[workload.flows]]\nzzz_probe = 1\n"),
        ("jobs.N.", "[[jobs]]\nzzz_probe = 1\n"),
    ];
    for (prefix, text) in sections {
        let err = config::parse("probe.toml", text).unwrap_err();
        let unknown = err
            .diagnostics
            .iter()
            .find(|d| d.found.starts_with("unknown field"))
            .unwrap_or_else(|| panic!("{prefix}: no unknown-field diagnostic in {err}"));
        let list = unknown
            .expected
            .split(" (did you mean")
            .next()
            .unwrap_or_default();
        for field in list.split('`').skip(1).step_by(2) {
            let key = format!("{prefix}{field}");
            // sub-tables are sections of their own
            if !matches!(
                key.as_str(),
                "cluster"
                    | "topology"
                    | "fabric"
                    | "workload"
                    | "simulation"
                    | "faults"
                    | "fabric.dcqcn"
                    | "fabric.swift"
                    | "fabric.timely"
                    | "fabric.hpcc"
                    | "fabric.ib_cc"
                    | "workload.model"
                    | "workload.parallel"
                    | "workload.gpu"
                    | "workload.inference"
                    | "workload.extra_flows"
                    | "workload.flows"
                    | "jobs"
                    | "jobs.N.workload"
            ) {
                keys.insert(key);
            }
        }
    }
    keys
}

#[test]
fn the_alternatives_cover_every_key_of_the_schema() {
    let table: BTreeSet<String> = ALTERNATIVES.iter().map(|(k, _)| k.to_string()).collect();
    let schema = schema_keys();
    assert!(schema.len() > 140, "{} keys: {schema:?}", schema.len());
    let missing: Vec<_> = schema.difference(&table).collect();
    let stale: Vec<_> = table.difference(&schema).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "keys without alternatives: {missing:?}; alternatives of no key: {stale:?}"
    );
}

/// `text` with `key` set to `value`: replaced where the file sets it, else
/// inserted under its table (created at the end when absent).
fn set_key(text: &str, key: &str, value: &str) -> Option<String> {
    let src = config::Source::new("x.toml", text);
    if let Some(span) = src.span_of(key) {
        return Some(format!(
            "{}{}{}",
            &text[..span.start],
            value,
            &text[span.end..]
        ));
    }
    if key.contains(".N.") {
        return None; // array entries are only changed where the file has them
    }
    let (table, leaf) = match key.rsplit_once('.') {
        Some((t, l)) => (Some(t), l),
        None => (None, key),
    };
    let line = format!("{leaf} = {value}\n");
    let Some(table) = table else {
        return Some(format!("{line}{text}"));
    };
    let header = format!("[{table}]");
    let mut out = String::new();
    let mut done = false;
    for l in text.lines() {
        out.push_str(l);
        out.push('\n');
        if !done && l.trim() == header {
            out.push_str(&line);
            done = true;
        }
    }
    if !done {
        out.push_str(&format!("\n{header}\n{line}"));
    }
    Some(out)
}

/// `text` without the line that sets `key` (`None` when the key is not on a
/// line of its own).
fn remove_key(text: &str, key: &str) -> Option<String> {
    let span = config::Source::new("x.toml", text).span_of(key)?;
    let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[span.end..]
        .find('\n')
        .map_or(text.len(), |i| span.end + i + 1);
    let leaf = key.rsplit('.').next()?;
    text[start..end]
        .trim_start()
        .starts_with(leaf)
        .then(|| format!("{}{}", &text[..start], &text[end..]))
}

/// What a run says, less what may differ without the setting mattering: the
/// wall clock, the scenario's hash and the ignored list itself. An error is a
/// result too (a run the setting makes impossible).
fn result_of(s: &config::Scenario, f: Fidelity) -> (String, Vec<String>) {
    match run(
        s,
        &RunOptions {
            fidelity: Some(f),
            // which links and which flows: a setting that moves traffic to
            // other hosts or paths changes these even where times are symmetric
            collect_links: true,
            flow_records: true,
            ..RunOptions::default()
        },
    ) {
        Ok(r) => {
            let ignored = r.ignored_settings.iter().map(|i| i.key.clone()).collect();
            let mut v = serde_json::to_value(&r).unwrap();
            let o = v.as_object_mut().unwrap();
            // what the run measured, not what it echoes of its input
            for k in [
                "sim",
                "scenario_hash",
                "ignored_settings",
                "scenario",
                "seed",
                "version",
                "fidelity",
                "topology",
            ] {
                o.remove(k);
            }
            // flows.csv's rows: who sent what to whom, when
            (format!("{v} {:?}", r.flow_records.rows), ignored)
        }
        Err(e) => (format!("error: {e}"), Vec::new()),
    }
}

/// The cases: (example, fidelity). An example joins a fidelity when one run of
/// it takes well under a second there (on 2 cores, optimized test profile).
fn cases() -> Vec<(&'static str, Fidelity)> {
    use Fidelity::*;
    let mut v = Vec::new();
    for ex in [
        "allgather-fat-tree.toml",
        "allreduce-infiniband-sharp.toml",
        "allreduce-faulty-cable.toml",
        "allreduce-leaf-spine.toml",
        "allreduce-roce.toml",
        "alltoall-oversubscribed.toml",
        "dragonfly-alltoall.toml",
        "flows-pipeline.toml",
        "hierarchical-rail.toml",
        "incast-infiniband.toml",
        "incast-infiniband-cc.toml",
        "incast-lossy-ethernet.toml",
        "incast-roce-lossy.toml",
        "incast-roce-pfc-dcqcn.toml",
        "incast-roce-pfc-only.toml",
        "inference-llama2-70b.toml",
        "permutation-fat-tree.toml",
        "pfc-deadlock-dragonfly.toml",
        "training-chakra.toml",
        "training-faults.toml",
        "training-mixtral-moe.toml",
        "two-jobs-leaf-spine.toml",
        "two-jobs-training.toml",
    ] {
        v.push((ex, Analytical));
    }
    for ex in [
        "allgather-fat-tree.toml",
        "allreduce-faulty-cable.toml",
        "alltoall-oversubscribed.toml",
        "flows-pipeline.toml",
        "hierarchical-rail.toml",
        "incast-infiniband.toml",
        "incast-infiniband-cc.toml",
        "incast-roce-pfc-dcqcn.toml",
        "permutation-fat-tree.toml",
        "pfc-deadlock-dragonfly.toml",
        "training-chakra.toml",
        "training-faults.toml",
        "traffic-classes-roce.toml",
        "two-jobs-leaf-spine.toml",
        "two-jobs-training.toml",
    ] {
        v.push((ex, Flow));
    }
    for ex in [
        "flows-pipeline.toml",
        "incast-infiniband.toml",
        "incast-infiniband-cc.toml",
        "incast-lossy-ethernet.toml",
        "incast-roce-lossy.toml",
        "incast-roce-pfc-dcqcn.toml",
        "incast-roce-pfc-only.toml",
        "incast-roce-hpcc.toml",
        "incast-roce-timely.toml",
        "pfc-deadlock-dragonfly.toml",
        "traffic-classes-roce.toml",
        "two-jobs-leaf-spine.toml",
    ] {
        v.push((ex, Packet));
    }
    v
}

/// Every key of `text` and of the schema, the `faults.N.` (and `jobs.N.`) ones
/// expanded over the file's own entries.
fn keys_to_try(s: &config::Scenario) -> Vec<(String, &'static [&'static str], &'static str)> {
    let mut out = Vec::new();
    for &(key, values) in ALTERNATIVES {
        if let Some((array, leaf)) = key.split_once(".N.") {
            let entries: BTreeSet<String> = s
                .keys_set()
                .iter()
                .filter_map(|k| k.strip_prefix(&format!("{array}.")))
                .filter_map(|rest| rest.split('.').next().map(String::from))
                .collect();
            for i in entries {
                out.push((format!("{array}.{i}.{leaf}"), values, key));
            }
        } else {
            out.push((key.to_string(), values, key));
        }
    }
    // a job's workload keys: those the file sets, with the alternatives of
    // the `[workload]` key of the same name (`jobs.1.workload.sizes` as
    // `workload.sizes`, `jobs.0.workload.flows.3.src` as `workload.flows.N.src`)
    let mut seen = BTreeSet::new();
    for k in s.keys_set() {
        let Some(rest) = k.strip_prefix("jobs.") else {
            continue;
        };
        let Some((job, leaf)) = rest.split_once(".workload.") else {
            continue;
        };
        let schema: String = std::iter::once("workload")
            .chain(
                leaf.split('.')
                    .map(|p| if p.parse::<u32>().is_ok() { "N" } else { p }),
            )
            .collect::<Vec<_>>()
            .join(".");
        if let Some(&(schema_key, values)) = ALTERNATIVES.iter().find(|(a, _)| *a == schema) {
            if seen.insert(k.clone()) {
                out.push((format!("jobs.{job}.workload.{leaf}"), values, schema_key));
            }
        }
    }
    out
}

/// Whether two checked scenarios are the same but for the keys their files
/// write: a variant that only spells out a default or a preset's value.
fn same_setting(a: &config::Scenario, b: &config::Scenario) -> bool {
    a.same_settings(b)
}

/// Runs one case; returns the failures.
fn check_case(example: &str, f: Fidelity, runs: &AtomicUsize) -> Vec<String> {
    let path = format!("{}/examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let s = config::parse(&path, &text).unwrap();
    let mut failures = Vec::new();
    let (base, base_ignored) = result_of(&s, f);
    runs.fetch_add(1, Ordering::Relaxed);
    // validate's plan lists what the run lists
    let planned: Vec<String> = fabricsim::run::ignored_settings(&s, f)
        .unwrap()
        .into_iter()
        .map(|i| i.key)
        .collect();
    if !base.starts_with("error") && planned != base_ignored {
        failures.push(format!(
            "{example} at {f:?}: validate plans {planned:?}, the run lists {base_ignored:?}"
        ));
    }
    for (key, values, schema_key) in keys_to_try(&s) {
        if BOUNDS_AND_LABELS.contains(&schema_key) {
            continue;
        }
        let current = config::Source::new(&path, &text)
            .text_of(&key)
            .map(|t| t.trim().to_string());
        let mut tried = Vec::new();
        let mut settled = false;
        for value in values {
            if current.as_deref() == Some(value) {
                continue;
            }
            let Some(variant) = set_key(&text, &key, value) else {
                continue;
            };
            let Ok(vs) = config::parse(&path, &variant) else {
                continue; // refused by validation: a located error, not a silent no-op
            };
            if same_setting(&s, &vs) {
                continue; // the value the file already had, written or by default
            }
            let (result, ignored) = result_of(&vs, f);
            runs.fetch_add(1, Ordering::Relaxed);
            // an inline array of tables is listed by its entries' keys
            let listed = |k: &String| k == &key || k.starts_with(&format!("{key}."));
            if ignored.iter().any(listed) {
                // the other direction: the run would be the same without the
                // key (a wrong "ignored" hides a setting that works)
                let without = remove_key(&variant, &key)
                    .and_then(|t| config::parse(&path, &t).ok())
                    .map(|w| result_of(&w, f).0);
                if let Some(without) = without {
                    runs.fetch_add(1, Ordering::Relaxed);
                    if result != without && !result.starts_with("error") {
                        failures.push(format!(
                            "{example} at {f:?}: `{key}` = {value} is listed in ignored_settings but the run differs without it"
                        ));
                    }
                }
                settled = true;
                break;
            }
            if result != base {
                settled = true;
                break;
            }
            tried.push(*value);
        }
        if !settled && !tried.is_empty() {
            failures.push(format!(
                "{example} at {f:?}: `{key}` = {tried:?} (file: {current:?}) changes nothing and is not listed in ignored_settings"
            ));
        }
    }
    failures
}

#[test]
fn every_key_changes_the_result_or_is_listed() {
    // EVERY_KEY_ONLY=<example file> checks that example alone (known gaps of
    // other examples are then not looked for): for work on one example
    let only = std::env::var("EVERY_KEY_ONLY").ok();
    let cases: Vec<_> = cases()
        .into_iter()
        .filter(|(ex, _)| only.as_deref().is_none_or(|o| o == *ex))
        .collect();
    let next = AtomicUsize::new(0);
    let runs = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(ex, f)) = cases.get(i) else { break };
                let found = check_case(ex, f, &runs);
                failures.lock().unwrap().extend(found);
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    // known gaps pass once each; one that no longer shows is stale
    for (ex, f, key, why) in KNOWN_GAPS {
        if only.as_deref().is_some_and(|o| o != *ex) {
            continue;
        }
        let tag = format!("{ex} at {f:?}: `{key}` =");
        let before = failures.len();
        failures.retain(|m| !m.starts_with(&tag));
        if failures.len() == before {
            failures.push(format!(
                "KNOWN_GAPS lists {ex} at {f:?} `{key}` ({why}), which now changes the result or is listed: remove the entry"
            ));
        }
    }
    println!(
        "{} cases (example x fidelity), {} runs, {} failures",
        cases.len(),
        runs.load(Ordering::Relaxed),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

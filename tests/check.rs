//! `fabricsim check` and `calibrate`: the nccl-tests parser on the shipped validation
//! files and on malformed input, round trips through tables fabricsim generated
//! itself, and the command line.

use std::path::{Path, PathBuf};

use fabricsim::check::calibrate::{self, Param, Unit};
use fabricsim::check::cluster::{self, ScenarioSource};
use fabricsim::check::compare::{self, CheckOptions};
use fabricsim::check::nccltests::{self, NcclOp};
use fabricsim::collective::CollectiveOp;
use fabricsim::config::{AlgoChoice, Fidelity};

fn tmp(name: &str, text: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabricsim-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// validation/*.txt|json and validation/parser-only/* (operations fabricsim does not simulate).
fn validation_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation");
    let mut v: Vec<PathBuf> = Vec::new();
    for dir in [root.clone(), root.join("parser-only")] {
        v.extend(
            std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "txt" || x == "json")),
        );
    }
    v.sort();
    v
}

/// Every shipped validation file parses, names its source and hardware, and its
/// busbw column agrees with nccl-tests' formula for the inferred operation and ranks
/// (busbw = algbw x factor, doc/PERFORMANCE.md of nccl-tests), to the printed
/// rounding (two decimals: within 0.02 GB/s or 1%).
#[test]
fn every_validation_file_parses_with_source_and_consistent_busbw() {
    let files = validation_files();
    assert!(!files.is_empty());
    for f in files {
        let m = nccltests::load(&f).unwrap_or_else(|e| panic!("{e}"));
        assert!(!m.rows.is_empty(), "{}", f.display());
        let meta = |k: &str| m.meta.iter().any(|(key, v)| key == k && !v.is_empty());
        assert!(meta("source"), "{}: no `# source:` line", f.display());
        assert!(meta("hardware"), "{}: no `# hardware:` line", f.display());
        let op =
            m.op.unwrap_or_else(|| panic!("{}: no operation", f.display()));
        if let Some(n) = m.ranks {
            let k = op.busbw_factor(n);
            for r in &m.rows {
                let s = r.out_of_place.as_ref().unwrap();
                let want = s.algbw_gbps * k;
                assert!(
                    (s.busbw_gbps - want).abs() <= 0.02 + 0.01 * want,
                    "{}:{}: busbw {} vs algbw {} x {k}",
                    f.display(),
                    r.line,
                    s.busbw_gbps,
                    s.algbw_gbps
                );
            }
        }
    }
}

/// The 2 x 8 H100 table (validation/h100-2x8-gcp-a3mega-all_reduce.txt): 16 ranks on
/// two hosts (its rank lines), 31 sizes 8 B..8 GiB, `# Avg bus bandwidth : 70.742`.
#[test]
fn rank_lines_give_nodes_and_gpus_per_node() {
    let f =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/h100-2x8-gcp-a3mega-all_reduce.txt");
    let m = nccltests::load(&f).unwrap();
    assert_eq!(m.op, Some(NcclOp::AllReduce));
    assert_eq!(
        (m.ranks, m.nodes, m.gpus_per_node),
        (Some(16), Some(2), Some(8))
    );
    assert_eq!(m.hosts, ["ztan-mig-235z", "ztan-mig-gq73"]);
    assert_eq!(m.rows.len(), 31);
    assert_eq!(m.rows[0].bytes, 8);
    assert_eq!(m.rows[30].bytes, 8 << 30);
    assert_eq!(m.avg_busbw_gbps, Some(70.742));
    assert_eq!(m.gpu.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    // the last row as printed: 47535 us out-of-place, 47743 in-place
    assert_eq!(m.rows[30].out_of_place.as_ref().unwrap().time_us, 47535.0);
    assert_eq!(m.rows[30].in_place.as_ref().unwrap().time_us, 47743.0);
}

const HEADER: &str = "# Collective test starting: all_gather_perf
# nThread 1 nGpus 4 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
";

/// Older nccl-tests (before the root column, `error` instead of `#wrong`), no rank
/// lines: ranks from `nThread x nGpus` (2 x 4 = 8), noted as a guess.
#[test]
fn old_format_without_root_and_ranks_from_nthread() {
    let text = "# nThread 2 nGpus 4 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    30.00   34.95   61.17  0e+00    29.50   35.54   62.20  0e+00
";
    let m = nccltests::parse_bytes("run-allreduce.txt", text.as_bytes()).unwrap();
    assert_eq!(m.ranks, Some(8));
    assert_eq!(m.op, Some(NcclOp::AllReduce));
    assert_eq!(m.rows[0].root, None);
    assert_eq!(m.rows[0].redop.as_deref(), Some("sum"));
    assert_eq!(m.rows[0].out_of_place.as_ref().unwrap().busbw_gbps, 61.17);
    assert!(
        m.guesses.iter().any(|g| g.contains("nThread")),
        "{:?}",
        m.guesses
    );
    assert!(
        m.guesses.iter().any(|g| g.contains("file name")),
        "{:?}",
        m.guesses
    );
}

/// NCCL log lines and command lines between rows are skipped; the binary name
/// in `Collective test starting` wins.
#[test]
fn log_lines_between_rows_are_skipped() {
    let text = format!(
        "{HEADER}host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 4
           8             2     float    none      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0
host:1:1 [0] NCCL INFO something else 12
        1024           256     float    none      -1    11.00    0.09    0.07    N/A    11.00    0.09    0.07    N/A
# Avg bus bandwidth    : 0.035
"
    );
    let m = nccltests::parse_bytes("x.txt", text.as_bytes()).unwrap();
    assert_eq!(m.op, Some(NcclOp::AllGather));
    assert_eq!(m.rows.len(), 2);
    assert_eq!(m.rows[1].line, 9);
    assert_eq!(m.rows[1].out_of_place.as_ref().unwrap().wrong, "N/A");
}

/// Malformed input: each is an error at the right line, never a panic.
#[test]
fn malformed_files_are_located_errors() {
    let cases: Vec<(&str, Vec<u8>, usize, &str)> = vec![
        (
            "truncated.txt",
            format!("{HEADER}           8             2     float    none      -1    10.00\n").into_bytes(),
            6,
            "a row of 6 fields",
        ),
        (
            "nonnumeric.txt",
            format!("{HEADER}           8             2     float    none      -1    10.x0    0.00    0.00      0    10.00    0.00    0.00      0\n").into_bytes(),
            6,
            "\"10.x0\" in the time column",
        ),
        ("empty.txt", Vec::new(), 0, "no column header"),
        ("header-only.txt", HEADER.as_bytes().to_vec(), 0, "no data rows"),
        (
            "garbage.bin",
            b"# nThread 1\n\x7fELF\x02\x01\x01\x00\x00\x00garbage".to_vec(),
            2,
            "binary data",
        ),
        ("latin1.txt", b"# ok\n# caf\xe9\n".to_vec(), 2, "not UTF-8"),
        ("huge.txt", vec![b'9'; 100_000], 1, "a line of 100000 bytes"),
        ("bad.json", b"{\"results\": [ {\"size\": 8,\n \"count\": }\n".to_vec(), 2, "malformed JSON"),
        ("nosize.json", b"{\"results\": [{\"count\": 2, \"out_of_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0}}]}".to_vec(), 0, "results[0].size"),
    ];
    for (name, bytes, line, found) in cases {
        let p = tmp(name, &bytes);
        let e = nccltests::load(&p).expect_err(name);
        assert_eq!(e.line, line, "{name}: {e}");
        assert!(e.found.contains(found), "{name}: {e}");
        let shown = e.to_string();
        assert!(shown.starts_with(&p.display().to_string()), "{shown}");
        assert!(shown.contains("expected"), "{shown}");
    }
}

/// `/dev/zero` is refused after 64 MiB instead of filling memory.
#[test]
fn endless_input_is_refused_at_the_size_limit() {
    let z = Path::new("/dev/zero");
    if !z.exists() {
        return;
    }
    let e = nccltests::load(z).unwrap_err();
    assert!(e.found.contains("larger than 64 MiB"), "{e}");
}

/// The `-J` document (schema of nccl-tests src/util.cu, JSON_FILE_VERSION 3):
/// operation from args[0], ranks and hosts from config.devices, root as a string.
#[test]
fn json_output_parses() {
    let doc = r#"{"version":3,"start_time":"2026-01-01 00:00:00","args":["./build/reduce_scatter_perf","-b","8","-J","out.json"],"env":[],"nccl_version":22602,
"config":{"nthreads":1,"ngpus":1,"minimum_bytes":8,"maximum_bytes":16,"step_factor":2,"devices":[
{"rank":0,"group":0,"pid":1,"hostname":"a","device":0,"device_hex":"0000:04:00","device_info":"NVIDIA H100 80GB HBM3"},
{"rank":1,"group":0,"pid":2,"hostname":"a","device":1,"device_hex":"0000:05:00","device_info":"NVIDIA H100 80GB HBM3"},
{"rank":2,"group":0,"pid":3,"hostname":"b","device":0,"device_hex":"0000:04:00","device_info":"NVIDIA H100 80GB HBM3"},
{"rank":3,"group":0,"pid":4,"hostname":"b","device":1,"device_hex":"0000:05:00","device_info":"NVIDIA H100 80GB HBM3"}]},
"results":[{"size":1048576,"count":65536,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":20.0,"alg_bw":52.43,"bus_bw":39.32,"nwrong":0.0},"in_place":{"time":21.0,"alg_bw":49.93,"bus_bw":37.45,"nwrong":0.0},"actual_iterations":20,"experiment_name":""}],
"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":38.385,"okay":"unchecked"},"errors":[],"end_time":"2026-01-01 00:00:01"}"#;
    let m = nccltests::parse_bytes("x.json", doc.as_bytes()).unwrap();
    assert_eq!(m.format, "json");
    assert_eq!(m.op, Some(NcclOp::ReduceScatter));
    assert_eq!(
        (m.ranks, m.nodes, m.gpus_per_node),
        (Some(4), Some(2), Some(2))
    );
    assert_eq!(m.rows[0].root, Some(-1));
    assert_eq!(m.rows[0].in_place.as_ref().unwrap().time_us, 21.0);
    assert_eq!(m.avg_busbw_gbps, Some(38.385));
    assert!(m.guesses.is_empty(), "{:?}", m.guesses);
}

/// A 2-node x 8-GPU DGX H100 NDR cluster (the dgx-h100-ndr preset with 2 nodes).
fn source() -> ScenarioSource {
    cluster::source(None, Some("dgx-h100-ndr")).unwrap()
}

/// Runs fabricsim's own `op` over `sizes` on `source()` with `sets` and prints it as
/// nccl-tests would (2 hosts x 8 GPUs), each time multiplied by `slow(size)`.
fn generated_table(
    fidelity: Fidelity,
    sets: &[(String, String)],
    sizes: Vec<u64>,
    slow: impl Fn(u64) -> f64,
) -> String {
    let mut s = cluster::build(&source(), sets, Some(2)).unwrap();
    cluster::set_collective(
        &mut s,
        CollectiveOp::AllReduce,
        AlgoChoice::Auto,
        sizes,
        cluster::dtype("float"),
    )
    .unwrap();
    let opts = fabricsim::run::RunOptions {
        fidelity: Some(fidelity),
        ..Default::default()
    };
    let rep = fabricsim::run::run(&s, &opts).unwrap();
    let rows: Vec<(u64, u64, &str, f64, f64, f64)> = rep
        .collectives
        .iter()
        .map(|c| {
            let k = slow(c.bytes);
            (
                c.bytes,
                c.count,
                "float",
                c.time_us * k,
                c.algbw_gbps / k,
                c.busbw_gbps / k,
            )
        })
        .collect();
    nccltests::format_text(
        NcclOp::AllReduce,
        &[("node-a".into(), 8), ("node-b".into(), 8)],
        "NVIDIA H100 80GB HBM3",
        &[
            "source: generated by fabricsim itself (tests/check.rs)".into(),
            "hardware: simulated".into(),
        ],
        &rows,
    )
}

fn sizes() -> Vec<u64> {
    (0..8).map(|i| (64u64 << 10) << (2 * i)).collect() // 64 KiB .. 1 GiB, x4
}

/// check on a table fabricsim generated: ~0% error (only the 2-decimal rounding of
/// the printed times: below 0.1% at these times of 10 us and more), nothing slow.
#[test]
fn check_on_its_own_table_has_no_error() {
    let text = generated_table(Fidelity::Flow, &[], sizes(), |_| 1.0);
    let p = tmp("own.txt", text.as_bytes());
    let m = nccltests::load(&p).unwrap();
    assert!(m.guesses.is_empty(), "{:?}", m.guesses);
    let opts = CheckOptions::default();
    let prep = compare::prepare(&m, &source(), &opts).unwrap();
    let r = compare::check(&prep, &opts).unwrap();
    assert_eq!(r.rows.len(), 8);
    assert!(r.geomean_error < 1e-3, "{}", compare::render(&r));
    assert!(r.slow_sizes.is_empty());
    assert_eq!((r.nodes, r.gpus_per_node), (2, 8));
}

/// One size (4 MiB) made 30% slower: its error is 1/1.3 - 1 = -23% < -15%, so it
/// and only it is flagged.
#[test]
fn one_slowed_size_is_flagged_and_no_other() {
    let text = generated_table(Fidelity::Flow, &[], sizes(), |b| {
        if b == 4 << 20 {
            1.3
        } else {
            1.0
        }
    });
    let p = tmp("slow.txt", text.as_bytes());
    let m = nccltests::load(&p).unwrap();
    let opts = CheckOptions::default();
    let prep = compare::prepare(&m, &source(), &opts).unwrap();
    let r = compare::check(&prep, &opts).unwrap();
    assert_eq!(r.slow_sizes, vec![4 << 20], "{}", compare::render(&r));
    let row = r.rows.iter().find(|x| x.bytes == 4 << 20).unwrap();
    assert!(
        (row.error - (1.0 / 1.3 - 1.0)).abs() < 1e-3,
        "{}",
        row.error
    );
}

/// A scenario with another rank count is refused; another split of the same ranks is
/// a warning.
#[test]
fn rank_mismatch_is_refused_and_split_mismatch_warned() {
    let text = generated_table(Fidelity::Analytical, &[], vec![1 << 20], |_| 1.0);
    let p = tmp("mismatch.txt", text.as_bytes());
    let m = nccltests::load(&p).unwrap();
    let opts = CheckOptions {
        nodes: Some(4),
        ..CheckOptions::default()
    };
    let e = compare::prepare(&m, &source(), &opts).unwrap_err();
    assert!(e.to_string().contains("16 ranks"), "{e}");
    let opts = CheckOptions {
        nodes: Some(4),
        sets: vec![
            ("cluster.gpus_per_node".into(), "4".into()),
            ("cluster.nics_per_node".into(), "4".into()),
        ],
        ..CheckOptions::default()
    };
    let prep = compare::prepare(&m, &source(), &opts).unwrap();
    assert!(
        prep.notes
            .iter()
            .any(|n| n.starts_with("warning") && n.contains("4 nodes x 4")),
        "{:?}",
        prep.notes
    );
}

/// calibrate recovers a known parameter: a table generated with
/// fabric.link_latency = 3us (analytical fidelity, small sizes where latency
/// matters), fitted from 0.5us..10us starting at the preset's value, lands within 1%.
#[test]
fn calibrate_recovers_link_latency() {
    let small: Vec<u64> = (0..6).map(|i| 8u64 << (2 * i)).collect(); // 8 B .. 8 KiB
    let text = generated_table(
        Fidelity::Analytical,
        &[("fabric.link_latency".into(), "3us".into())],
        small,
        |_| 1.0,
    );
    let p = tmp("latency.txt", text.as_bytes());
    let m = nccltests::load(&p).unwrap();
    let opts = CheckOptions {
        fidelity: Fidelity::Analytical,
        ..CheckOptions::default()
    };
    let prep = compare::prepare(&m, &source(), &opts).unwrap();
    let param = calibrate::parse_param("fabric.link_latency=0.5us..10us").unwrap();
    assert_eq!(
        param,
        Param {
            key: "fabric.link_latency".into(),
            lo: 500_000.0,
            hi: 10_000_000.0,
            unit: Unit::Time
        }
    );
    let c = calibrate::calibrate(
        &[prep],
        &opts,
        std::slice::from_ref(&param),
        (0, u64::MAX),
        1,
    )
    .unwrap();
    let fitted_us = c.values[0] / 1e6;
    assert!(
        (fitted_us / 3.0 - 1.0).abs() < 0.01,
        "fitted {fitted_us} us"
    );
    assert!(
        c.fit_after.unwrap() < 0.01 && c.fit_before.unwrap() > 0.05,
        "{c:?}"
    );
    let frag = calibrate::toml_fragment(
        &c,
        &[param],
        &["latency.txt".into()],
        "<preset dgx-h100-ndr>",
        &opts,
        (8, 8192),
    );
    assert!(frag.contains("[fabric]\nlink_latency = \""), "{frag}");
    assert!(frag.contains("# measured: latency.txt"), "{frag}");
}

/// --fit-sizes and --param parsing errors name what is wrong.
#[test]
fn param_and_range_errors() {
    assert!(calibrate::parse_param("fabric.link_latency=10us..1us")
        .unwrap_err()
        .contains("LO < HI"));
    assert!(calibrate::parse_param("fabric.link_latency=1us..4Gbps")
        .unwrap_err()
        .contains("different kinds"));
    assert!(calibrate::parse_param("fabric.link_latency")
        .unwrap_err()
        .contains("KEY=LO..HI"));
    assert_eq!(
        calibrate::parse_param("cluster.nvlink_efficiency=0.5..1")
            .unwrap()
            .unit,
        Unit::Plain
    );
    assert_eq!(
        calibrate::parse_size_range("1M..1G").unwrap(),
        (1 << 20, 1 << 30)
    );
    assert!(calibrate::parse_size_range("1G..1M").is_err());
}

fn fabricsim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// The command line: a table on a shipped file, JSON, Markdown, exit code 2 on bad input.
#[test]
fn command_line_check() {
    let f = "validation/h100-2x8-gcp-a3mega-all_reduce.txt";
    let o = fabricsim(&[
        "check",
        f,
        "--preset",
        "dgx-h100-ndr",
        "--fidelity",
        "analytical",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("16 ranks = 2 nodes x 8 GPUs"), "{out}");
    assert!(out.contains("# geomean error over 31 sizes"), "{out}");
    let o = fabricsim(&[
        "check",
        f,
        "--preset",
        "dgx-h100-ndr",
        "--fidelity",
        "analytical",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["results"][0]["rows"].as_array().unwrap().len(), 31);
    let html = std::env::temp_dir().join(format!("fabricsim-check-{}.html", std::process::id()));
    let o = fabricsim(&[
        "check",
        f,
        "--fidelity",
        "analytical",
        "--report",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("measured") && page.contains("simulated"));
    let _ = std::fs::remove_file(&html);
    let o = fabricsim(&["check", f, "--fidelity", "analytical", "--markdown"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("| case |"));
    let bad = tmp("cli-empty.txt", b"");
    let o = fabricsim(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected nccl-tests output"));
    let o = fabricsim(&["check", f, "--nodes", "3", "--fidelity", "analytical"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // calibrate: a key the schema does not have is refused at its bound, before any search
    let o = fabricsim(&[
        "calibrate",
        f,
        "--fidelity",
        "analytical",
        "--param",
        "fabric.no_such_key=1..2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no_such_key=1]") && err.contains("unknown field"),
        "{err}"
    );
    // and a real one prints the fit and writes the fragment (README's example)
    let toml = std::env::temp_dir().join(format!("fabricsim-cal-{}.toml", std::process::id()));
    let o = fabricsim(&[
        "calibrate",
        f,
        "--fidelity",
        "analytical",
        "--param",
        "fabric.link_latency=100ns..100us",
        "--fit-sizes",
        "8..1M",
        "-o",
        toml.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("held-out rows (13)"), "{out}");
    let frag = std::fs::read_to_string(&toml).unwrap();
    assert!(frag.contains("[fabric]\nlink_latency = "), "{frag}");
    let _ = std::fs::remove_file(&toml);
}

/// Output pasted where Markdown ate the `#` of the header lines (as in
/// NVIDIA/nccl#583), and mpirun's `--timestamp-output` prefix (as in NVIDIA/nccl#1368),
/// still parse: the keywords `size`, `Rank`, `nThread` start their lines. The row
/// figures here are made up for the test.
#[test]
fn headers_without_hash_and_mpirun_prefixes() {
    let text = " nThread 1 nGpus 1 minBytes 32 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
   Rank  0 Pid 11 on host-a device  0 [0x00] NVIDIA A100-SXM4-40GB
   Rank  1 Pid 12 on host-b device  0 [0x00] NVIDIA A100-SXM4-40GB
       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
Thu Jul 18 15:41:05 2024<stdout>:     1048576        262144   float     sum    50.00   20.97   20.97  0e+00    50.00   20.97   20.97  0e+00
[1,0]<stdout>:     2097152        524288   float     sum    90.00   23.30   23.30  0e+00    90.00   23.30   23.30  0e+00
";
    let m = nccltests::parse_bytes("all_reduce.log", text.as_bytes()).unwrap();
    assert_eq!(
        (m.ranks, m.nodes, m.gpus_per_node),
        (Some(2), Some(2), Some(1))
    );
    assert_eq!(m.rows.len(), 2);
    assert_eq!(m.rows[1].bytes, 2 << 20);
}

/// Two parameters at once (coordinate search, several rounds): a table generated with
/// fabric.link_latency = 3us and cluster.nvlink_bandwidth = 300GB/s over 8 B..1 GiB
/// (analytical) is fitted back from 0.5us..10us and 100GB/s..900GB/s within 1% each.
#[test]
fn calibrate_recovers_two_parameters() {
    let sizes: Vec<u64> = (0..14).map(|i| 8u64 << (2 * i)).collect(); // 8 B .. 512 MiB
    let sets = [
        ("fabric.link_latency".to_string(), "3us".to_string()),
        (
            "cluster.nvlink_bandwidth".to_string(),
            "300GB/s".to_string(),
        ),
    ];
    let text = generated_table(Fidelity::Analytical, &sets, sizes, |_| 1.0);
    let p = tmp("two.txt", text.as_bytes());
    let m = nccltests::load(&p).unwrap();
    let opts = CheckOptions {
        fidelity: Fidelity::Analytical,
        ..CheckOptions::default()
    };
    let prep = compare::prepare(&m, &source(), &opts).unwrap();
    let params = [
        calibrate::parse_param("fabric.link_latency=0.5us..10us").unwrap(),
        calibrate::parse_param("cluster.nvlink_bandwidth=100GB/s..900GB/s").unwrap(),
    ];
    let c = calibrate::calibrate(&[prep], &opts, &params, (0, u64::MAX), 4).unwrap();
    let lat_us = c.values[0] / 1e6;
    let nvl_gbytes = c.values[1] / 8e9;
    assert!((lat_us / 3.0 - 1.0).abs() < 0.01, "{lat_us} us, {c:?}");
    assert!(
        (nvl_gbytes / 300.0 - 1.0).abs() < 0.01,
        "{nvl_gbytes} GB/s, {c:?}"
    );
}

/// Every shipped case simulates on the cluster its `# preset:`/`# set:` lines name
/// (analytical, fast), with the file's ranks, and every row gets a finite error.
/// The errors themselves are reported in docs/validation.md, not asserted here: the
/// model is expected to change (channels, NVLS, protocols).
#[test]
fn every_validation_case_simulates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation");
    let mut n = 0;
    for f in validation_files()
        .into_iter()
        .filter(|f| f.parent() == Some(root.as_path()))
    {
        let m = nccltests::load(&f).unwrap();
        let preset = m
            .meta
            .iter()
            .find(|(k, _)| k == "preset")
            .map(|(_, v)| v.as_str());
        assert!(preset.is_some(), "{}: no `# preset:` line", f.display());
        let src = cluster::source(None, preset).unwrap();
        let opts = CheckOptions {
            fidelity: Fidelity::Analytical,
            ..CheckOptions::default()
        };
        let p =
            compare::prepare(&m, &src, &opts).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let r = compare::check(&p, &opts).unwrap();
        assert_eq!(Some(r.ranks), m.ranks, "{}", f.display());
        assert!(r
            .rows
            .iter()
            .all(|x| x.error.is_finite() && x.simulated_us > 0.0));
        n += 1;
    }
    assert!(n >= 11, "{n} cases");
}

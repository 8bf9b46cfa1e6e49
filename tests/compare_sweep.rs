//! `fabricsim compare` and `fabricsim sweep`: the comparison's ratios equal those of
//! the single runs; a sweep runs its combinations concurrently, writes one CSV row
//! per combination in cross-product order whatever the thread timing, and a bad
//! `--set` value is a located diagnostic with exit code 2.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use fabricsim::config::{self, Fidelity};
use fabricsim::run::{self, RunOptions};
use fabricsim::sweep::{self, SweepEvent};

const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");
const A: &str = "examples/allreduce-leaf-spine.toml";
const B: &str = "examples/hierarchical-rail.toml";

fn single(path: &str) -> fabricsim::report::Report {
    let s = config::load(Path::new(path)).unwrap();
    run::run(&s, &RunOptions::default()).unwrap()
}

#[test]
fn compare_prints_the_ratios_of_the_single_runs() {
    check_compare(A, B, 1);
    // the same all-reduce on a fabric twice as fast: every size has a ratio
    let dir = std::env::temp_dir().join(format!("fabricsim-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fast = dir.join("fast.toml");
    let text = std::fs::read_to_string(A).unwrap();
    std::fs::write(
        &fast,
        sweep::rewrite(&text, "fabric.link_rate", "\"800Gbps\""),
    )
    .unwrap();
    check_compare(A, fast.to_str().unwrap(), single(A).collectives.len());
    let _ = std::fs::remove_dir_all(&dir);
}

fn check_compare(pa: &str, pb: &str, common: usize) {
    let out = Command::new(BIN)
        .args(["compare", pa, pb, "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (a, b) = (single(pa), single(pb));
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // op size A-time A-busbw B-time B-busbw B/A
        assert_eq!(f.len(), 7, "{line}");
        let bytes: u64 = f[1].parse().unwrap();
        let ra = a.collectives.iter().find(|c| c.bytes == bytes);
        let rb = b.collectives.iter().find(|c| c.bytes == bytes);
        match (ra, rb) {
            (Some(ra), Some(rb)) => {
                let expected = rb.busbw_gbps / ra.busbw_gbps;
                let got: f64 = f[6].parse().unwrap();
                assert!(
                    (got - expected).abs() <= 5e-5 + 1e-4 * expected,
                    "{bytes}: printed {got}, single runs give {expected}"
                );
                let ta: f64 = f[2].parse().unwrap();
                assert!((ta - ra.time_us).abs() < 0.006, "{line}");
                checked += 1;
            }
            _ => assert_eq!(f[6], "-", "{line}"),
        }
    }
    assert_eq!(checked, common, "common sizes in:\n{text}");
    let p99 = text
        .lines()
        .find(|l| l.starts_with("# flow p99 FCT"))
        .unwrap();
    let f: Vec<&str> = p99.split_whitespace().collect();
    let ratio: f64 = f.last().unwrap().parse().unwrap();
    let expected = b.flows.fct_us.p99 / a.flows.fct_us.p99;
    assert!((ratio - expected).abs() <= 1e-4 * expected + 5e-5, "{p99}");
}

#[test]
fn sweep_runs_concurrently_and_keeps_cross_product_order() {
    let path = "examples/alltoall-oversubscribed.toml";
    let text = std::fs::read_to_string(path).unwrap();
    let axes = vec![sweep::parse_set("fabric.link_latency=100ns,500ns,1us").unwrap()];
    let opts = RunOptions {
        fidelity: Some(Fidelity::Flow),
        ..RunOptions::default()
    };
    let (live, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let order = std::sync::Mutex::new(Vec::new());
    let runs = sweep::run(path, &text, &axes, &opts, 3, &|ev| match ev {
        SweepEvent::Started(_) => {
            let n = live.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(n, Ordering::SeqCst);
        }
        SweepEvent::Finished(i) => {
            live.fetch_sub(1, Ordering::SeqCst);
            order.lock().unwrap().push(i);
        }
    })
    .unwrap();
    assert!(
        peak.load(Ordering::SeqCst) >= 2,
        "runs never overlapped (finish order {:?})",
        order.lock().unwrap()
    );
    let values: Vec<&str> = runs.iter().map(|r| r.values[0].as_str()).collect();
    assert_eq!(values, ["100ns", "500ns", "1us"]);
    // latency only adds: time grows with it
    let t: Vec<f64> = runs
        .iter()
        .map(|r| r.result.as_ref().unwrap().collectives[0].time_us)
        .collect();
    assert!(t[0] < t[1] && t[1] < t[2], "{t:?}");
    // the 500ns row equals a single run of the rewritten scenario
    let s = sweep::apply(
        path,
        &text,
        &[("fabric.link_latency".into(), "500ns".into())],
    )
    .unwrap();
    let one = run::run(&s, &opts).unwrap();
    assert_eq!(
        runs[1].result.as_ref().unwrap().collectives,
        one.collectives
    );
}

#[test]
fn sweep_csv_has_one_row_per_combination_whatever_the_thread_count() {
    let dir = std::env::temp_dir().join(format!("fabricsim-sweep-{}", std::process::id()));
    let csv = |jobs: &str, sub: &str| {
        let out = dir.join(sub);
        let o = Command::new(BIN)
            .args([
                "sweep",
                "examples/alltoall-oversubscribed.toml",
                "--set",
                "fabric.link_latency=100ns,500ns,1us",
                "--set",
                "cluster.nodes=16,32",
                "--fidelity",
                "analytical",
                "--quiet",
                "--jobs",
                jobs,
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let file = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
        assert_eq!(
            file,
            String::from_utf8(o.stdout).unwrap(),
            "printed = written"
        );
        file
    };
    let parallel = csv("0", "par");
    let serial = csv("1", "ser");
    assert_eq!(parallel, serial, "output independent of thread timing");
    let lines: Vec<&str> = parallel.lines().collect();
    assert!(lines[0].starts_with("fabric.link_latency,cluster.nodes,fidelity,"));
    assert_eq!(lines.len(), 1 + 6);
    let keys: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        keys,
        ["100ns,16", "100ns,32", "500ns,16", "500ns,32", "1us,16", "1us,32"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_set_value_is_a_located_diagnostic_naming_the_override() {
    let o = Command::new(BIN)
        .args([
            "sweep",
            "examples/alltoall-oversubscribed.toml",
            "--set",
            "fabric.link_rate=100Gbps,fast",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("[--set fabric.link_rate=fast]:23:13: `fabric.link_rate`"),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
    assert!(o.stdout.is_empty(), "no run happened");
    // malformed --set syntax: a usage error, also exit 2
    let o = Command::new(BIN)
        .args([
            "sweep",
            "examples/alltoall-oversubscribed.toml",
            "--set",
            "nodes",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // a key the file lacks is inserted in its table and validated like the rest
    let o = Command::new(BIN)
        .args([
            "sweep",
            "examples/alltoall-oversubscribed.toml",
            "--set",
            "fabric.routing=spray,zigzag",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--set fabric.routing=zigzag") && err.contains("`fabric.routing`"),
        "{err}"
    );
}

#[test]
fn compare_of_traffic_runs_prints_fcts_and_no_busbw_table() {
    // Issue 15: `compare` on traffic scenarios printed a collectives header and
    // "avg busbw 0.000" for runs that have no collective. Two flow-level runs of
    // the example incast, the second with half the link rate: the makespan
    // ratio is the runs' own.
    let path = "examples/incast-roce-pfc-only.toml";
    let text = std::fs::read_to_string(path).unwrap();
    let opts = RunOptions {
        fidelity: Some(Fidelity::Flow),
        ..RunOptions::default()
    };
    let a = run::run(&config::parse(path, &text).unwrap(), &opts).unwrap();
    let slow = sweep::apply(
        path,
        &text,
        &[("fabric.link_rate".into(), "200Gbps".into())],
    )
    .unwrap();
    let b = run::run(&slow, &opts).unwrap();
    let t = fabricsim::report::compare::table(&[a.clone(), b.clone()], &["a".into(), "b".into()]);
    eprintln!("{t}");
    assert!(!t.contains("busbw"), "{t}");
    assert!(!t.contains("size(B)"), "{t}");
    let row = t
        .lines()
        .find(|l| l.starts_with("# makespan (us)"))
        .expect("a makespan row");
    let ratio: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
    assert!(
        (ratio - b.makespan_us / a.makespan_us).abs() < 1e-4,
        "{row}"
    );
    assert!(t.contains("# flow p50 FCT (us)") && t.contains("# flow max FCT (us)"));
}

/// The figures of `col` in a sweep CSV, one per row (None for an empty cell).
fn column(csv: &str, col: &str) -> Vec<Option<f64>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let k = header
        .iter()
        .position(|h| *h == col)
        .unwrap_or_else(|| panic!("no column {col} in {header:?}"));
    lines
        .map(|l| {
            let c = l.split(',').nth(k).unwrap();
            (!c.is_empty()).then(|| c.parse().unwrap())
        })
        .collect()
}

#[test]
fn sweep_adds_step_time_and_mfu_columns_for_training_and_step_time_for_chakra() {
    // Issue 15: a training or Chakra sweep had only the collective columns.
    // Each row's step time and MFU are its single run's (training.step_time_s,
    // training.mfu; a Chakra trace set's makespan), printed to 6 decimals.
    let analytical = RunOptions {
        fidelity: Some(Fidelity::Analytical),
        ..RunOptions::default()
    };
    let path = "examples/training-tiny-8gpu.toml";
    let text = std::fs::read_to_string(path).unwrap();
    let axes = vec![sweep::parse_set("workload.parallel.bucket=1MiB,16MiB").unwrap()];
    let mut runs = sweep::run(path, &text, &axes, &analytical, 2, &|_| {}).unwrap();
    let csv = sweep::csv(&axes, &runs);
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",step_time_us,mfu,mean_busbw_GBps,"),
        "{header}"
    );
    assert!(!header.contains("ttft_ms"), "no inference column: {header}");
    let (step, mfu) = (column(&csv, "step_time_us"), column(&csv, "mfu"));
    for (i, r) in runs.iter().enumerate() {
        let t = r.result.as_ref().unwrap().training.as_ref().unwrap();
        let (s, m) = (step[i].unwrap(), mfu[i].unwrap());
        assert!(
            (s - t.step_time_s * 1e6).abs() <= 5e-7,
            "{s} vs {}",
            t.step_time_s
        );
        assert!((m - t.mfu).abs() <= 5e-7 && m > 0.0, "{m} vs {}", t.mfu);
    }
    // a run that failed has empty cells, never 0
    runs[1].result = Err("failed".into());
    let csv = sweep::csv(&axes, &runs);
    assert_eq!(column(&csv, "step_time_us")[1], None);
    assert_eq!(column(&csv, "mfu")[1], None);
    // and the sharded sweep merges to the same CSV, columns included
    let shard = |k: usize| {
        let sh = sweep::Shard { index: k, count: 2 };
        let mine: Vec<_> = runs.iter().filter(|r| sh.owns(r.index)).cloned().collect();
        (
            format!("s{k}.csv"),
            sweep::shard_csv(&axes, &mine, runs.len()),
        )
    };
    assert_eq!(sweep::merge(&[shard(1), shard(0)]).unwrap(), csv);
    // a Chakra trace set: step time (its makespan), no MFU (the traces carry
    // durations, not FLOPs)
    let path = "examples/training-chakra.toml";
    let text = std::fs::read_to_string(path).unwrap();
    let axes = vec![sweep::parse_set("fabric.link_latency=100ns,2us").unwrap()];
    let runs = sweep::run(path, &text, &axes, &analytical, 2, &|_| {}).unwrap();
    let csv = sweep::csv(&axes, &runs);
    assert!(!csv.lines().next().unwrap().contains(",mfu,"));
    let step = column(&csv, "step_time_us");
    for (i, r) in runs.iter().enumerate() {
        let m = r.result.as_ref().unwrap().makespan_us;
        assert!((step[i].unwrap() - m).abs() <= 5e-7, "{step:?} vs {m}");
    }
    assert!(step[1] > step[0], "a slower link, a longer step: {step:?}");
    // a collective sweep has none of these columns
    let text = std::fs::read_to_string(A).unwrap();
    let axes = vec![sweep::parse_set("fabric.link_latency=100ns").unwrap()];
    let runs = sweep::run(A, &text, &axes, &analytical, 1, &|_| {}).unwrap();
    let header = sweep::csv(&axes, &runs);
    let header = header.lines().next().unwrap();
    for c in sweep::WORKLOAD_COLUMNS {
        assert!(!header.split(',').any(|h| h == c), "{c} in {header}");
    }
}

#[test]
fn sweep_adds_ttft_and_tpot_columns_for_inference() {
    // an inference batch: TTFT (its prefill) and TPOT p50/p99 of its single
    // run, no step time or MFU (a batch is not a training step)
    let path = "examples/inference-llama2-70b.toml";
    let text = std::fs::read_to_string(path).unwrap();
    let axes = vec![sweep::parse_set("fabric.link_latency=100ns").unwrap()];
    let opts = RunOptions {
        fidelity: Some(Fidelity::Analytical),
        ..RunOptions::default()
    };
    let runs = sweep::run(path, &text, &axes, &opts, 1, &|_| {}).unwrap();
    let csv = sweep::csv(&axes, &runs);
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",ttft_ms,tpot_p50_ms,tpot_p99_ms,"),
        "{header}"
    );
    assert!(!header.contains("step_time_us") && !header.contains(",mfu,"));
    let i = runs[0].result.as_ref().unwrap().inference.as_ref().unwrap();
    let near = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() <= 5e-7;
    assert!(near(column(&csv, "ttft_ms")[0], i.prefill_ms));
    assert!(near(column(&csv, "tpot_p50_ms")[0], i.tpot_ms.p50));
    assert!(near(column(&csv, "tpot_p99_ms")[0], i.tpot_ms.p99));
}

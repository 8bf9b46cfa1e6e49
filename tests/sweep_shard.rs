//! Sharded sweeps (issue 16): `sweep --shard K/N` runs a slice of the cross
//! product and `sweep-merge` joins the slices' CSVs into exactly the CSV the
//! whole sweep writes in one process, whatever the number of slices and the
//! order the files are given in; a missing, duplicated or foreign slice is a
//! located error.

use fabricsim::config::Fidelity;
use fabricsim::run::RunOptions;
use fabricsim::sweep::{self, Shard, SweepRun};

const PATH: &str = "examples/allreduce-leaf-spine.toml";

/// A 3 × 2 sweep at the analytical fidelity whose runs do not all have the same
/// collective sizes (so the merged per-size columns are a union), with one run
/// turned into a failure whose message needs CSV quoting.
fn full_sweep() -> (Vec<sweep::Axis>, Vec<SweepRun>) {
    let text = std::fs::read_to_string(PATH).unwrap();
    let axes = vec![
        sweep::parse_set("workload.max_bytes=1MiB,64MiB,8MiB").unwrap(),
        sweep::parse_set("cluster.nodes=2,4").unwrap(),
    ];
    let opts = RunOptions {
        fidelity: Some(Fidelity::Analytical),
        ..RunOptions::default()
    };
    let mut runs = sweep::run(PATH, &text, &axes, &opts, 2, &|_| {}).unwrap();
    assert_eq!(runs.len(), 6);
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r.index, i);
        assert!(r.result.is_ok(), "{:?}", r.result);
    }
    runs[3].result = Err("a failure, with a comma, a \"quote\"\nand a second line".into());
    (axes, runs)
}

fn shard_files(axes: &[sweep::Axis], runs: &[SweepRun], n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|k| {
            let sh = Shard { index: k, count: n };
            let mine: Vec<SweepRun> = runs.iter().filter(|r| sh.owns(r.index)).cloned().collect();
            (
                format!("sweep.shard-{}-of-{n}.csv", k + 1),
                sweep::shard_csv(axes, &mine, runs.len()),
            )
        })
        .collect()
}

#[test]
fn merged_shards_are_the_whole_sweeps_csv_byte_for_byte() {
    let (axes, runs) = full_sweep();
    let whole = sweep::csv(&axes, &runs);
    // the sizes differ per run: 1 MiB runs have one column pair, 64 MiB runs seven
    assert!(whole
        .lines()
        .next()
        .unwrap()
        .contains("allreduce_67108864_time_us"));
    for n in 1..=8 {
        let mut files = shard_files(&axes, &runs, n);
        assert_eq!(sweep::merge(&files).unwrap(), whole, "{n} slices");
        files.reverse();
        assert_eq!(sweep::merge(&files).unwrap(), whole, "{n} slices, reversed");
    }
}

#[test]
fn a_shard_runs_exactly_its_round_robin_slice() {
    let text = std::fs::read_to_string(PATH).unwrap();
    let axes = vec![sweep::parse_set("cluster.nodes=2,4,6,8,10").unwrap()];
    let opts = RunOptions {
        fidelity: Some(Fidelity::Analytical),
        ..RunOptions::default()
    };
    let sh = Shard::parse("2/3").unwrap();
    assert_eq!(sh, Shard { index: 1, count: 3 });
    let runs = sweep::run_shard(PATH, &text, &axes, &opts, 1, Some(sh), &|_| {}).unwrap();
    let idx: Vec<usize> = runs.iter().map(|r| r.index).collect();
    assert_eq!(idx, [1, 4]);
    let values: Vec<&str> = runs.iter().map(|r| r.values[0].as_str()).collect();
    assert_eq!(values, ["4", "10"]);
    // a slice still refuses a bad value that only another slice would run
    let bad = vec![sweep::parse_set("cluster.nodes=2,0").unwrap()];
    let only_first = Shard { index: 0, count: 2 };
    assert!(sweep::run_shard(PATH, &text, &bad, &opts, 1, Some(only_first), &|_| {}).is_err());
}

#[test]
fn shard_arguments_are_checked() {
    for bad in ["0/3", "4/3", "3", "a/b", "1/0", "1/100000", "/2"] {
        let e = Shard::parse(bad).unwrap_err();
        assert!(e.contains("--shard"), "{bad}: {e}");
    }
    assert!(Shard::parse(" 3 / 3 ").is_ok());
}

#[test]
fn merge_errors_name_the_file_the_line_and_the_run() {
    let (axes, runs) = full_sweep();
    let files = shard_files(&axes, &runs, 3);

    let missing = sweep::merge(&files[..2]).unwrap_err();
    assert!(
        missing.contains("2 of 6 runs missing (run 2, 5)"),
        "{missing}"
    );

    let twice = vec![
        files[0].clone(),
        files[1].clone(),
        files[2].clone(),
        files[0].clone(),
    ];
    let e = sweep::merge(&twice).unwrap_err();
    assert!(
        e.contains("sweep.shard-1-of-3.csv:2: run 0 is also at sweep.shard-1-of-3.csv:2"),
        "{e}"
    );

    let whole = ("sweep.csv".to_string(), sweep::csv(&axes, &runs));
    let e = sweep::merge(&[whole]).unwrap_err();
    assert!(
        e.starts_with("sweep.csv:1: the header does not start with run,runs"),
        "{e}"
    );

    // slices of another sweep
    let other_axes = vec![
        sweep::parse_set("workload.min_bytes=1MiB,64MiB,8MiB").unwrap(),
        sweep::parse_set("cluster.nodes=2,4").unwrap(),
    ];
    let mut mixed = shard_files(&axes, &runs, 2);
    mixed[1].1 = shard_files(&other_axes, &runs, 2)[1].1.clone();
    let e = sweep::merge(&mixed).unwrap_err();
    assert!(e.contains("expected slices of one sweep"), "{e}");

    // a truncated file: the last row (runs 1 and 4 are this slice's) lost fields
    let mut cut = files.clone();
    let t = &cut[1].1;
    let last_comma = t.trim_end().rfind(',').unwrap();
    cut[1].1 = t[..last_comma].to_string() + "\n";
    let e = sweep::merge(&cut).unwrap_err();
    assert!(
        e.starts_with("sweep.shard-2-of-3.csv:3:") && e.contains("fields; expected"),
        "{e}"
    );
    // an unclosed quote, after slice 1's two-line error message (lines 3 and 4)
    let mut open = files.clone();
    open[0].1.push_str("9,6,\"never closed\n");
    let e = sweep::merge(&open).unwrap_err();
    assert!(
        e.starts_with("sweep.shard-1-of-3.csv:5:") && e.contains("never closed"),
        "{e}"
    );
    // a stray quote in an unquoted field
    let mut stray = files.clone();
    stray[2].1 = stray[2].1.replacen("analytical", "analy\"tical", 1);
    let e = sweep::merge(&stray).unwrap_err();
    assert!(
        e.starts_with("sweep.shard-3-of-3.csv:2: a quote inside"),
        "{e}"
    );

    assert!(sweep::merge(&[]).unwrap_err().contains("no files"));
    let empty = vec![("e.csv".to_string(), String::new())];
    assert!(sweep::merge(&empty)
        .unwrap_err()
        .starts_with("e.csv:1: the file is empty"));
}

#[test]
fn the_command_line_writes_slices_that_merge_into_the_whole_sweep() {
    const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");
    let dir = std::env::temp_dir().join(format!("fabricsim-shard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sweep = |extra: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(["sweep", PATH, "--fidelity", "analytical", "-q", "--out"])
            .arg(&dir)
            .args([
                "--set",
                "cluster.nodes=2,4,6",
                "--set",
                "fabric.link_latency=100ns,1us",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let whole = sweep(&[]);
    for k in 1..=4 {
        let printed = sweep(&["--shard", &format!("{k}/4")]);
        assert!(printed.starts_with("run,runs,cluster.nodes,fabric.link_latency,fidelity,"));
        let written =
            std::fs::read_to_string(dir.join(format!("sweep.shard-{k}-of-4.csv"))).unwrap();
        assert_eq!(printed, written);
    }
    let merged = dir.join("merged.csv");
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("sweep-merge");
    for k in [3, 1, 4, 2] {
        cmd.arg(dir.join(format!("sweep.shard-{k}-of-4.csv")));
    }
    let out = cmd.arg("-o").arg(&merged).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), whole);
    assert_eq!(
        std::fs::read_to_string(dir.join("sweep.csv")).unwrap(),
        whole
    );
    // a slice missing: exit code 2 and the runs it held
    let out = std::process::Command::new(BIN)
        .arg("sweep-merge")
        .arg(dir.join("sweep.shard-1-of-4.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("4 of 6 runs missing (run 1, 2, 3, 5)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

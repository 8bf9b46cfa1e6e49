//! HTML reports: each expected chart is present, sections the run did not model are
//! absent, the file is self-contained and small; and, where a Chromium binary exists,
//! the page loads in headless Chromium without errors with every chart in its DOM.
//! Without Chromium that test prints why and passes, unless
//! `FABRICSIM_REQUIRE_CHROMIUM` is set (CI), when it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabricsim::backend::{Sample, Series};
use fabricsim::config::{self, Fidelity};
use fabricsim::report::{html, Report};
use fabricsim::run::{self, RunOptions};
use fabricsim::sweep;

const TEN_MB: usize = 10 * 1024 * 1024;

fn detailed(path: &str, fidelity: Option<Fidelity>) -> (config::Scenario, Report) {
    let s = config::load(Path::new(path)).expect("example validates");
    let opts = RunOptions {
        fidelity,
        detail: true,
        ..RunOptions::default()
    };
    let r = run::run(&s, &opts).expect("example runs");
    (s, r)
}

fn has_chart(page: &str, id: &str) -> bool {
    page.contains(&format!("<svg id=\"{id}\""))
}

fn assert_self_contained(page: &str) {
    assert!(page.len() < TEN_MB, "report is {} bytes", page.len());
    assert!(!page.contains("<script"), "no scripts");
    assert!(!page.contains("https://"), "no remote resources");
    for attr in ["src=", "href="] {
        assert!(!page.contains(attr), "no external {attr}");
    }
    // the only http:// strings are XML namespaces
    let stripped = page
        .replace("http://www.w3.org/2000/svg", "")
        .replace("http://www.w3.org/1999/xhtml", "");
    assert!(!stripped.contains("http://"), "no remote resources");
}

#[test]
fn flow_report_of_the_oversubscribed_all_to_all_has_every_chart() {
    let (s, r) = detailed("examples/alltoall-oversubscribed.toml", None);
    let page = html::render(&r, Some(&s));
    assert_self_contained(&page);
    for id in [
        "chart-busbw",
        "chart-fct-cdf",
        "chart-link-util",
        "chart-traffic-matrix",
    ] {
        assert!(has_chart(&page, id), "missing {id}");
    }
    assert!(page.contains("<title id=\"chart-fct-cdf-title\">Flow completion time CDF</title>"));
    // p50/p99/p99.9 marked on the CDF
    for p in ["p50 ", "p99 ", "p99.9 "] {
        assert!(page.contains(&format!(">{p}")), "CDF marker {p}");
    }
    // the summary names the fabric and the ignored setting
    assert!(page.contains("roce, 100Gbps links"));
    assert!(page.contains("cluster.nvlink_bandwidth"));
    // the flow backend samples no series: that section is omitted, not empty
    assert!(!page.contains("sec-series") && !page.contains("chart-series-"));
    // 32 hosts: one host per cell, 32 x 32, diagonal empty (no self traffic)
    let m = r.traffic_matrix.as_ref().unwrap();
    assert_eq!((m.hosts_per_cell, m.bytes.len()), (1, 32));
    assert_eq!(m.bytes[3][3], 0);
    assert!(m.bytes[0][1] > 0);
    let tl = r.link_timeline.as_ref().unwrap();
    assert!(tl.links.len() <= 32 && !tl.links.is_empty());
    assert!(tl.links.iter().all(|l| l.utilization.len() == 100));
    // an oversubscribed uplink is saturated at some point
    let peak = tl
        .links
        .iter()
        .flat_map(|l| &l.utilization)
        .fold(0.0f64, |a, &b| a.max(b));
    assert!(peak > 0.9, "peak utilization {peak}");
    let cdf = r.fct_cdf.as_ref().unwrap();
    assert!(cdf.len() <= 200 && cdf.len() > 10);
    assert!(cdf.windows(2).all(|w| w[0].fct_us <= w[1].fct_us));
    assert_eq!(cdf.last().unwrap().fraction, 1.0);
}

#[test]
fn detail_sections_leave_the_json_schema_unchanged_when_off() {
    let s = config::load(Path::new("examples/alltoall-oversubscribed.toml")).unwrap();
    let plain = run::run(&s, &RunOptions::default()).unwrap();
    let json = plain.to_json();
    for k in ["fct_cdf", "traffic_matrix", "link_timeline", "\"series\""] {
        assert!(!json.contains(k), "{k} must be absent by default");
    }
    let (_, detailed) = detailed("examples/alltoall-oversubscribed.toml", None);
    // same results with and without the opt-in timeline
    assert_eq!(plain.collectives, detailed.collectives);
    assert_eq!(plain.flows, detailed.flows);
    assert!(detailed.to_json().contains("\"traffic_matrix\""));
}

#[test]
fn analytical_report_omits_what_it_does_not_model() {
    let (s, r) = detailed(
        "examples/allreduce-leaf-spine.toml",
        Some(Fidelity::Analytical),
    );
    let page = html::render(&r, Some(&s));
    assert_self_contained(&page);
    assert!(has_chart(&page, "chart-busbw"));
    for id in ["chart-fct-cdf", "chart-link-util", "chart-traffic-matrix"] {
        assert!(!has_chart(&page, id), "{id} must be omitted");
    }
    for sec in ["sec-fct", "sec-links", "sec-matrix", "sec-series"] {
        assert!(!page.contains(sec), "{sec} must be omitted");
    }
    // one line per collective, one marker per size
    let sizes = r.collectives.len();
    assert_eq!(page.matches("<circle ").count(), sizes);
}

fn sweep_page() -> String {
    let path = "examples/alltoall-oversubscribed.toml";
    let text = std::fs::read_to_string(path).unwrap();
    let axes = vec![sweep::parse_set("fabric.link_rate=100Gbps,200Gbps,400Gbps").unwrap()];
    let runs = sweep::run(
        path,
        &text,
        &axes,
        &RunOptions {
            fidelity: Some(Fidelity::Analytical),
            ..RunOptions::default()
        },
        0,
        &|_| {},
    )
    .unwrap();
    sweep::html(path, &axes, &runs)
}

#[test]
fn sweep_report_plots_the_figure_of_merit_per_parameter() {
    let page = sweep_page();
    assert_self_contained(&page);
    assert!(has_chart(&page, "chart-sweep-fabric-link-rate"));
    assert!(has_chart(&page, "chart-busbw"));
    assert!(!has_chart(&page, "chart-fct-cdf"));
}

#[test]
fn sampled_series_get_one_chart_per_kind() {
    // the packet backend fills RunOutput.series; the report renders whatever exists
    let (s, mut r) = detailed("examples/alltoall-oversubscribed.toml", None);
    let series = |name: &str, k: f64| Series {
        name: name.into(),
        samples: (0..50)
            .map(|i| Sample {
                t_us: i as f64,
                value: k * i as f64,
            })
            .collect(),
    };
    r.series = vec![
        series("queue_bytes link 12 (sw0 -> sw1)", 100.0),
        series("queue_bytes link 13 (sw0 -> sw2)", 50.0),
        series("pfc_pauses link 12", 1.0),
        series("ecn_marks link 13", 2.0),
    ];
    let page = html::render(&r, Some(&s));
    for id in [
        "chart-series-queue-bytes",
        "chart-series-pfc-pauses",
        "chart-series-ecn-marks",
    ] {
        assert!(has_chart(&page, id), "missing {id}");
    }
    assert!(page.contains("sec-series"));
}

fn compare_page() -> String {
    let (_, a) = detailed("examples/alltoall-oversubscribed.toml", None);
    let (_, b) = detailed(
        "examples/dragonfly-alltoall.toml",
        Some(Fidelity::Analytical),
    );
    html::render_compare(&[a, b], &["A.toml".into(), "B.toml".into()])
}

#[test]
fn compare_report_overlays_busbw_and_the_cdfs_that_exist() {
    let page = compare_page();
    assert_self_contained(&page);
    assert!(has_chart(&page, "chart-busbw"));
    // only A (flow) has a CDF; the chart is there, with one line
    assert!(has_chart(&page, "chart-fct-cdf"));
    assert!(page.contains("<title>A.toml</title>") && !page.contains("<title>B.toml</title>"));
    assert!(page.contains("B/A busbw"));
}

#[test]
fn the_cli_writes_the_report_for_run_demo_and_collective() {
    let dir = scratch("cli");
    let bin = env!("CARGO_BIN_EXE_fabricsim");
    let cases: [(&str, Vec<&str>); 2] = [
        (
            "run",
            vec![
                "run",
                "examples/alltoall-oversubscribed.toml",
                "--fidelity",
                "analytical",
            ],
        ),
        (
            "collective",
            vec![
                "collective",
                "allreduce",
                "--preset",
                "dgx-a100-hdr",
                "--nodes",
                "4",
                "-b",
                "1M",
                "-e",
                "16M",
                "--fidelity",
                "flow",
            ],
        ),
    ];
    for (name, args) in cases {
        let out = dir.join(format!("{name}.html"));
        let st = Command::new(bin)
            .args(&args)
            .arg("--report")
            .arg(&out)
            .arg("--quiet")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "{name}");
        let page = std::fs::read_to_string(&out).unwrap();
        assert!(has_chart(&page, "chart-busbw"), "{name}");
    }
    let help = Command::new(bin).args(["demo", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--report"));
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fabricsim-report-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A Chromium binary: `$CHROMIUM`, else the first of the usual names on `PATH`.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome-headless-shell",
        "headless_shell",
    ];
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs headless Chromium on `url` with `extra` flags; returns (stdout, stderr).
fn headless(bin: &Path, url: &str, extra: &[String], profile: &Path) -> (String, String) {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut so, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut se, &mut s).ok();
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (t_out.join().unwrap(), t_err.join().unwrap())
}

#[test]
fn the_report_loads_in_headless_chromium_with_every_chart() {
    let Some(bin) = chromium() else {
        // CI sets FABRICSIM_REQUIRE_CHROMIUM=1 so a missing browser fails loudly there.
        assert!(
            std::env::var_os("FABRICSIM_REQUIRE_CHROMIUM").is_none(),
            "FABRICSIM_REQUIRE_CHROMIUM is set but no Chromium binary was found"
        );
        eprintln!(
            "SKIPPED: no Chromium binary found (set CHROMIUM or install Debian's `chromium`)"
        );
        return;
    };
    let dir = scratch("chromium");
    let (s, r) = detailed("examples/alltoall-oversubscribed.toml", None);
    let page = html::render(&r, Some(&s));
    let sweep = sweep_page();
    let cases = [
        (
            "report",
            page,
            vec![
                "chart-busbw",
                "chart-fct-cdf",
                "chart-link-util",
                "chart-traffic-matrix",
            ],
        ),
        (
            "sweep",
            sweep,
            vec!["chart-sweep-fabric-link-rate", "chart-busbw"],
        ),
        (
            "compare",
            compare_page(),
            vec!["chart-busbw", "chart-fct-cdf"],
        ),
    ];
    for (name, page, ids) in cases {
        // as HTML, the way a user opens it
        let html_path = dir.join(format!("{name}.html"));
        std::fs::write(&html_path, &page).unwrap();
        let url = format!("file://{}", html_path.display());
        let profile = dir.join(format!("profile-{name}"));
        let (dom, log) = headless(&bin, &url, &["--dump-dom".to_string()], &profile);
        assert!(
            dom.contains("<body"),
            "{name}: no DOM dumped; chromium said:\n{log}"
        );
        for id in &ids {
            assert!(
                dom.contains(&format!("id=\"{id}\"")),
                "{name}: {id} not in the DOM"
            );
        }
        for bad in [
            "Uncaught",
            "SyntaxError",
            "ReferenceError",
            "Failed to load resource",
        ] {
            assert!(
                !log.contains(bad),
                "{name}: {bad} in chromium's log:\n{log}"
            );
        }
        // as XHTML: Chromium's strict XML parser reports any malformed markup
        let x_path = dir.join(format!("{name}.xhtml"));
        std::fs::write(&x_path, &page).unwrap();
        let (xdom, xlog) = headless(
            &bin,
            &format!("file://{}", x_path.display()),
            &["--dump-dom".to_string()],
            &profile,
        );
        assert!(
            !xdom.contains("parsererror"),
            "{name}: not well-formed:\n{xdom:.2000}\n{xlog}"
        );
        for id in &ids {
            assert!(
                xdom.contains(&format!("id=\"{id}\"")),
                "{name}: {id} not in the XHTML DOM"
            );
        }
        // and it renders to a non-trivial image
        let png = dir.join(format!("{name}.png"));
        headless(
            &bin,
            &url,
            &[
                format!("--screenshot={}", png.display()),
                "--window-size=1000,2400".to_string(),
                "--hide-scrollbars".to_string(),
            ],
            &profile,
        );
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(size > 20_000, "{name}: screenshot is {size} bytes");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn training_report_has_the_step_breakdown_mfu_and_fault_table() {
    // Issue 15: the training report lacked what the terminal prints. The
    // page's figures are the report's: step time, MFU, the operation kinds and
    // one row per fault with its slowdown.
    let (s, r) = detailed("examples/training-faults.toml", Some(Fidelity::Analytical));
    let t = r.training.as_ref().expect("a training report");
    let page = html::render(&r, Some(&s));
    assert_self_contained(&page);
    assert!(page.contains("<section id=\"sec-training\">"));
    assert!(page.contains(&format!("{:.1}%", t.mfu * 100.0)), "MFU");
    for o in &t.breakdown {
        assert!(page.contains(&format!("<td>{}</td>", o.op)), "{}", o.op);
    }
    assert_eq!(t.faults.len(), 3);
    for f in &t.faults {
        assert!(page.contains(&f.name), "{}", f.name);
        assert!(page.contains(&format!("{:.3}×", f.slowdown)));
    }
    let (s, r) = detailed(
        "examples/inference-llama2-70b.toml",
        Some(Fidelity::Analytical),
    );
    let page = html::render(&r, Some(&s));
    assert!(page.contains("<section id=\"sec-inference\">"));
    assert!(page.contains("time per output token"));
}

#[test]
fn a_packet_report_samples_its_ports_without_being_asked_and_shows_the_traffic() {
    // Issue 15: a packet-level report of a traffic scenario showed the FCT CDF
    // only, because sampling was off unless the file set sample_interval and
    // traffic runs kept no matrix. The example sets neither.
    let text = std::fs::read_to_string("examples/incast-roce-pfc-dcqcn.toml").unwrap();
    assert!(!text.contains("sample_interval"));
    let (s, r) = detailed("examples/incast-roce-pfc-dcqcn.toml", None);
    assert_eq!(r.fidelity, "packet");
    let page = html::render(&r, Some(&s));
    assert_self_contained(&page);
    assert!(has_chart(&page, "chart-series-queue-bytes"), "queue series");
    assert!(has_chart(&page, "chart-traffic-matrix"), "traffic matrix");
    // the incast's bottleneck (the port into GPU 0's NIC) is among the series
    assert!(
        r.series
            .iter()
            .any(|x| x.name.starts_with("queue_bytes") && x.name.contains("-> nic 0")),
        "{:?}",
        r.series.iter().map(|x| &x.name).collect::<Vec<_>>()
    );
    // and the JSON of a run without a report is unchanged: no series
    let plain = run::run(&s, &RunOptions::default()).unwrap();
    assert!(plain.series.is_empty() && plain.traffic_matrix.is_none());
}

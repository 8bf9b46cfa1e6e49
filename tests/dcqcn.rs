//! DCQCN as ConnectX NICs run it (issue 13) and the RoCE defaults that do not
//! fire where hardware would not: fair convergence on a 40 Gb/s bottleneck,
//! a 16:1 incast under PFC + DCQCN against PFC alone, a 127 → 1 PFC incast
//! on a k = 8 fat-tree without a timeout, and the new keys' error paths.
//! The law's worked steps (a first CNP halves the rate; five timer events
//! recover 20 → 39.375 of 40 Gb/s) are unit tests beside the law
//! (`src/backend/packet/cc/dcqcn.rs`). Small fabrics, fast in debug.

mod common;
use common::example;

use fabricsim::backend::packet::{
    self, CongestionControl, DcqcnParams, DcqcnProfile, Ecn, FlowControl, PacketConfig, PacketStats,
};
use fabricsim::backend::RunOutput;
use fabricsim::config;
use fabricsim::dag::Dag;
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, Topology, TopologySpec};
use fabricsim::units::{Rate, SimTime};

/// `hosts` hosts of one GPU and one NIC behind one switch, `rate` links.
fn single_switch(hosts: u32, rate: Rate) -> Topology {
    let cluster = ClusterSpec {
        hosts,
        gpus_per_host: 1,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(250),
    };
    let fabric = FabricLinkSpec {
        link_rate: rate,
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(500),
        ..Default::default()
    };
    build(&cluster, &fabric, &TopologySpec::SingleSwitch).unwrap()
}

fn run(dag: &Dag, topo: &Topology, cfg: &PacketConfig) -> (RunOutput, PacketStats) {
    let (out, st) = packet::run_detailed(dag, topo, cfg).expect("run completes");
    st.check_conservation().unwrap();
    assert_eq!(out.fabric.bytes_delivered, dag.transfer_bytes());
    (out, st)
}

fn series(out: &RunOutput, kind: &str, name: &str) -> Vec<(f64, f64)> {
    out.series
        .iter()
        .find(|s| s.name.starts_with(kind) && s.name.contains(name))
        .unwrap_or_else(|| panic!("no {kind} series for {name}"))
        .samples
        .iter()
        .map(|s| (s.t_us, s.value))
        .collect()
}

fn mean_between(s: &[(f64, f64)], from: f64, to: f64) -> f64 {
    let v: Vec<f64> = s
        .iter()
        .filter(|(t, _)| *t >= from && *t <= to)
        .map(|x| x.1)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// N long flows into one receiver over a 40 Gb/s single switch, under the
/// paper's DCQCN parameters and RED settings at 40 Gb/s (Zhu et al., SIGCOMM
/// 2015, §6: Kmin 5 KB, Kmax 200 KB, Pmax 1%), PFC on, all flows starting
/// together at line rate. Flows long enough to overlap for > 10 ms (60 MB over
/// the bottleneck). Returns the run and its statistics.
fn flows_on_40g(n: u32) -> (RunOutput, PacketStats) {
    flows_on_40g_with(
        n,
        DcqcnParams::paper(Rate::gbps(40)),
        PacketConfig::default().seed,
    )
}

/// [`flows_on_40g`] with the DCQCN parameters `p`; the switch's RED
/// settings stay the paper's whatever `p` is (one scenario, two NIC laws);
/// `seed` draws the RED marks.
fn flows_on_40g_with(n: u32, p: DcqcnParams, seed: u64) -> (RunOutput, PacketStats) {
    let line = Rate::gbps(40);
    let topo = single_switch(n + 1, line);
    let mut d = Dag::new();
    d.begin_op("fair");
    for s in 1..=n {
        d.transfer(GpuId(s), GpuId(0), 60_000_000 / n as u64, &[]);
    }
    let cfg = PacketConfig {
        header_bytes: 82,
        ack_bytes: 86,
        cnp_bytes: 98,
        port_buffer_bytes: 1 << 20,
        flow_control: FlowControl::Pfc {
            xoff: 512 << 10,
            xon: (512 << 10) - 2 * 4178,
            headroom: 64 << 10,
        },
        ecn: Some(Ecn {
            kmin: 5_000,
            kmax: 200_000,
            pmax: 0.01,
        }),
        cc: CongestionControl::Dcqcn(p),
        sample_interval: SimTime::from_us(50),
        series_ports: 1000,
        series_max_samples: 4096,
        seed,
        ..PacketConfig::default()
    };
    run(&d, &topo, &cfg)
}

/// When the first of the flows of `out` finished, µs.
fn first_done(out: &RunOutput) -> f64 {
    out.transfer_fct
        .iter()
        .map(|t| t.as_us())
        .fold(f64::MAX, f64::min)
}

/// Asserts the issue's target for N flows of [`flows_on_40g_with`] under
/// each of `profiles` and each of `seeds`: after 5 ms every flow within 10%
/// of C/N and the bottleneck ≥ 90% busy. All runs (and print their figures)
/// before the first assertion.
fn flows_on_40g_converge(n: u32, profiles: &[DcqcnProfile], seeds: &[u64]) {
    flows_on_40g_check(n, profiles, seeds, true)
}

/// Asserts the part of the issue's target that holds on every seed for N
/// flows of [`flows_on_40g_with`] under each of `profiles`: DCQCN acts and
/// the bottleneck is ≥ 90% busy after 5 ms. All runs (and print their
/// figures, shares included) before the first assertion.
fn flows_on_40g_keep_busy(n: u32, profiles: &[DcqcnProfile], seeds: &[u64]) {
    flows_on_40g_check(n, profiles, seeds, false)
}

/// Runs every (profile, seed), then asserts each (the fair shares only when
/// `fair`).
fn flows_on_40g_check(n: u32, profiles: &[DcqcnProfile], seeds: &[u64], fair: bool) {
    // Expected (issue 13, after Zhu et al., SIGCOMM 2015, §6.1: DCQCN flows
    // sharing a 40 Gb/s bottleneck converge to equal shares with the link
    // fully used).
    let checks: Vec<Box<dyn Fn()>> = profiles
        .iter()
        .flat_map(|&p| {
            seeds
                .iter()
                .map(move |&seed| flows_on_40g_measure(n, p, seed, fair))
        })
        .collect();
    checks.iter().for_each(|check| check());
}

/// Runs [`flows_on_40g_with`] under `profile`, prints its figures and
/// returns the check of the issue's target on them (the fair shares only
/// when `fair`).
fn flows_on_40g_measure(n: u32, profile: DcqcnProfile, seed: u64, fair: bool) -> Box<dyn Fn()> {
    let (out, st) = flows_on_40g_with(n, DcqcnParams::profile(profile, Rate::gbps(40)), seed);
    let n_p = format!("N = {n}, {}, seed {seed}", profile.name());
    let (from, to) = (5_000.0, first_done(&out));
    assert!(to > from + 2_000.0, "{n_p}: flows overlap only to {to} us");
    let shares: Vec<f64> = (1..=n)
        .map(|s| {
            mean_between(
                &series(&out, "utilization", &format!("(nic {s}.0 ->")),
                from,
                to,
            )
        })
        .collect();
    let busy = mean_between(&series(&out, "utilization", "-> nic 0.0)"), from, to);
    let q: Vec<f64> = series(&out, "queue_bytes", "-> nic 0.0)")
        .into_iter()
        .filter(|(t, _)| (from..=to).contains(t))
        .map(|x| x.1)
        .collect();
    let above_kmax = q.iter().filter(|&&b| b > 200_000.0).count() as f64 / q.len() as f64;
    eprintln!(
        "{n_p}: shares {shares:.3?} of 40G over [{from:.0}, {to:.0}] us, bottleneck busy {busy:.3}, queue mean {:.0} B, max {:.0} B, above Kmax in {above_kmax:.2} of the samples; CNPs {}, cuts {}, pauses {}",
        q.iter().sum::<f64>() / q.len() as f64,
        q.iter().cloned().fold(0.0, f64::max),
        st.cnps_sent,
        st.dcqcn_rate_cuts,
        st.pfc_pause_frames
    );
    let cnps = st.cnps_sent;
    Box::new(move || {
        assert!(cnps > 0, "{n_p}: DCQCN never acted");
        let share = 1.0 / n as f64;
        for (i, s) in shares.iter().enumerate().filter(|_| fair) {
            assert!(
                (s - share).abs() <= 0.1 * share,
                "{n_p}: flow {} at {s:.3} of the line, fair {share:.3}",
                i + 1
            );
        }
        assert!(busy >= 0.9, "{n_p}: bottleneck busy {busy:.3}");
    })
}

/// The seeds (RED's marking draws) on which the 40G fairness tests run.
const SEEDS: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

#[test]
fn two_flows_on_40g_keep_the_link_busy_on_every_seed() {
    // What holds on every seed of RED's draws, for the profile NICs run
    // (`mellanox`, the default: issue 13 asks for DCQCN "as NICs run it")
    // and the paper's: DCQCN acts and the bottleneck stays ≥ 90% busy after
    // 5 ms. The fair shares are the target of
    // `two_flows_on_40g_converge_on_every_seed` (ignored): met on most
    // seeds, unmet on the ones its doc lists (the law keeps a start-up
    // split), so which single seed meets it is the realization's luck, not
    // a claim (this test used to check seed 1; with issue 16's one random
    // stream per node, seed 1 is another realization, on which the paper's
    // law keeps its split). Measured: busy 0.977-0.997 (mellanox) and
    // 0.974-0.999 (paper) on seeds 1-8 (one stream for the run, before
    // issue 16: 0.970-0.999 and 0.960-0.998).
    flows_on_40g_keep_busy(2, &[DcqcnProfile::Mellanox, DcqcnProfile::Paper], &SEEDS);
}

/// Unmet on three of eight seeds (mellanox) and four (paper), and not by a
/// modelling error found: the law keeps a start-up split. Measured (release,
/// `cargo test --release --test dcqcn two_flows -- --include-ignored
/// --nocapture`, one random stream per node, issue 16), shares over [5 ms,
/// first done]: mellanox seeds 1–8 pass but 4 (0.593 / 0.388), 5 (0.350 /
/// 0.634) and 8 (0.590 / 0.402); paper fails 1 (0.554 / 0.442), 6 (0.555 /
/// 0.438), 7 (0.441 / 0.534) and 8 (0.432 / 0.568). With one stream for the run (before issue
/// 16's M1): mellanox failed 4 (0.415 / 0.574) and 6 (0.400 / 0.596), paper
/// 2 (0.391 / 0.595), 4 (0.528 / 0.432), 5 (0.443 / 0.559) and 8 (0.371 /
/// 0.613); the traces below are of that generator.
///
/// Mellanox, traced on seed 6: the split (0.36 / 0.52 of the line) is set in
/// the first millisecond and holds for 40 ms and 446 cuts with flows 4× as
/// long (0.403 / 0.596). Each flow is cut every ≈ 185 µs (RED's 1% draws at
/// the shared queue), shorter than the 300 µs increase timer that every cut
/// restarts, and 2 MB of byte counter takes ≈ 1 ms at these rates: so
/// between cuts there is seldom an increase, and without `clamp_tgt_rate`
/// (NVIDIA's default 0, the HPCC simulator's `CheckRateDecreaseMlx`) a cut
/// sets R_T ← R_C only after an increase. R_T stays at its start-up value,
/// different per flow, and each flow's R_C keeps recovering towards its own
/// target. With the byte counter off (2^40 B) the split stays (0.425 /
/// 0.560); with `clamp_tgt_rate = true` the flows are equal (0.195 / 0.195)
/// but the link is 0.39 busy (R_AI = 5 Mb/s per 300 µs refills it in tens of
/// ms). Paper, seed 8: 14 CNPs in all, the start-up cuts leave 0.29 / 0.50 of
/// the line and the queue empty, so no mark comes again until the additive
/// increase (40 Mb/s per 55 µs, equal for both) refills the link at ≈ 10
/// ms: the split is never cut away before the flows end; with 4× longer
/// flows the paper's law converges (seed 8: 0.485 / 0.511 over [5, 47.7] ms;
/// seed 2: 0.434 / 0.561) while mellanox's does not.
#[test]
#[ignore = "unmet target of issue 13 on 3 of 8 seeds (mellanox) and 4 (paper): the law keeps its start-up split, see the doc comment"]
fn two_flows_on_40g_converge_on_every_seed() {
    flows_on_40g_converge(2, &[DcqcnProfile::Mellanox, DcqcnProfile::Paper], &SEEDS);
}

#[test]
fn four_flows_on_40g_converge_to_fair_shares_and_keep_the_link_busy() {
    // Expected: issue 13's target (fair share within 10%, bottleneck >= 90%
    // busy after 5 ms) with the mellanox profile, the default, whose byte
    // counter is rpg_byte_reset = 32767 in 64-byte units, B = 2,097,088 B
    // (Google Isekai, `isekai/host/rdma/rdma_roce_cc_dcqcn.cc`: an increase
    // event when `byte_count >= byte_reset * 64`; the unit's sources in
    // `DcqcnParams::mellanox`).
    // Measured (byte_counter = 2097088, before it became the default):
    // shares 0.243 / 0.249 / 0.249 / 0.253 over [5, 12.6] ms, busy 0.994,
    // queue mean 65 KB, max 209 KB, above Kmax in 0.03 of the samples, 575
    // CNPs, no PAUSE. At 10 Gb/s a 2 MB counter fires every 1.6 ms, so R_C
    // climbs by the timer's steps and R_T <- R_C at each cut after a timer
    // increase ratchets R_T down to the flows' share.
    // The other reading, 32,767 bytes (`[fabric.dcqcn] byte_counter =
    // 32767`), misses the target: shares 0.282 / 0.110 / 0.283 / 0.152, busy
    // 0.820, queue mean 374 KB and max 1.51 MB, 4,128 CNPs, 73 PAUSE frames.
    // Traced per queue pair: each flow is cut nine times in its first 71 µs
    // (40 -> 0.19 Gb/s, α ≈ 0.9) with R_T kept at 40 (no increase between the
    // cuts, clamp_tgt_rate = 0); the 300 µs timer's fast-recovery step raises
    // R_C to 20, then a byte-counter event per 32 KB (26 µs at 10 Gb/s, 11×
    // as often as the timer) halves the gap to R_T eight times in 50 µs, so
    // all four flows are back at ≈ 39.9 Gb/s with the queue far above Kmax,
    // and R_T stays at 32 to 37 Gb/s for the whole run instead of C/4.
    // Every seed of SEEDS meets it: the worst flow is 0.234 (seed 3).
    flows_on_40g_converge(4, &[DcqcnProfile::Mellanox], &SEEDS);
}

#[test]
#[ignore = "unmet by the paper's law: 0.882 busy, its closed form from a synchronized line-rate start gives 0.88, and one flow at 0.215 of the line (see the comment)"]
fn four_flows_on_40g_under_the_papers_profile_converge_and_keep_the_link_busy() {
    // Paper profile: shares 0.233 / 0.215 / 0.226 / 0.210 over [5, 15.8] ms,
    // busy 0.882, 52 CNPs (before issue 16's event order: 0.218 / 0.226 /
    // 0.230 / 0.212 over [5, 16] ms, busy 0.883, 52 CNPs; the traces below
    // are of that run). Why (traced per queue pair, rate and α at every cut):
    // the four flows start at 40 Gb/s together and the hot port's queue
    // reaches 550 KB by 100 µs, above Kmax (200 KB), so every packet is
    // marked; each flow gets a CNP every N = 50 µs and, α staying at 1 while
    // CNPs keep coming (α ← (1 − g) α + g), is halved five times (at 18, 68,
    // 118, 168 and 220 µs) with R_T ← R_C each time (the paper's cut): R_C =
    // 1.25 Gb/s, R_T = 2.5 Gb/s, 5 Gb/s in all, queue empty from 300 µs.
    // The law then recovers by five fast-recovery steps (275 µs) to R_T and
    // R_AI = 40 Mb/s per T = 55 µs (the 10 MB byte counter fires every 8+ ms
    // at these rates, so no hyper increase): back at C/4 at 0.5 ms + 7.5 /
    // 0.727 ms = 10.8 ms (first cut after start-up: 11.47 ms). Over [5, 10.8]
    // ms the link carries the ramp, 0.784 measured (closed form 0.79), and
    // 1.000 over (10.8, 16] ms: 0.883 over the window (closed form 0.88).
    // So the shortfall is the published law from a synchronized start, not
    // the mechanics (`four_flows_on_40g_recover_at_the_papers_additive_rate`
    // checks the ramp against the law); the issue's "after 5 ms" is shorter
    // than that law's recovery. The two-flow case passes because its
    // start-up queue (230 KB) costs two cuts, leaving R_T at C/2.
    flows_on_40g_converge(4, &[DcqcnProfile::Paper], &[1]);
}

#[test]
fn four_flows_on_40g_recover_at_the_papers_additive_rate_then_fill_the_link() {
    // Expected (the paper's law, Zhu et al. 2015 §3.1 and the parameters of
    // [`DcqcnParams::paper`]): after their start-up cuts the four flows are
    // in additive increase, each R_T growing by R_AI = 40 Mb/s every T = 55
    // µs and R_C following it (R_C ← (R_T + R_C) / 2 keeps it R_AI behind),
    // with no hyper increase (the 10 MB byte counter does not pass F = 5
    // before 40 ms at these rates). With the queue empty the bottleneck's
    // utilization is the sum of the rates, so it climbs at N · R_AI / T / C =
    // 4 × 40 Mb/s / 55 µs / 40 Gb/s = 0.0727 per ms; fitted over [2, 9] ms
    // (well inside the ramp, which the law ends at ≈ 10.8 ms), within 5%
    // (the steps are 20 Mb/s per flow, 0.2% of the slope over 7 ms). Once the
    // flows are back at C/4 (from 11.5 ms) the link is full: ≥ 0.99 busy.
    // Measured: slope 0.0728 per ms, busy 1.000 over [11.5, 16] ms.
    let (out, st) = flows_on_40g(4);
    let u = series(&out, "utilization", "-> nic 0.0)");
    let pts: Vec<(f64, f64)> = u
        .iter()
        .filter(|(t, _)| (2_000.0..=9_000.0).contains(t))
        .map(|&(t, v)| (t / 1e3, v))
        .collect();
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
        / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
    let p = DcqcnParams::paper(Rate::gbps(40));
    let want = 4.0 * p.rate_ai.0 as f64 / (p.rate_increase_interval.0 as f64 / 1e9) / 40e9;
    let busy = mean_between(&u, 11_500.0, first_done(&out));
    eprintln!(
        "ramp slope {slope:.4} per ms (law {want:.4}), busy after recovery {busy:.3}; CNPs {}",
        st.cnps_sent
    );
    assert!(
        (slope / want - 1.0).abs() <= 0.05,
        "slope {slope:.4} per ms, law {want:.4}"
    );
    assert!(busy >= 0.99, "busy {busy:.3} after recovery");
}

/// Runs a traffic scenario at packet level as the CLI does.
fn run_scenario(text: &str) -> (RunOutput, PacketStats) {
    let s = config::parse("test.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let topo = s.build_topology_for(config::Fidelity::Packet).unwrap();
    let config::WorkloadSpec::Traffic(t) = s.workload() else {
        panic!("traffic workload expected")
    };
    let mut dag = fabricsim::workload::traffic::generate(t, &topo).unwrap();
    fabricsim::workload::traffic::add_extra_flows(&mut dag, s.extra_flows());
    let cfg = fabricsim::run::packet_config(&s, s.seed());
    run(&dag, &topo, &cfg)
}

#[test]
#[ignore = "not reached with the example's ECN thresholds (4 KiB / 32 KiB at 400 Gb/s): 69% of PFC alone's goodput, victim 32.8x its ideal (traced: see the comment)"]
fn incast_16_to_1_under_pfc_and_dcqcn_keeps_85_percent_of_pfc_goodput_and_spares_the_victim() {
    // Expected (issue 13; Zhu et al. 2015 §6: DCQCN keeps an incast's
    // throughput while cutting PFC pauses): the shipped 16:1 incast of 4 MiB
    // per sender at 400 Gb/s moves its 64 MiB at >= 85% of the goodput of PFC
    // alone, and the victim flow finishes within 2× of its ideal.
    // Measured with the ConnectX defaults (byte counter 2,097,088 B, see
    // `DcqcnParams::mellanox`) and marking at dequeue, since a paced
    // packet's send time follows the rate: makespan 2.303 ms against 1.369
    // ms (0.59), victim 37.0× (873 µs), 1,547 CNPs, 1,820 PAUSE frames.
    // Under issue 16's event order (ties rotate, a random stream per
    // node): 272.4 Gb/s against PFC alone's 392.1 (0.69), victim 32.8×,
    // 1,582 CNPs; the traces below are of the earlier order.
    // The victim traced then (same method): 21 CNPs in 529-1059 µs, each
    // cuts (400 -> 0.50 Gb/s, α 1 -> 0.10, R_T kept at 400); the 300 µs
    // timer from the last cut raises R_C to 200 Gb/s at 1,359 µs and its
    // waiting packet leaves at once (its wake moved from 1,368.9 µs); it
    // ends at 1,373 µs. With `buffer` 1 MiB instead of 64 KiB (no sourced
    // value: a probe of what the victim needs) and NVIDIA's 150/1500 KB
    // thresholds the victim is spared (1.30×) but the incast ends at 1,798
    // µs (0.76 of PFC alone's 1,369); 2 MiB: 1.39×, 0.73. The
    // figures below, traces included, are from before (a paced packet kept
    // the gap of the rate in force when the previous one left): makespan 1.849 ms
    // against 1.369 ms (0.74), victim 42.5× its ideal (1.002 ms against
    // 23.6 µs; PFC alone's pause spreading gives 12.1×), 1,451 CNPs, 1,941
    // PAUSE frames.
    // The victim, traced per queue pair (every CNP with R_C, R_T and α; run
    // of the example with a temporary trace): it starts at 500 µs and its
    // packets wait in the spine's downlink to leaf 0, which it shares with
    // the incast flows from leaves 1 and 2 and which PFC holds paused above
    // Kmax (32 KiB) for as long as the incast's backlog lasts, so every one
    // of its packets is marked there: a queue it crosses, marked by the
    // backlog PFC spreads into it. It gets a CNP per packet it sends, 23 in
    // 516-1180 µs, and each cuts (one cut per 4 µs allows all of them):
    // R_C 400 -> 200 -> 106 -> 60 -> 35 -> ... -> 0.40 Gb/s, α decaying from
    // 1 to 0.05, R_T kept at 400 (no increase between the cuts,
    // clamp_tgt_rate = 0). Every cut restarts the 300 µs timer (the paper's
    // and the HPCC simulator's `CheckRateDecreaseMlx` reset alike) and 1 MiB
    // never reaches a 2 MB byte counter, so the first increase comes at
    // 1,480 µs (R_C 0.40 -> 200 Gb/s) and the next at 1,780 µs (300): the
    // flow ends at 1.50 ms + its remaining packets. So the law and its
    // parameters act as documented; what the run turns on is the example's
    // marking thresholds, far below the queue PFC holds.
    // With the byte counter read as 32,767 bytes (`[fabric.dcqcn]
    // byte_counter = 32767`): 2.544 ms, 0.54, victim 1.09× (its counter fires
    // every 8 packets and undoes each cut at once). Its incast start-up, traced
    // then: every packet the hot port sends is marked (it holds ≈ 636 KiB,
    // 15 ingress ports × XOFF), each sender gets a CNP every ≈ 14 µs, 30 cuts
    // in its first 337 µs (400 -> 1.8 Gb/s, fair share 25, R_T kept at 22).
    // Thresholds, same run (`fabricsim run` on the example with only
    // `ecn_kmin`/`ecn_kmax`/`ecn_pmax` added under [fabric]), default byte
    // counter: NVIDIA Onyx's lossless RoCE profile 150 KB / 1,500 KB (Onyx
    // `show roce`: "Min : 150", "Max : 1500", in KB; Cumulus Linux 5.x:
    // "1501500 bytes", read as the two run together) with the `roce`
    // default Pmax 0.2 (also the HPCC simulator's run.py value): 0.96,
    // victim 1.02×, both targets met; with Pmax 1.0: 0.85, victim 12.5×.
    // (Since send times follow the rate: 1.00, victim 11.8×, PFC alone's
    // figures: the cut senders no longer wait out a slow gap after their
    // recovery, the incast runs at line rate and PFC's backlog spreads to
    // the victim; Pmax 1.0: 0.85, 12.1×; 100/400 KiB: 0.84, 14.0×; byte
    // counter 32,767: 0.67, 1.12×; paper profile 0.46, 3.81×.)
    // No NVIDIA page found gives the marking probability, so turning the
    // test on needs the `roce` ECN defaults (config/packet.rs) settled from a
    // confirmed source: configuration outside this law, not a test knob.
    // The paper profile (`[fabric.dcqcn] profile = "paper"`) does worse:
    // 2.989 ms, 0.46, victim 3.88×.
    let (dq, dq_st) = run_scenario(&example("incast-roce-pfc-dcqcn.toml"));
    let (pfc, _) = run_scenario(&example("incast-roce-pfc-only.toml"));
    let incast_bytes = 16.0 * 4.0 * 1048576.0;
    let n = dq.transfer_fct.len();
    let incast_end = |o: &RunOutput| {
        o.transfer_fct[..n - 1]
            .iter()
            .map(|t| t.as_us())
            .fold(0.0, f64::max)
    };
    let (g_dq, g_pfc) = (
        incast_bytes / incast_end(&dq),
        incast_bytes / incast_end(&pfc),
    );
    let victim = dq.transfer_fct[n - 1].as_us() / dq.transfer_ideal[n - 1].as_us();
    eprintln!(
        "goodput DCQCN {:.1} Gb/s vs PFC alone {:.1} Gb/s ({:.2}); victim {victim:.2}x ideal; CNPs {}",
        g_dq * 8e-3,
        g_pfc * 8e-3,
        g_dq / g_pfc,
        dq_st.cnps_sent
    );
    assert!(victim <= 2.0, "victim {victim:.2}x its ideal");
    assert!(
        g_dq >= 0.85 * g_pfc,
        "goodput {:.2} of PFC alone",
        g_dq / g_pfc
    );
}

fn fat_tree_incast(cc: &str, senders: u32, bytes: &str) -> String {
    format!(
        r#"
[cluster]
nodes = 128
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "fat_tree"
k = 8
[fabric]
kind = "roce"
link_rate = "400Gbps"
buffer = "1MiB"
cc = "{cc}"
[workload]
kind = "traffic"
pattern = "incast"
senders = {senders}
receiver = 0
bytes = "{bytes}"
[simulation]
fidelity = "packet"
"#
    )
}

#[test]
fn a_127_to_1_pfc_incast_on_a_k8_fat_tree_never_times_out_with_the_default_transport() {
    // Expected (issue 13): with the RoCE defaults — the NIC's local-ACK
    // timeout NCCL sets, 4.096 µs × 2^20 ≈ 4.3 s (NCCL_IB_TIMEOUT = 20),
    // instead of the former 1.048 ms — a lossless PFC incast has zero
    // timeouts and zero retransmissions, with DCQCN and with PFC alone.
    // 127 × 1 MiB lasts 2.7 ms, longer than the former timeout. (The issue's
    // 65 timeouts were not reproduced on this configuration with the former
    // 1.048 ms RTO and 512 KiB window either: the test guards the default, it
    // does not re-create the failure.)
    // And the incast keeps issue 13's ≥ 85% of PFC alone's goodput under
    // DCQCN: the hot port's wire time alone, 127 MiB × 4174/4096 at 400 Gb/s,
    // is 2.714 ms. Measured: makespan 2.718 ms both ways, 0 timeouts. Before
    // a paced packet's send time followed the rate (it kept the gap of the
    // rate in force when the previous packet left: a sender cut to the
    // ConnectX floor of 1 Mb/s waited 4174 B × 8 / 1 Mb/s = 33.4 ms for its
    // next packet whatever its recovery), DCQCN took 34.120 ms (0.08).
    let mut makespan = [0.0; 2];
    for (i, cc) in ["dcqcn", "none"].into_iter().enumerate() {
        let (out, st) = run_scenario(&fat_tree_incast(cc, 127, "1MiB"));
        eprintln!(
            "127 -> 1, cc = {cc}: makespan {} timeouts {} retransmitted {} pauses {}",
            out.makespan, st.timeouts, st.retransmitted_packets, st.pfc_pause_frames
        );
        assert_eq!(st.timeouts, 0, "cc = {cc}");
        assert_eq!(st.retransmitted_packets, 0, "cc = {cc}");
        assert_eq!(st.drops_total(), 0, "cc = {cc}");
        makespan[i] = out.makespan.as_us();
    }
    let [dcqcn, pfc] = makespan;
    assert!(
        pfc >= 0.85 * dcqcn,
        "DCQCN at {:.2} of PFC alone's goodput ({dcqcn:.1} vs {pfc:.1} us)",
        pfc / dcqcn
    );
}

#[test]
fn a_run_ends_when_its_work_is_done_whatever_timers_are_pending() {
    // Expected: a time limit below the RTO (4.3 s) does not stop a run whose
    // work finishes in microseconds; nor do DCQCN's timers, still running for
    // the cut senders when the last ACK arrives.
    let text = fat_tree_incast("dcqcn", 15, "64KiB")
        .replace("[simulation]\n", "[simulation]\ntime_limit = \"10ms\"\n");
    let (out, st) = run_scenario(&text);
    assert!(out.makespan < SimTime::from_us(10_000), "{}", out.makespan);
    assert!(st.cnps_sent > 0, "DCQCN acted");
}

#[test]
fn bad_values_of_the_new_keys_are_refused_at_their_lines() {
    // Expected: each bad value names its key and the line it is on.
    let base = example("incast-roce-pfc-dcqcn.toml");
    let cases = [
        (
            "[fabric.dcqcn]\nprofile = \"cx9\"\n",
            "fabric.dcqcn.profile",
            "profile",
        ),
        (
            "[fabric.dcqcn]\nmin_dec_fac = 1.5\n",
            "fabric.dcqcn.min_dec_fac",
            "min_dec_fac",
        ),
        (
            "[fabric.dcqcn]\nrate_decrease_interval = \"soon\"\n",
            "fabric.dcqcn.rate_decrease_interval",
            "rate_decrease_interval",
        ),
        (
            "[fabric.dcqcn]\nclamp_tgt_rate = \"yes\"\n",
            "fabric.dcqcn.clamp_tgt_rate",
            "clamp_tgt_rate",
        ),
    ];
    for (table, field, key) in cases {
        let text = base.replace("[workload]", &format!("{table}\n[workload]"));
        let e = config::parse("bad.toml", &text).expect_err(field);
        let d = e
            .diagnostics
            .iter()
            .find(|d| d.field == field)
            .unwrap_or_else(|| panic!("{field}: {e}"));
        let line = text
            .lines()
            .position(|l| l.starts_with(key))
            .expect("key written")
            + 1;
        assert_eq!(d.line, line, "{field}: {d}");
    }
    // ecn_mark_at belongs to [fabric]
    let text = base.replacen(
        "transport = \"rdma\"",
        "transport = \"rdma\"\necn_mark_at = \"egress\"",
        1,
    );
    let e = config::parse("bad.toml", &text).expect_err("ecn_mark_at");
    let d = e
        .diagnostics
        .iter()
        .find(|d| d.field == "fabric.ecn_mark_at")
        .unwrap_or_else(|| panic!("{e}"));
    let line = text
        .lines()
        .position(|l| l.starts_with("ecn_mark_at"))
        .unwrap()
        + 1;
    assert_eq!(d.line, line, "{d}");
    assert!(d.expected.contains("dequeue"), "{d}");
}

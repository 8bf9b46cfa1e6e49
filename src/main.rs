//! The `fabricsim` command line: parse arguments, call the library, print.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::{Parser, Subcommand};

use fabricsim::backend::{ProgressHook, ProgressTick};
use fabricsim::check::compare::{self, CheckOptions};
use fabricsim::check::{calibrate, cluster, nccltests};
use fabricsim::collective::CollectiveOp;
use fabricsim::config::{self, ConfigError, Fidelity, Scenario};
use fabricsim::report::{self, Report};
use fabricsim::run::{self, RunOptions};
use fabricsim::sweep;
use fabricsim::units::parse_size;

#[derive(Parser)]
#[command(
    name = "fabricsim",
    version,
    about = "Simulate what a GPU cluster's network does to collectives and training steps.",
    after_help = "Examples:\n  fabricsim demo --report demo.html\n  fabricsim run examples/allreduce-leaf-spine.toml --fidelity flow\n  fabricsim collective allreduce --algo ring -b 1M -e 1G -f 4 --preset dgx-h100-ndr\n  fabricsim compare examples/allreduce-leaf-spine.toml examples/alltoall-oversubscribed.toml\n  fabricsim sweep examples/alltoall-oversubscribed.toml --set fabric.link_rate=100Gbps,200Gbps"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Output {
    /// Fidelity: analytical, flow or packet.
    #[arg(long, value_parser = parse_fidelity)]
    fidelity: Option<Fidelity>,
    /// Seed of the random generator (overrides the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write result.json, collectives.csv, flows.csv (and links.csv, queue_pairs.csv) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep per-link and, at packet level, per-queue-pair counters (in JSON, links.csv and queue_pairs.csv).
    #[arg(long)]
    links: bool,
    /// Write a self-contained HTML report with charts to this file.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Write the run as a timeline (Chrome trace-event JSON: GPUs' compute and sends, operations) to open in Perfetto (ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Worker threads for the scenario's independent simulations (each job alone, each fault alone), instead of simulation.threads; the results are the same for every count.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(fabricsim::config::MAX_THREADS)))]
    threads: Option<u32>,
    /// No progress bar on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// The cluster `check` and `calibrate` simulate.
#[derive(clap::Args, Clone)]
struct BaseArgs {
    /// Cluster and fabric from this scenario file (its workload is replaced).
    #[arg(long, conflicts_with = "preset")]
    scenario: Option<PathBuf>,
    /// A built-in cluster: dgx-h100-ndr, dgx-h100-roce, dgx-a100-hdr (takes the measured nodes and GPUs per node unless --nodes). Default: the file's `# preset:` line, else dgx-h100-ndr.
    #[arg(long)]
    preset: Option<String>,
    /// Override the number of nodes.
    #[arg(long)]
    nodes: Option<u32>,
    /// Fidelity: analytical, flow (default) or packet.
    #[arg(long, value_parser = parse_fidelity)]
    fidelity: Option<Fidelity>,
    #[arg(long, default_value = "auto", help = algo_help())]
    algo: String,
    /// Compare the in-place columns (default: out-of-place).
    #[arg(long)]
    in_place: bool,
    /// KEY=VALUE override of the scenario (as sweep --set, one value).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the built-in demo: 64 DGX H100 nodes on rail-optimized NDR InfiniBand, hierarchical all-reduce 1 MiB..1 GiB.
    #[command(after_help = "Example:\n  fabricsim demo --fidelity analytical --json")]
    Demo {
        #[command(flatten)]
        out: Output,
    },
    /// Run a scenario file.
    #[command(
        after_help = "Example:\n  fabricsim run examples/allreduce-leaf-spine.toml --fidelity flow --out results/"
    )]
    Run {
        /// The scenario (TOML).
        scenario: PathBuf,
        #[command(flatten)]
        out: Output,
    },
    /// nccl-tests-style sweep of one collective: size, count, type, time, algbw, busbw.
    #[command(
        after_help = "Example:\n  fabricsim collective allreduce --algo ring -b 8M -e 1G -f 2 --preset dgx-h100-ndr --nodes 16"
    )]
    Collective {
        /// allreduce, allgather, reducescatter, broadcast or alltoall.
        op: String,
        #[arg(long, default_value = "auto", help = algo_help())]
        algo: String,
        /// Smallest size (nccl-tests -b), e.g. 8, 1K, 1M.
        #[arg(short = 'b', long = "minbytes", default_value = "1M")]
        min: String,
        /// Largest size (nccl-tests -e).
        #[arg(short = 'e', long = "maxbytes", default_value = "1G")]
        max: String,
        /// Factor between sizes (nccl-tests -f).
        #[arg(short = 'f', long = "stepfactor", default_value_t = 2)]
        factor: u64,
        /// Cluster and fabric from this scenario file (its workload is replaced).
        #[arg(long, conflicts_with = "preset")]
        scenario: Option<PathBuf>,
        /// A built-in cluster: dgx-h100-ndr, dgx-h100-roce, dgx-a100-hdr.
        #[arg(long)]
        preset: Option<String>,
        /// Override the number of nodes.
        #[arg(long)]
        nodes: Option<u32>,
        /// Parallel channels (NCCL's; default one per NIC across hosts), 1..=64.
        #[arg(long)]
        channels: Option<u32>,
        /// NCCL protocol: auto, simple, ll128 or ll (NCCL_PROTO).
        #[arg(long)]
        protocol: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Run several scenarios and lay their headline figures side by side (ratios to the first).
    #[command(
        after_help = "Example:\n  fabricsim compare examples/allreduce-leaf-spine.toml examples/allgather-fat-tree.toml --report cmp.html"
    )]
    Compare {
        /// The scenarios (TOML); the first is the baseline A.
        #[arg(num_args = 2.., required = true)]
        scenarios: Vec<PathBuf>,
        /// Fidelity for every scenario (default: each file's).
        #[arg(long, value_parser = parse_fidelity)]
        fidelity: Option<Fidelity>,
        /// Seed for every scenario (default: each file's).
        #[arg(long)]
        seed: Option<u64>,
        /// Write an HTML report with overlaid busbw curves and FCT CDFs.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// No progress bar on stderr.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Run the cross product of parameter values in parallel: one CSV row per run.
    #[command(
        after_help = "Example:\n  fabricsim sweep examples/alltoall-oversubscribed.toml --set fabric.link_latency=100ns,500ns,1us --set cluster.nodes=16,32 --out sweep/ --report sweep.html"
    )]
    Sweep {
        /// The base scenario (TOML).
        scenario: PathBuf,
        /// KEY=V1,V2,… : a dotted scenario key and its values (repeat for a cross product).
        #[arg(long = "set", value_name = "KEY=VALUES", required = true)]
        sets: Vec<String>,
        /// Fidelity for every run (default: the file's).
        #[arg(long, value_parser = parse_fidelity)]
        fidelity: Option<Fidelity>,
        /// Seed for every run (default: the file's).
        #[arg(long)]
        seed: Option<u64>,
        /// Write sweep.csv into this directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write an HTML report of the figure of merit against each parameter.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// Runs at once (default: all cores).
        #[arg(long, short = 'j', default_value_t = 0)]
        jobs: usize,
        /// Run only the K-th of N slices of the cross product (K from 1; runs dealt
        /// round-robin). The CSV gains run,runs columns and --out writes
        /// sweep.shard-K-of-N.csv; join the slices with sweep-merge.
        #[arg(long, value_name = "K/N", value_parser = sweep::Shard::parse)]
        shard: Option<sweep::Shard>,
        /// No progress on stderr.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Join the CSVs of a sharded sweep (sweep --shard K/N) into the sweep's CSV.
    #[command(
        name = "sweep-merge",
        after_help = "The result is the CSV the whole sweep writes in one process, rows in cross-product order.
A missing or duplicated run is an error naming it.

Example (a Slurm job array, docs/slurm-sweep.sh):
  fabricsim sweep s.toml --set cluster.nodes=8,16,32 --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT --out sweep/
  fabricsim sweep-merge sweep/sweep.shard-*.csv -o sweep/sweep.csv"
    )]
    SweepMerge {
        /// The shard CSVs, in any order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write the merged CSV here (default: standard output).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Hold measured nccl-tests output against the simulated fabric: per size measured and simulated time, busbw, error; the sizes that are slow.
    #[command(
        after_help = "Examples:\n  fabricsim check validation/h100-2x8-gcp-a3mega-all_reduce.txt --preset dgx-h100-ndr\n  fabricsim check run1.txt run2.json --scenario mycluster.toml --tolerance 10 --json\n  fabricsim check validation/*.txt --preset dgx-h100-ndr --markdown\n\nThe error is simulated/measured time - 1: negative when the cluster is slower than the model.\nA size is SLOW when its measured busbw is more than --tolerance percent below the simulated one.\nExit codes: 0 ok (slow rows included), 2 bad input."
    )]
    Check {
        /// nccl-tests output files (text, or the -J JSON).
        #[arg(required = true)]
        measured: Vec<PathBuf>,
        #[command(flatten)]
        base: BaseArgs,
        /// Percent below the simulated busbw before a size is flagged slow.
        #[arg(long, default_value_t = 15.0)]
        tolerance: f64,
        /// Print one JSON document.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print one Markdown table row per file (docs/validation.md).
        #[arg(long)]
        markdown: bool,
        /// Also write a self-contained HTML report (busbw versus size, measured and simulated).
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
    },
    /// Fit scenario keys to measured nccl-tests output (least squares on log time) and write them as a TOML fragment.
    #[command(
        after_help = "Examples:\n  fabricsim calibrate measured.txt --preset dgx-h100-ndr --param fabric.link_latency=0.5us..10us -o calibrated.toml\n  fabricsim calibrate a.txt b.txt --scenario c.toml --param cluster.nvlink_bandwidth=200GB/s..450GB/s --param fabric.link_latency=100ns..5us --fit-sizes 1M..1G -o fit.toml"
    )]
    Calibrate {
        /// nccl-tests output files (text, or the -J JSON).
        #[arg(required = true)]
        measured: Vec<PathBuf>,
        #[command(flatten)]
        base: BaseArgs,
        /// KEY=LO..HI: a numeric, time, rate or size scenario key and its bounds (repeat for several).
        #[arg(long = "param", value_name = "KEY=LO..HI", required = true)]
        params: Vec<String>,
        /// Fit on these sizes only (MIN..MAX, e.g. 1M..1G); the other rows are held out.
        #[arg(long, value_name = "MIN..MAX")]
        fit_sizes: Option<String>,
        /// Rounds of coordinate search (with several parameters).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Write the fitted values here (a TOML scenario fragment).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Check a scenario file and explain every problem, without running it.
    #[command(after_help = "Example:\n  fabricsim validate examples/allreduce-leaf-spine.toml")]
    Validate {
        /// The scenario (TOML).
        scenario: PathBuf,
    },
    /// List the hardware presets a scenario can name.
    #[command(after_help = "Example:\n  fabricsim presets")]
    Presets,
    /// Convert an htsim connection matrix (.cm) into a scenario with a flow list.
    #[command(
        name = "import-cm",
        after_help = "Triggers become dependencies (send_done_trigger: after_sent, recv_done_trigger: after).\nThe scenario's fabric is a placeholder: set the one the htsim run used.\n\nExample:\n  fabricsim import-cm perm_128.cm -o perm_128.toml && fabricsim run perm_128.toml --fidelity packet"
    )]
    ImportCm {
        /// The htsim connection matrix.
        matrix: PathBuf,
        /// Write the scenario here (default: standard output).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a training scenario's step as Chakra execution traces, one file per rank.
    #[command(
        name = "export-chakra",
        after_help = "Writes DIR/<prefix>.<rank>.et for every GPU of the plan (data x tensor x pipeline ranks): compute as COMP_NODE\n(duration_micros rounded, the exact duration_ps attribute), collectives as COMM_COLL_NODE (comm_type, comm_size,\npg_name), pipeline transfers as COMM_SEND_NODE / COMM_RECV_NODE. A scenario with workload.kind = \"chakra\" and\nworkload.traces = \"DIR\" runs them.\n\nExample:\n  fabricsim export-chakra examples/training-llama2-7b.toml -o traces/ --prefix llama"
    )]
    ExportChakra {
        /// A scenario with workload.kind = "training" (replicas = "all").
        scenario: PathBuf,
        /// Directory to write the traces into (created if missing).
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: PathBuf,
        /// File name prefix: files are <prefix>.<rank>.et.
        #[arg(long, default_value = "trace")]
        prefix: String,
    },
    /// Convert another simulator's topology into a topology file (topology.kind = "file").
    #[command(
        name = "import-topology",
        after_help = "Formats: hpcc (the HPCC simulator's ns-3 topology.txt: `node_num switch_num link_num`, the switch ids, then `src dst rate delay error_rate` lines); htsim (csg-htsim's fat-tree -topo file: `Nodes`, `Tiers`, `Podsize`, then `Tier t` blocks of `Downlink_speed_Gbps`, `Radix_Down`, `Radix_Up`, `Downlink_Latency_ns`, …).\nHosts become cluster nodes in ascending id order; set cluster.nodes to the host count printed.\n\nExamples:\n  fabricsim import-topology tests/data/hpcc-leaf-spine.txt -o topo.toml\n  fabricsim import-topology --format htsim tests/data/htsim-fat-tree.topo -o topo.toml"
    )]
    ImportTopology {
        /// The topology description.
        input: PathBuf,
        /// Its format.
        #[arg(long, default_value = "hpcc", value_parser = ["hpcc", "htsim"])]
        format: String,
        /// Write the topology file here (default: standard output).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

fn parse_fidelity(s: &str) -> Result<Fidelity, String> {
    Fidelity::parse(s)
        .ok_or_else(|| format!("unknown fidelity {s:?}; expected analytical, flow or packet"))
}

/// The first error writing to standard output; later writes are skipped.
static STDOUT_ERROR: std::sync::OnceLock<std::io::Error> = std::sync::OnceLock::new();

/// Writes to standard output without panicking (`print!` panics on a full disk or
/// a closed pipe); the first error is kept for [`finish`].
fn emit(args: std::fmt::Arguments<'_>) {
    if STDOUT_ERROR.get().is_some() {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        let _ = STDOUT_ERROR.set(e);
    }
}

/// `eprint!` that cannot panic (`eprint!` panics when stderr is a full disk);
/// a message that cannot be written is dropped, the exit code still tells.
macro_rules! err {
    ($($t:tt)*) => {{
        let _ = std::io::stderr().lock().write_fmt(format_args!($($t)*));
    }};
}

/// `eprintln!` that cannot panic.
macro_rules! errln {
    ($($t:tt)*) => {{
        let _ = std::io::stderr().lock().write_fmt(format_args!("{}\n", format_args!($($t)*)));
    }};
}

/// `print!` that cannot panic.
macro_rules! out {
    ($($t:tt)*) => { emit(format_args!($($t)*)) };
}

/// `println!` that cannot panic.
macro_rules! outln {
    () => { emit(format_args!("\n")) };
    ($($t:tt)*) => { emit(format_args!("{}\n", format_args!($($t)*))) };
}

/// Flushes standard output and turns a write error into the exit code: a closed
/// pipe (`fabricsim … | head`) ends quietly with the command's own code; any
/// other error (`> /dev/full`) is reported, exit code 1.
fn finish(code: ExitCode) -> ExitCode {
    let flushed = std::io::stdout().lock().flush();
    let err = STDOUT_ERROR.get().map(|e| (e.kind(), e.to_string()));
    let err = err.or_else(|| flushed.err().map(|e| (e.kind(), e.to_string())));
    match err {
        None => code,
        Some((std::io::ErrorKind::BrokenPipe, _)) => code,
        Some((_, msg)) => {
            errln!("error: writing to standard output: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = command(cli);
    finish(code)
}

fn command(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Demo { out } => {
            match config::parse(fabricsim::demo::FILE, fabricsim::demo::SCENARIO) {
                Ok(s) => execute(&s, &out),
                Err(e) => config_failure(&e),
            }
        }
        Command::Run { scenario, out } => match config::load(&scenario) {
            Ok(s) => execute(&s, &out),
            Err(e) => config_failure(&e),
        },
        Command::Validate { scenario } => match config::load(&scenario) {
            Ok(s) => {
                outln!(
                    "ok: {} — {} nodes x {} GPUs = {} GPUs on {} ({}), {} fidelity",
                    scenario.display(),
                    s.cluster().hosts,
                    s.cluster().gpus_per_host,
                    s.num_gpus(),
                    s.topology().name(),
                    s.fabric().kind().name(),
                    s.fidelity().name()
                );
                if let Ok(t) = s.build_topology() {
                    let summary = fabricsim::report::TopologySummary::of(&t);
                    if !summary.tiers.is_empty() {
                        outln!("links: {}", summary.tiers_line());
                    }
                }
                match fabricsim::run::ignored_settings(&s, s.fidelity()) {
                    Ok(ignored) => {
                        for ig in ignored {
                            outln!("note: {} is not used in this run: {}", ig.key, ig.reason);
                        }
                    }
                    Err(e) => outln!("note: the run cannot be planned: {e}"),
                }
                ExitCode::SUCCESS
            }
            Err(e) => config_failure(&e),
        },
        Command::ImportCm { matrix, output } => import_cm(&matrix, output.as_deref()),
        Command::ExportChakra {
            scenario,
            output,
            prefix,
        } => export_chakra(&scenario, &output, &prefix),
        Command::ImportTopology {
            input,
            format,
            output,
        } => import_topology(&input, &format, output.as_deref()),
        Command::Presets => {
            outln!("cluster presets ([cluster] preset = …):");
            for p in config::presets::NODE_PRESETS {
                outln!(
                    "  {:<16} {}; NVLink efficiency {:.3}",
                    p.name,
                    p.about,
                    p.nvlink_efficiency
                );
            }
            outln!("fabric presets ([fabric] preset = …):");
            for p in config::presets::FABRIC_PRESETS {
                outln!(
                    "  {:<16} {}; NIC efficiency {:.3}",
                    p.name,
                    p.about,
                    p.nic_efficiency
                );
            }
            outln!("model presets ([workload] kind = \"training\" | \"inference\", preset = …):");
            for p in config::workload::MODEL_PRESETS {
                outln!("  {:<16} {}", p.name, p.about);
            }
            outln!("GPU presets ([workload.gpu] preset = …):");
            for p in config::workload::GPU_PRESETS {
                outln!(
                    "  {:<16} dense bf16 {} TFLOP/s, fp8 {} TFLOP/s, HBM {}",
                    p.name,
                    p.tflops[0],
                    p.tflops[2],
                    p.hbm
                );
            }
            outln!("built-in clusters (fabricsim collective --preset …):");
            for (name, about, _) in cluster::CLUSTERS {
                outln!("  {name:<16} {about}");
            }
            ExitCode::SUCCESS
        }
        Command::Compare {
            scenarios,
            fidelity,
            seed,
            report,
            quiet,
        } => compare(&scenarios, fidelity, seed, report.as_deref(), quiet),
        Command::Sweep {
            scenario,
            sets,
            fidelity,
            seed,
            out,
            report,
            jobs,
            shard,
            quiet,
        } => sweep_cmd(
            &scenario,
            &sets,
            fidelity,
            seed,
            out.as_deref(),
            report.as_deref(),
            jobs,
            shard,
            quiet,
        ),
        Command::SweepMerge { files, output } => sweep_merge(&files, output.as_deref()),
        Command::Check {
            measured,
            base,
            tolerance,
            json,
            markdown,
            report,
        } => check_cmd(
            &measured,
            &base,
            tolerance,
            json,
            markdown,
            report.as_deref(),
        ),
        Command::Calibrate {
            measured,
            base,
            params,
            fit_sizes,
            rounds,
            output,
        } => calibrate_cmd(
            &measured,
            &base,
            &params,
            fit_sizes.as_deref(),
            rounds,
            output.as_deref(),
        ),
        Command::Collective {
            op,
            algo,
            min,
            max,
            factor,
            scenario,
            preset,
            nodes,
            channels,
            protocol,
            out,
        } => collective(
            &op,
            &algo,
            &min,
            &max,
            factor,
            scenario.as_deref(),
            preset.as_deref(),
            nodes,
            channels,
            protocol.as_deref(),
            &out,
        ),
    }
}

#[allow(clippy::too_many_arguments)]
fn collective(
    op: &str,
    algo: &str,
    min: &str,
    max: &str,
    factor: u64,
    scenario: Option<&Path>,
    preset: Option<&str>,
    nodes: Option<u32>,
    channels: Option<u32>,
    protocol: Option<&str>,
    out: &Output,
) -> ExitCode {
    let protocol = match protocol {
        None => None,
        Some("auto") => Some(None),
        Some(p) => match fabricsim::collective::Protocol::parse(p) {
            Some(p) => Some(Some(p)),
            None => {
                return usage(&format!(
                    "--protocol {p:?}: expected auto, simple, ll128 or ll"
                ))
            }
        },
    };
    if let Some(c) = channels {
        if !(1..=config::MAX_CHANNELS).contains(&i64::from(c)) {
            return usage(&format!(
                "--channels {c}: expected 1 to {} channels",
                config::MAX_CHANNELS
            ));
        }
    }
    let Some(op) = CollectiveOp::parse(op) else {
        return usage(&format!("unknown collective {op:?}; expected allreduce, allgather, reducescatter, broadcast or alltoall"));
    };
    let algorithm = match cluster::algo_choice(algo, op) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    let (Ok(minb), Ok(maxb)) = (parse_size(min), parse_size(max)) else {
        return usage(&format!(
            "sizes -b {min:?} -e {max:?}: expected sizes such as 8, 1K, 1M, 1G (binary units)"
        ));
    };
    if minb == 0 || minb > maxb || factor < 2 {
        return usage("need 0 < -b ≤ -e and -f ≥ 2");
    }
    let built = cluster::source(scenario, preset).and_then(|src| cluster::build(&src, &[], nodes));
    let mut s = match built {
        Ok(s) => s,
        Err(e) => return base_failure(&e),
    };
    // The command line sets the workload, whatever the file had.
    if let Err(e) = cluster::set_collective(
        &mut s,
        op,
        algorithm,
        config::size_sweep(minb, maxb, factor),
        config::Dtype {
            name: "float",
            size: 4,
        },
    ) {
        return usage(&e);
    }
    // channels and protocol from the command line; the rest from the file
    if let config::WorkloadSpec::Collective(w) = s.workload() {
        let mut w = w.clone();
        if channels.is_some() {
            w.channels = channels;
        }
        if let Some(p) = protocol {
            w.protocol = p;
        }
        s = match s.with_collective(w) {
            Ok(s) => s,
            Err(e) => return usage(&e),
        };
    }
    execute(&s, out)
}

fn base_failure(e: &cluster::BaseError) -> ExitCode {
    match e {
        cluster::BaseError::Config(c) => config_failure(c),
        cluster::BaseError::Usage(m) => usage(m),
    }
}

/// `fabricsim export-chakra`: a training step as Chakra traces.
fn export_chakra(scenario: &Path, dir: &Path, prefix: &str) -> ExitCode {
    let s = match config::load(scenario) {
        Ok(s) => s,
        Err(e) => return config_failure(&e),
    };
    if prefix.is_empty() || prefix.contains(['/', '\\']) {
        return usage(&format!(
            "--prefix {prefix:?}: expected a file name prefix without slashes"
        ));
    }
    let files = match fabricsim::workload::chakra::export_scenario(&s) {
        Ok(f) => f,
        Err(e) => return usage(&format!("{}: {e}", scenario.display())),
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        errln!("error: creating {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut total = 0usize;
    for (r, bytes) in files.iter().enumerate() {
        let path = dir.join(format!("{prefix}.{r}.et"));
        if let Err(e) = std::fs::write(&path, bytes) {
            errln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        total += bytes.len();
    }
    errln!(
        "# {} rank traces ({total} bytes) written to {}/{prefix}.<rank>.et",
        files.len(),
        dir.display()
    );
    ExitCode::SUCCESS
}

/// `fabricsim import-cm`: an htsim connection matrix as a scenario.
fn import_cm(matrix: &Path, output: Option<&Path>) -> ExitCode {
    let text = match fabricsim::budget::read_text(matrix, fabricsim::budget::MAX_INPUT_BYTES) {
        Ok(t) => t,
        Err(e) => return usage(&format!("cannot read {}: {e}", matrix.display())),
    };
    let cm = match fabricsim::workload::flows::import_htsim_cm(&text) {
        Ok(cm) => cm,
        Err(e) if e.line == 0 => return usage(&format!("{}: {}", matrix.display(), e.message)),
        Err(e) => return usage(&format!("{}:{}: {}", matrix.display(), e.line, e.message)),
    };
    let scenario = fabricsim::workload::flows::cm_scenario(&cm, &matrix.display().to_string());
    match output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &scenario) {
                errln!("error: writing {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            errln!(
                "# {} flows over {} hosts written to {}",
                cm.flows.len(),
                cm.nodes,
                path.display()
            );
        }
        None => out!("{scenario}"),
    }
    ExitCode::SUCCESS
}

/// `fabricsim import-topology`: an HPCC-simulator or htsim topology as a
/// topology file.
fn import_topology(input: &Path, format: &str, output: Option<&Path>) -> ExitCode {
    let text = match fabricsim::budget::read_text(input, fabricsim::budget::MAX_INPUT_BYTES) {
        Ok(t) => t,
        Err(e) => return usage(&format!("cannot read {}: {e}", input.display())),
    };
    let source = input.display().to_string();
    let converted = match format {
        "htsim" => fabricsim::topology::import::htsim(&text, &source),
        _ => fabricsim::topology::import::hpcc(&text, &source),
    };
    let t = match converted {
        Ok(t) => t,
        Err(e) if e.line == 0 => {
            return usage(&format!(
                "{}: {}: found {}; expected {}",
                input.display(),
                e.field,
                e.found,
                e.expected
            ))
        }
        Err(e) => {
            return usage(&format!(
                "{}:{}: {}: found {}; expected {}",
                input.display(),
                e.line,
                e.field,
                e.found,
                e.expected
            ))
        }
    };
    for n in &t.notes {
        errln!("note: {}:{n}", input.display());
    }
    match output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &t.text) {
                errln!("error: writing {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            errln!(
                "# {} hosts, {} switches, {} links written to {} (set cluster.nodes = {}, topology.kind = \"file\", topology.file = {:?})",
                t.hosts,
                t.switches,
                t.links,
                path.display(),
                t.hosts,
                path.display().to_string()
            );
        }
        None => out!("{}", t.text),
    }
    ExitCode::SUCCESS
}

fn usage(msg: &str) -> ExitCode {
    errln!("error: {msg}");
    ExitCode::from(2)
}

fn config_failure(e: &ConfigError) -> ExitCode {
    errln!("{e}");
    ExitCode::from(2)
}

/// A progress line on stderr (simulated time, events/s), or `None` when stderr is
/// not a terminal or `--quiet` was given. Called every few tens of thousands of events.
fn progress_bar(quiet: bool) -> Option<ProgressHook> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let last = Mutex::new((Instant::now(), 0u64));
    Some(Arc::new(move |t: ProgressTick| {
        let Ok(mut l) = last.lock() else { return };
        let dt = l.0.elapsed().as_secs_f64();
        // `events` restarts with each backend run (one per collective size).
        let de = t.events.saturating_sub(l.1);
        let rate = if dt > 0.0 { de as f64 / dt } else { 0.0 };
        *l = (Instant::now(), t.events);
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[K[fabricsim] simulated {} | {} events | {:.2} M events/s",
            t.sim_time,
            t.events,
            rate / 1e6
        );
        let _ = e.flush();
    }))
}

/// Clears the progress line.
fn progress_done(hook: &Option<ProgressHook>) {
    if hook.is_some() {
        err!("\r\x1b[K");
    }
}

fn execute(s: &Scenario, out: &Output) -> ExitCode {
    let progress = progress_bar(out.quiet);
    let opts = RunOptions {
        fidelity: out.fidelity,
        seed: out.seed,
        collect_links: out.links,
        detail: out.report.is_some(),
        flow_records: out.out.is_some(),
        trace: out.trace.is_some(),
        progress: progress.clone(),
        threads: out.threads.map(|t| t as usize),
    };
    let result = run::run(s, &opts);
    progress_done(&progress);
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {}: {e}", s.file());
            return ExitCode::FAILURE;
        }
    };
    if out.json {
        outln!("{}", report.to_json());
    } else {
        out!("{}", report::table::render(&report));
    }
    if let Some(dir) = &out.out {
        if let Err(e) = write_outputs(dir, &report) {
            errln!("error: writing results into {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    if let (Some(path), Some(trace)) = (&out.trace, &report.trace) {
        if let Err(e) = std::fs::write(path, trace.to_json()) {
            errln!("error: writing the timeline {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        if trace.left_out() > 0 {
            errln!(
                "warning: the timeline {} keeps the first {} slices and leaves out {} (a browser cannot open more)",
                path.display(),
                trace.len(),
                trace.left_out()
            );
        } else if !out.quiet {
            errln!(
                "# timeline: {} ({} slices; open it in https://ui.perfetto.dev)",
                path.display(),
                trace.len()
            );
        }
    }
    if let Some(path) = &out.report {
        let t = Instant::now();
        let html = report::html::render(&report, Some(s));
        let render_s = t.elapsed().as_secs_f64();
        if let Err(e) = std::fs::write(path, &html) {
            errln!("error: writing the report {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        if !out.quiet {
            errln!(
                "# report: {} ({} KiB, rendered in {:.1} ms; simulation {:.3} s)",
                path.display(),
                html.len() / 1024,
                render_s * 1e3,
                report.sim.wall_s
            );
        }
    }
    if report.deadlock.is_some() {
        // the result was printed; the exit code tells scripts the fabric deadlocked
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

fn write_outputs(dir: &Path, r: &Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("result.json"), r.to_json())?;
    std::fs::write(dir.join("collectives.csv"), report::csv::collectives(r))?;
    if r.flow_records.total > 0 {
        std::fs::write(dir.join("flows.csv"), report::csv::flows(r))?;
    }
    if !r.links.is_empty() {
        std::fs::write(dir.join("links.csv"), report::csv::links(r))?;
    }
    if !r.queue_pairs.is_empty() {
        std::fs::write(dir.join("queue_pairs.csv"), report::csv::queue_pairs(r))?;
    }
    if !r.jobs.is_empty() {
        std::fs::write(dir.join("jobs.csv"), report::jobs::csv(r))?;
    }
    if let Some(p) = &r.pfc {
        if !p.watchdog_lanes.is_empty() {
            std::fs::write(dir.join("pfc_watchdog.csv"), report::csv::pfc_watchdog(r))?;
        }
        if !p.deadlock_cycles.is_empty() {
            std::fs::write(dir.join("pfc_cycles.csv"), report::csv::pfc_cycles(r))?;
        }
    }
    Ok(())
}

fn compare(
    files: &[PathBuf],
    fidelity: Option<Fidelity>,
    seed: Option<u64>,
    html: Option<&Path>,
    quiet: bool,
) -> ExitCode {
    let mut scenarios = Vec::new();
    for f in files {
        match config::load(f) {
            Ok(s) => scenarios.push(s),
            Err(e) => return config_failure(&e),
        }
    }
    let progress = progress_bar(quiet);
    let opts = RunOptions {
        fidelity,
        seed,
        detail: html.is_some(),
        progress: progress.clone(),
        ..RunOptions::default()
    };
    let mut reports = Vec::new();
    for s in &scenarios {
        match run::run(s, &opts) {
            Ok(r) => reports.push(r),
            Err(e) => {
                progress_done(&progress);
                errln!("error: {}: {e}", s.file());
                return ExitCode::FAILURE;
            }
        }
    }
    progress_done(&progress);
    let labels: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    out!("{}", report::compare::table(&reports, &labels));
    if let Some(path) = html {
        if let Err(e) = std::fs::write(path, report::html::render_compare(&reports, &labels)) {
            errln!("error: writing the report {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[allow(clippy::too_many_arguments)]
fn sweep_cmd(
    file: &Path,
    sets: &[String],
    fidelity: Option<Fidelity>,
    seed: Option<u64>,
    out: Option<&Path>,
    html: Option<&Path>,
    jobs: usize,
    shard: Option<sweep::Shard>,
    quiet: bool,
) -> ExitCode {
    let mut axes = Vec::new();
    for s in sets {
        match sweep::parse_set(s) {
            Ok(a) => axes.push(a),
            Err(e) => return usage(&e),
        }
    }
    let text = match fabricsim::budget::read_text(file, fabricsim::budget::MAX_INPUT_BYTES) {
        Ok(t) => t,
        Err(_) => {
            // the usual diagnostic for an unreadable file
            return match config::load(file) {
                Err(e) => config_failure(&e),
                Ok(_) => usage(&format!("cannot read {}", file.display())),
            };
        }
    };
    let opts = RunOptions {
        fidelity,
        seed,
        ..RunOptions::default()
    };
    let all: usize = axes.iter().map(|a| a.values.len()).product();
    let total = match shard {
        Some(sh) => (0..all).filter(|&i| sh.owns(i)).count(),
        None => all,
    };
    let done = AtomicUsize::new(0);
    let show = !quiet && std::io::stderr().is_terminal();
    let on_done = |ev: sweep::SweepEvent| {
        if !matches!(ev, sweep::SweepEvent::Finished(_)) {
            return;
        }
        let d = done.fetch_add(1, Ordering::Relaxed) + 1;
        if show {
            err!("\r\x1b[K[fabricsim] sweep: {d}/{total} runs done");
        }
    };
    let name = file.display().to_string();
    let runs = match sweep::run_shard(&name, &text, &axes, &opts, jobs, shard, &on_done) {
        Ok(r) => r,
        Err(e) => return config_failure(&e),
    };
    if show {
        err!("\r\x1b[K");
    }
    let (csv, csv_name) = match shard {
        Some(sh) => (
            sweep::shard_csv(&axes, &runs, all),
            format!("sweep.shard-{}-of-{}.csv", sh.index + 1, sh.count),
        ),
        None => (sweep::csv(&axes, &runs), "sweep.csv".to_string()),
    };
    out!("{csv}");
    if let Some(dir) = out {
        let w =
            std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join(&csv_name), &csv));
        if let Err(e) = w {
            errln!("error: writing {csv_name} into {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = html {
        if let Err(e) = std::fs::write(path, sweep::html(&name, &axes, &runs)) {
            errln!("error: writing the report {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if runs.iter().any(|r| r.result.is_err()) {
        errln!("error: some runs failed; see the error column");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn sweep_merge(files: &[PathBuf], output: Option<&Path>) -> ExitCode {
    let mut texts = Vec::with_capacity(files.len());
    for f in files {
        match fabricsim::budget::read_text(f, fabricsim::budget::MAX_INPUT_BYTES) {
            Ok(t) => texts.push((f.display().to_string(), t)),
            Err(e) => return usage(&format!("cannot read {}: {e}", f.display())),
        }
    }
    let merged = match sweep::merge(&texts) {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    match output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &merged) {
                errln!("error: writing {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
        None => out!("{merged}"),
    }
    ExitCode::SUCCESS
}

/// Parses the measured files and matches each to its cluster: `--scenario`,
/// `--preset`, or else the file's own `# preset:` line (default dgx-h100-ndr).
fn prepare_all(
    measured: &[PathBuf],
    base: &BaseArgs,
    tolerance: f64,
) -> Result<(CheckOptions, Vec<compare::Prepared>), ExitCode> {
    let mut sets = Vec::new();
    for s in &base.sets {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                sets.push((k.trim().to_string(), v.trim().to_string()));
            }
            _ => {
                return Err(usage(&format!(
                    "--set {s:?}: expected KEY=VALUE, e.g. fabric.link_latency=2us"
                )))
            }
        }
    }
    if !(0.0..100.0).contains(&tolerance) {
        return Err(usage("--tolerance: expected a percentage from 0 to 100"));
    }
    let opts = CheckOptions {
        fidelity: base.fidelity.unwrap_or(Fidelity::Flow),
        algo: base.algo.clone(),
        tolerance: tolerance / 100.0,
        in_place: base.in_place,
        nodes: base.nodes,
        sets,
    };
    let given = if base.scenario.is_some() || base.preset.is_some() {
        Some(
            cluster::source(base.scenario.as_deref(), base.preset.as_deref())
                .map_err(|e| base_failure(&e))?,
        )
    } else {
        None
    };
    let mut prepared = Vec::new();
    let mut bad = false;
    for f in measured {
        let m = match nccltests::load(f) {
            Ok(m) => m,
            Err(e) => {
                errln!("error: {e}");
                bad = true;
                continue;
            }
        };
        let src = match &given {
            Some(s) => Ok(s.clone()),
            None => {
                let p = m
                    .meta
                    .iter()
                    .find(|(k, _)| k == "preset")
                    .map(|(_, v)| v.trim());
                cluster::source(None, p)
            }
        };
        match src.and_then(|src| compare::prepare(&m, &src, &opts)) {
            Ok(p) => prepared.push(p),
            // located diagnostics carry their own "error:" prefix
            Err(cluster::BaseError::Config(e)) => {
                errln!("{e}");
                bad = true;
            }
            Err(e) => {
                errln!("error: {e}");
                bad = true;
            }
        }
    }
    if bad {
        return Err(ExitCode::from(2));
    }
    Ok((opts, prepared))
}

fn check_cmd(
    measured: &[PathBuf],
    base: &BaseArgs,
    tolerance: f64,
    json: bool,
    markdown: bool,
    report: Option<&Path>,
) -> ExitCode {
    let (opts, prepared) = match prepare_all(measured, base, tolerance) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut results = Vec::new();
    for p in &prepared {
        match compare::check(p, &opts) {
            Ok(r) => results.push(r),
            Err(e) => return base_failure(&e),
        }
    }
    if json {
        let doc = serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "results": results,
            "geomean_error": compare::geomean_error(results.iter().flat_map(|r| r.rows.iter().map(|x| x.error))),
        });
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else if markdown {
        out!("{}", compare::markdown(&results));
    } else {
        for (i, r) in results.iter().enumerate() {
            if i > 0 {
                outln!();
            }
            out!("{}", compare::render(r));
        }
        if results.len() > 1 {
            let errors = results.iter().flat_map(|r| r.rows.iter().map(|x| x.error));
            let sizes: usize = results.iter().map(|r| r.rows.len()).sum();
            let slow: Vec<String> = results
                .iter()
                .filter(|r| !r.slow_sizes.is_empty())
                .map(|r| format!("{} ({})", r.file, r.slow_sizes.len()))
                .collect();
            outln!(
                "\n# all {} files: geomean error over {sizes} sizes {:.1}%; files with slow sizes: {}",
                results.len(),
                compare::geomean_error(errors).unwrap_or(0.0) * 100.0,
                if slow.is_empty() { "none".to_string() } else { slow.join(", ") }
            );
        }
    }
    if let Some(path) = report {
        if let Err(e) = std::fs::write(path, compare::html(&results)) {
            errln!("error: writing the report {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn calibrate_cmd(
    measured: &[PathBuf],
    base: &BaseArgs,
    params: &[String],
    fit_sizes: Option<&str>,
    rounds: usize,
    output: Option<&Path>,
) -> ExitCode {
    let mut ps = Vec::new();
    for p in params {
        match calibrate::parse_param(p) {
            Ok(p) => ps.push(p),
            Err(e) => return usage(&e),
        }
    }
    let fit = match fit_sizes.map(calibrate::parse_size_range) {
        None => (0, u64::MAX),
        Some(Ok(r)) => r,
        Some(Err(e)) => return usage(&e),
    };
    let (opts, prepared) = match prepare_all(measured, base, 15.0) {
        Ok(x) => x,
        Err(code) => return code,
    };
    for p in &prepared {
        for n in &p.notes {
            errln!("# {}: {n}", p.measured.file);
        }
    }
    let c = match calibrate::calibrate(&prepared, &opts, &ps, fit, rounds) {
        Ok(c) => c,
        Err(e) => return base_failure(&e),
    };
    let fit_shown = if fit_sizes.is_some() {
        fit
    } else {
        let sizes = prepared
            .iter()
            .flat_map(|p| p.points.iter().map(|x| x.bytes));
        (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0))
    };
    let inputs: Vec<String> = measured.iter().map(|m| m.display().to_string()).collect();
    let mut bases: Vec<&str> = prepared.iter().map(|p| p.src.label.as_str()).collect();
    bases.dedup();
    let toml = calibrate::toml_fragment(&c, &ps, &inputs, &bases.join(", "), &opts, fit_shown);
    out!("{}", calibrate::summary(&c, &ps));
    match output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &toml) {
                errln!("error: writing {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            outln!("wrote {}", path.display());
        }
        None => out!("{toml}"),
    }
    ExitCode::SUCCESS
}

/// The `--algo` help: `auto` and every registered algorithm.
fn algo_help() -> String {
    format!(
        "Algorithm: auto (default: NCCL's tuner) or one of {}",
        fabricsim::collective::registry::names()
    )
}

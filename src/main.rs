//! The `fabricsim` command line: parse arguments, call the library, print.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use fabricsim::collective::{Algorithm, CollectiveOp};
use fabricsim::config::{self, AlgoChoice, ConfigError, Fidelity, Scenario, WorkloadSpec};
use fabricsim::report::{self, Report};
use fabricsim::run::{self, RunOptions};
use fabricsim::units::parse_size;

#[derive(Parser)]
#[command(
    name = "fabricsim",
    version,
    about = "Simulate what a GPU cluster's network does to collectives and training steps.",
    after_help = "Examples:\n  fabricsim demo\n  fabricsim run examples/allreduce-leaf-spine.toml --fidelity flow\n  fabricsim collective allreduce --algo ring -b 1M -e 1G -f 4 --preset dgx-h100-ndr"
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
    /// Also write result.json and collectives.csv (and links.csv) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep per-link counters (in JSON and links.csv).
    #[arg(long)]
    links: bool,
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
        /// ring, tree, halving_doubling, hierarchical, direct or auto.
        #[arg(long, default_value = "auto")]
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
        #[command(flatten)]
        out: Output,
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
}

fn parse_fidelity(s: &str) -> Result<Fidelity, String> {
    Fidelity::parse(s)
        .ok_or_else(|| format!("unknown fidelity {s:?}; expected analytical, flow or packet"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
                println!(
                    "ok: {} — {} nodes x {} GPUs = {} GPUs on {} ({}), {} fidelity",
                    scenario.display(),
                    s.cluster.hosts,
                    s.cluster.gpus_per_host,
                    s.num_gpus(),
                    s.topology.name(),
                    s.fabric.kind.name(),
                    s.fidelity.name()
                );
                for ig in s.ignored_settings(s.fidelity) {
                    println!(
                        "note: {} is not used at this fidelity: {}",
                        ig.key, ig.reason
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => config_failure(&e),
        },
        Command::Presets => {
            println!("cluster presets ([cluster] preset = …):");
            for p in config::presets::NODE_PRESETS {
                println!("  {:<16} {}", p.name, p.about);
            }
            println!("fabric presets ([fabric] preset = …):");
            for p in config::presets::FABRIC_PRESETS {
                println!("  {:<16} {}", p.name, p.about);
            }
            println!("model presets ([workload] kind = \"training\" | \"inference\", preset = …):");
            for p in config::workload::MODEL_PRESETS {
                println!("  {:<16} {}", p.name, p.about);
            }
            println!("GPU presets ([workload.gpu] preset = …):");
            for p in config::workload::GPU_PRESETS {
                println!(
                    "  {:<16} dense bf16 {} TFLOP/s, fp8 {} TFLOP/s, HBM {}",
                    p.name, p.tflops[0], p.tflops[2], p.hbm
                );
            }
            println!("built-in clusters (fabricsim collective --preset …):");
            for (name, about, _) in CLUSTERS {
                println!("  {name:<16} {about}");
            }
            ExitCode::SUCCESS
        }
        Command::Collective {
            op,
            algo,
            min,
            max,
            factor,
            scenario,
            preset,
            nodes,
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
            &out,
        ),
    }
}

/// Built-in clusters for `fabricsim collective --preset`.
const CLUSTERS: [(&str, &str, &str); 3] = [
    (
        "dgx-h100-ndr",
        "64 x DGX H100, rail-optimized InfiniBand NDR 400G (the demo cluster)",
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = 64\n[topology]\nkind = \"rail_optimized\"\nradix = 64\n[fabric]\npreset = \"ib-ndr-400\"\n",
    ),
    (
        "dgx-h100-roce",
        "64 x DGX H100, rail-optimized RoCEv2 400 GbE",
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = 64\n[topology]\nkind = \"rail_optimized\"\nradix = 64\n[fabric]\npreset = \"roce-400\"\n",
    ),
    (
        "dgx-a100-hdr",
        "32 x DGX A100, non-blocking leaf-spine InfiniBand HDR 200G",
        "[cluster]\npreset = \"dgx-a100-node\"\nnodes = 32\n[topology]\nkind = \"leaf_spine\"\nradix = 40\n[fabric]\npreset = \"ib-hdr-200\"\n",
    ),
];

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
    out: &Output,
) -> ExitCode {
    let Some(op) = CollectiveOp::parse(op) else {
        return usage(&format!("unknown collective {op:?}; expected allreduce, allgather, reducescatter, broadcast or alltoall"));
    };
    let algorithm = if algo == "auto" {
        AlgoChoice::Auto
    } else {
        match Algorithm::parse(algo) {
            Some(a) if fabricsim::collective::supports(a, op) => AlgoChoice::Fixed(a),
            Some(a) => {
                return usage(&format!(
                    "algorithm {} does not implement {}; it implements {}",
                    a.name(),
                    op.name(),
                    fabricsim::collective::supported_ops(a)
                ))
            }
            None => return usage(&format!("unknown algorithm {algo:?}; expected auto, ring, tree, halving_doubling, hierarchical or direct")),
        }
    };
    let (Ok(minb), Ok(maxb)) = (parse_size(min), parse_size(max)) else {
        return usage(&format!(
            "sizes -b {min:?} -e {max:?}: expected sizes such as 8, 1K, 1M, 1G (binary units)"
        ));
    };
    if minb == 0 || minb > maxb || factor < 2 {
        return usage("need 0 < -b ≤ -e and -f ≥ 2");
    }
    let base = match (scenario, preset) {
        (Some(p), _) => config::load(p),
        (None, name) => {
            let name = name.unwrap_or("dgx-h100-ndr");
            let Some((_, _, text)) = CLUSTERS.iter().find(|c| c.0 == name) else {
                return usage(&format!(
                    "unknown preset {name:?}; expected one of {}",
                    CLUSTERS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
                ));
            };
            let text = format!(
                "name = \"{name}\"\n{text}[workload]\nop = \"allreduce\"\nsizes = [\"1MiB\"]\n"
            );
            config::parse(&format!("<preset {name}>"), &text)
        }
    };
    let mut s = match base {
        Ok(s) => s,
        Err(e) => return config_failure(&e),
    };
    if let Some(n) = nodes {
        if n == 0 {
            return usage("--nodes must be at least 1");
        }
        s.cluster.hosts = n;
        if let Err(e) = s.build_topology() {
            return usage(&format!("--nodes {n}: {e}"));
        }
    }
    // The command line sets the workload, whatever the file had.
    s.workload = WorkloadSpec::Collective(config::CollectiveWorkload {
        op,
        algorithm,
        inter_host: fabricsim::collective::Algorithm::Ring,
        sizes: config::size_sweep(minb, maxb, factor),
        chunk_bytes: match &s.workload {
            WorkloadSpec::Collective(w) => w.chunk_bytes,
            _ => 512 << 10,
        },
        dtype: config::Dtype {
            name: "float",
            size: 4,
        },
        root: 0,
    });
    // The command line sets the workload: no file key applies to it any more.
    s.keys_set.retain(|k| !k.starts_with("workload."));
    execute(&s, out)
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn config_failure(e: &ConfigError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(2)
}

fn execute(s: &Scenario, out: &Output) -> ExitCode {
    let opts = RunOptions {
        fidelity: out.fidelity,
        seed: out.seed,
        collect_links: out.links,
    };
    let report = match run::run(s, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}: {e}", s.file);
            return ExitCode::FAILURE;
        }
    };
    if out.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report::table::render(&report));
    }
    if let Some(dir) = &out.out {
        if let Err(e) = write_outputs(dir, &report) {
            eprintln!("error: writing results into {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn write_outputs(dir: &Path, r: &Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("result.json"), r.to_json())?;
    std::fs::write(dir.join("collectives.csv"), report::csv::collectives(r))?;
    if !r.links.is_empty() {
        std::fs::write(dir.join("links.csv"), report::csv::links(r))?;
    }
    Ok(())
}

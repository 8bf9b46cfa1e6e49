//! # fabricsim
//!
//! A simulator of the networks that connect GPUs in AI clusters: what a fabric
//! (NVLink, InfiniBand, RoCEv2, Ethernet; fat-tree, leaf-spine, rail-optimized,
//! dragonfly) does to a collective, a training step or an inference token.
//!
//! ```text
//! scenario.toml ─► config ─► workload ─► collective ─► topology ─► backend ─► metrics ─► report
//!                 (parse,    (what runs)  (lowers ops   (graph,     (analytical │ (counters, (table,
//!                  validate)               to transfers) routes)     flow │ packet) FCTs)      JSON, CSV)
//! ```
//!
//! - [`config`]: the scenario file, presets, validation with file:line:column errors.
//! - [`collective`]: ring, tree, halving-doubling, hierarchical, all-to-all; each lowers
//!   a collective into a [`dag::Dag`] of transfers and gives its closed-form α-β time.
//! - [`topology`]: the cluster graph and its ECMP routes.
//! - [`backend`]: executes a DAG at one fidelity and returns one [`backend::RunOutput`].
//! - [`mechanism`]: the parameters of congestion control, ECN and flow control as a
//!   scenario states them, shared by `config` and the backends.
//! - [`workload`]: training steps and inference batches as DAGs; stragglers and faults.
//! - [`metrics`], [`report`]: flow statistics and the result schema (JSON, table, CSV,
//!   self-contained HTML with SVG charts, side-by-side comparisons).
//! - [`sweep`]: `--set` overrides of scenario text and parallel parameter sweeps.
//! - [`check`]: nccl-tests output in: measured against simulated, calibration.
//!
//! ```
//! let scenario = fabricsim::config::parse("demo.toml", fabricsim::demo::SCENARIO).unwrap();
//! let report = fabricsim::run::run(&scenario, &Default::default()).unwrap();
//! assert!(report.collectives[0].busbw_gbps > 0.0);
//! ```

pub mod backend;
pub mod budget;
pub mod check;
pub mod collective;
pub mod config;
pub mod dag;
pub mod demo;
pub mod mechanism;
pub mod metrics;
pub mod report;
pub mod run;
pub mod sweep;
pub mod topology;
pub mod units;
pub mod workload;

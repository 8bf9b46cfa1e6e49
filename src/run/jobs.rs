//! Several jobs on one fabric (`[[jobs]]`, issue 15).
//!
//! Each job's DAG is built on its own ranks, then all of them are merged into
//! one DAG (each job behind a delay of its `start`) and run once, so the jobs
//! share links and queues at every fidelity. Each job is then run alone on the
//! same fabric, nodes and start; its slowdown is shared / alone.
//!
//! **Where a job's plan is made.** A collective job is planned and lowered on
//! the real topology with the job's GPUs as its communicator (NCCL's view:
//! the tuner, the default channels, the rings' and trees' order, SHARP and
//! NVLS see the nodes the job really has, their leaves and rails). A traffic
//! or flow-list job is generated on a logical cluster of the job's size (one
//! switch, the same nodes), where its GPU indices `0..n` are the job's ranks,
//! and renamed onto the job's GPUs: rank `r` is GPU `r % g` of the job's
//! node `r / g`. Either way every transfer is routed on the real fabric.

use super::*;
use crate::config::jobs::JobSpec;
use crate::dag::Dep;
use crate::report::jobs::JobResult;
use crate::report::workload::FaultEffect;

/// The job's GPUs in rank order: every GPU of its first node, then of the next.
pub fn job_ranks(j: &JobSpec, topo: &Topology) -> Vec<GpuId> {
    let g = topo.gpus_per_host;
    j.nodes
        .iter()
        .flat_map(|&h| (0..g).map(move |l| GpuId(h * g + l)))
        .collect()
}

/// One size of a collective job: its operation in the job's DAG.
struct SizeOp {
    op: u32,
    spec: CollectiveSpec,
}

/// What a training or inference job's report is made from besides its DAG
/// and its run (the step's or batch's structure, its DAG moved out).
enum ModelPlan {
    /// A collective, traffic, flow-list or Chakra job.
    None,
    /// A training step: its operations' kinds, GPUs, FLOPs, tokens.
    Training(Box<training::StepDag>),
    /// An inference batch: its requests' output lengths.
    Inference(Box<inference::InferenceDag>),
}

/// A job's DAG on the cluster's GPUs, from time zero, and its sizes.
struct JobPlan {
    dag: Dag,
    sizes: Vec<SizeOp>,
    model: ModelPlan,
}

/// Records the keys of every job: its own (name, nodes, placement, start) and
/// its workload's, read by the workload's readers under their `workload.` names.
fn read_job_fields(s: &Scenario, jobs: &[JobSpec], usage: &mut Usage) {
    for (i, j) in jobs.iter().enumerate() {
        for key in ["name", "nodes", "node_list", "placement", "start"] {
            usage.read(&format!("jobs.{i}.{key}"));
        }
        if j.placement == crate::config::Placement::Random {
            usage.read("simulation.seed");
        }
    }
    let _ = s;
}

/// Plans job `i` and records the keys its workload's readers consume.
fn plan_job(
    s: &Scenario,
    i: usize,
    j: &JobSpec,
    topo: &Topology,
    fidelity: Fidelity,
    seed: u64,
    usage: &mut Usage,
) -> Result<JobPlan, RunError> {
    let under = format!("jobs.{i}.workload");
    let mut view = usage.view(&under, "workload", "jobs");
    let js = s.for_job(j);
    let ranks = job_ranks(j, topo);
    let mut dag = Dag::new();
    let mut sizes = Vec::new();
    let mut model = ModelPlan::None;
    match &j.workload {
        WorkloadSpec::Collective(w) => {
            // sizes one after another, as nccl-tests runs them
            let mut gate: Vec<Dep> = Vec::new();
            for &bytes in &w.sizes {
                let spec = spec_for(w, bytes, &ranks, topo)?;
                read_collective_keys(&js, w, &spec, &ranks, topo, fidelity, &mut view);
                let op = dag.begin_op(format!("{} {}", spec.op.name(), format_bytes(bytes)));
                let done = crate::run::lower_collective(w, &spec, &ranks, topo, &mut dag, &gate)?;
                gate = vec![Dep::Done(done)];
                sizes.push(SizeOp { op, spec });
            }
        }
        WorkloadSpec::Traffic(t) => {
            read_traffic_keys(&js, t, fidelity, &mut view);
            let logical = logical_traffic(&js, t, seed)?;
            dag.append(&logical, |g| ranks[g.0 as usize], &[], "");
        }
        // A model's plan (TP/PP/DP/EP groups, a trace's ranks) is made on
        // the job's GPUs in placement order: plan rank r on ranks[r], every
        // communicator lowered on the real topology. Slow GPUs stretch the
        // job's own compute (their `at` counts from the job's start).
        WorkloadSpec::Training(t) => {
            read_model_workload_keys(&js, fidelity, &mut view);
            let mut step = training::build_on(t, topo, &ranks)?;
            dag = slowed(s, topo, std::mem::replace(&mut step.dag, Dag::new()));
            model = ModelPlan::Training(Box::new(step));
        }
        WorkloadSpec::Inference(w) => {
            read_model_workload_keys(&js, fidelity, &mut view);
            let mut batch = inference::build_on(w, topo, seed, &ranks)?;
            dag = slowed(s, topo, std::mem::replace(&mut batch.dag, Dag::new()));
            model = ModelPlan::Inference(Box::new(batch));
        }
        WorkloadSpec::Chakra(c) => {
            read_chakra_keys(&js, c, fidelity, &mut view);
            dag = slowed(s, topo, c.build_on(topo, &ranks)?);
        }
        WorkloadSpec::Jobs(_) => {
            return Err(RunError::Unsupported(format!(
                "jobs.{i}.workload.kind: a {} job is not supported",
                j.workload.kind_name()
            )))
        }
    }
    usage.merge_view(&view, &under, "workload");
    Ok(JobPlan { dag, sizes, model })
}

/// `dag` with the scenario's slow GPUs stretching its compute.
fn slowed(s: &Scenario, topo: &Topology, dag: Dag) -> Dag {
    let applied = crate::workload::faults::Applied::new(s.faults(), topo);
    match applied.slow_dag(&dag, topo) {
        std::borrow::Cow::Borrowed(_) => dag,
        std::borrow::Cow::Owned(d) => d,
    }
}

/// What a run of `dag` (a DAG `job` was added to at operation `first`, its
/// start `start`) looks like to the job's own report: its operations' timing
/// from its start, its makespan the end of its last task minus its start.
fn job_view(out: &RunOutput, job: &Dag, first: u32, start: SimTime, end: SimTime) -> RunOutput {
    let shift = |t: SimTime| SimTime(t.0.saturating_sub(start.0));
    RunOutput {
        makespan: shift(end),
        op_timing: (0..job.ops.len())
            .map(|o| {
                out.op_timing.get(first as usize + o).map_or_else(
                    crate::dag::OpTiming::default,
                    |t| crate::dag::OpTiming {
                        start: shift(t.start),
                        end: shift(t.end),
                    },
                )
            })
            .collect(),
        ..RunOutput::default()
    }
}

/// The training or inference section of job `j` from `view` (see [`job_view`]).
fn model_sections(
    j: &JobSpec,
    p: &JobPlan,
    view: &RunOutput,
) -> (Option<TrainingReport>, Option<InferenceReport>) {
    match (&j.workload, &p.model) {
        (WorkloadSpec::Training(t), ModelPlan::Training(step)) => {
            (Some(training_report(t, step, &p.dag, view)), None)
        }
        (WorkloadSpec::Inference(w), ModelPlan::Inference(b)) => {
            (None, Some(inference::report(w, b, &p.dag, view)))
        }
        _ => (None, None),
    }
}

/// A traffic pattern or flow list on a logical cluster of the job's nodes
/// (`js.cluster.hosts`), its GPUs numbered `0..n` as the job's ranks.
fn logical_traffic(
    js: &Scenario,
    t: &crate::workload::traffic::TrafficSpec,
    seed: u64,
) -> Result<Dag, RunError> {
    use crate::workload::traffic::{generate, TrafficSpec};
    let logical = crate::topology::build(
        js.cluster(),
        js.fabric().links(),
        &crate::topology::TopologySpec::SingleSwitch,
    )?;
    let mut spec = t.clone();
    match &mut spec {
        TrafficSpec::Permutation { seed: s, .. } => *s = seed,
        TrafficSpec::RandomPairs {
            seed: s,
            source_rate,
            ..
        } => {
            *s = seed;
            *source_rate = js.host_rate();
        }
        _ => {}
    }
    let mut dag = if let TrafficSpec::Flows(list) = &spec {
        let mut dag = Dag::new();
        crate::workload::flows::lower(list, &mut dag);
        dag
    } else {
        generate(&spec, &logical)
            .map_err(|e| RunError::Unsupported(format!("workload.{}: {}", e.field, e.message)))?
    };
    crate::workload::traffic::one_connection_per_flow(&mut dag);
    Ok(dag)
}

/// Adds job `j`'s DAG to `dag` behind a delay of its start; returns the range
/// of its operations.
fn add_job(dag: &mut Dag, j: &JobSpec, job: &Dag, topo: &Topology) -> std::ops::Range<u32> {
    let gate = if j.start > SimTime::ZERO {
        dag.begin_op(format!("{}: start", j.name));
        let first = job_ranks(j, topo).first().copied().unwrap_or(GpuId(0));
        vec![Dep::Done(dag.compute(first, j.start, &[]))]
    } else {
        Vec::new()
    };
    let first = dag.append(job, |g| g, &gate, &format!("{}: ", j.name));
    first..dag.ops.len() as u32
}

/// (first task's start, last task's end) of the operations `ops` that hold tasks.
fn span(dag: &Dag, out: &RunOutput, ops: std::ops::Range<u32>) -> (SimTime, SimTime) {
    let mut used = vec![false; dag.ops.len()];
    for t in dag.tasks() {
        used[t.op as usize] = true;
    }
    let mut first = SimTime(u64::MAX);
    let mut last = SimTime::ZERO;
    for op in ops {
        if let (true, Some(t)) = (used[op as usize], out.op_timing.get(op as usize)) {
            first = first.min(t.start);
            last = last.max(t.end);
        }
    }
    (first.min(last), last)
}

/// The keys a `[[jobs]]` scenario's readers consume (what [`run_jobs`]
/// records, without running).
pub(super) fn read_jobs_keys(
    s: &Scenario,
    jobs: &[JobSpec],
    topo: &Topology,
    fidelity: Fidelity,
    usage: &mut Usage,
) -> Result<(), RunError> {
    read_job_fields(s, jobs, usage);
    for (i, j) in jobs.iter().enumerate() {
        plan_job(s, i, j, topo, fidelity, s.seed(), usage)
            .map_err(|e| e.during(|| format!("job {:?}", j.name)))?;
    }
    Ok(())
}

/// Runs every job together, then each alone, and records the per-job results.
pub(super) fn run_jobs(
    jobs: &[JobSpec],
    exec: &Executor<'_>,
    acc: &mut Accumulated,
    usage: &mut Usage,
) -> Result<(), RunError> {
    let (s, topo) = (exec.scenario, exec.topo);
    read_job_fields(s, jobs, usage);
    let mut plans = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        let p = plan_job(s, i, j, topo, exec.fidelity, exec.seed, usage)
            .map_err(|e| e.during(|| format!("job {:?}", j.name)))?;
        plans.push(p);
    }
    if exec.opts.detail && exec.fidelity != Fidelity::Analytical {
        acc.keep_matrix(topo.hosts);
    }
    if exec.opts.flow_records {
        acc.keep_every_record();
    }
    // all jobs in one DAG: they share the fabric
    let mut all = Dag::new();
    let ranges: Vec<_> = jobs
        .iter()
        .zip(&plans)
        .map(|(j, p)| add_job(&mut all, j, &p.dag, topo))
        .collect();
    let mut out = exec
        .run_faulty(&all, SimTime::ZERO)
        .map_err(|e| e.during(|| "the jobs together".into()))?;
    let shared: Vec<_> = ranges.iter().map(|r| span(&all, &out, r.clone())).collect();
    let shared_out = RunOutput {
        op_timing: out.op_timing.clone(),
        ..RunOutput::default()
    };
    acc.add_run("jobs", &all, topo, &mut out, 0);
    let mut results = Vec::with_capacity(jobs.len());
    // each job alone: independent runs, on worker threads
    let alone_runs = run_parallel(workers(exec, jobs.len(), &all), jobs.len(), |k| {
        let (j, p) = (&jobs[k], &plans[k]);
        let mut alone = Dag::new();
        let range = add_job(&mut alone, j, &p.dag, topo);
        let out = exec
            .run_faulty(&alone, SimTime::ZERO)
            .map_err(|e| e.during(|| format!("job {:?} alone", j.name)))?;
        Ok((alone, range, out))
    })?;
    for (k, ((j, p), (alone, range, out_alone))) in
        jobs.iter().zip(&plans).zip(alone_runs).enumerate()
    {
        acc.add_events(out_alone.events);
        let (first, end) = shared[k];
        let (_, end_alone) = span(&alone, &out_alone, range.clone());
        let (training, inference) = model_sections(
            j,
            p,
            &job_view(&shared_out, &p.dag, ranges[k].start, j.start, end),
        );
        let (alone_training, alone_inference) = model_sections(
            j,
            p,
            &job_view(&out_alone, &p.dag, range.start, j.start, end_alone),
        );
        let makespan = SimTime(end.0.saturating_sub(j.start.0));
        let makespan_alone = SimTime(end_alone.0.saturating_sub(j.start.0));
        let ranks = job_ranks(j, topo).len() as u32;
        let rows = |ops: &[crate::dag::OpTiming], base: u32| -> Vec<CollectiveRow> {
            let WorkloadSpec::Collective(w) = &j.workload else {
                return Vec::new();
            };
            p.sizes
                .iter()
                .filter_map(|size| {
                    let t = ops.get((base + size.op) as usize)?;
                    Some(row(w, &size.spec, ranks, (t.end - t.start).as_secs_f64()))
                })
                .collect()
        };
        results.push(JobResult {
            name: j.name.clone(),
            kind: j.workload.kind_name().to_string(),
            placement: j.placement.name().to_string(),
            nodes: j.nodes.clone(),
            gpus: ranks,
            start_us: j.start.as_us(),
            first_task_us: first.as_us(),
            makespan_us: makespan.as_us(),
            alone_makespan_us: makespan_alone.as_us(),
            slowdown: if makespan_alone > SimTime::ZERO {
                makespan.as_secs_f64() / makespan_alone.as_secs_f64()
            } else {
                1.0
            },
            collectives: rows(&shared_out.op_timing, ranges[k].start),
            alone_collectives: rows(&out_alone.op_timing, range.start),
            training,
            alone_training,
            inference,
            alone_inference,
            faults: Vec::new(),
        });
    }
    let effects = job_fault_effects(jobs, exec, &shared, &all, acc)?;
    for (r, e) in results.iter_mut().zip(effects) {
        r.faults = e;
    }
    acc.set_jobs(results);
    Ok(())
}

/// Each fault of the scenario alone, with every job sharing the fabric: per
/// job, its makespan with that fault only against the shared run on the
/// healthy fabric (`shared`: each job's (first, end) in the run with every
/// fault, reused when there is only one). One extra shared run per fault, and
/// one healthy; the jobs are planned again for each, since a slow GPU stretches
/// a job's own compute from its start. `all` is the shared run's DAG, the
/// size of each of these runs.
fn job_fault_effects(
    jobs: &[JobSpec],
    exec: &Executor<'_>,
    shared: &[(SimTime, SimTime)],
    all: &Dag,
    acc: &mut Accumulated,
) -> Result<Vec<Vec<FaultEffect>>, RunError> {
    let (s, topo) = (exec.scenario, exec.topo);
    let mut out = vec![Vec::new(); jobs.len()];
    if s.faults().is_empty() {
        return Ok(out);
    }
    let makespans = |ends: &mut dyn Iterator<Item = SimTime>| -> Vec<SimTime> {
        ends.zip(jobs)
            .map(|(end, j)| SimTime(end.0.saturating_sub(j.start.0)))
            .collect()
    };
    let run_with = |chosen: &[usize]| -> Result<(Vec<SimTime>, u64), RunError> {
        let sc = s.with_faults_at(chosen);
        // the ledger was written by the run with every fault
        let mut scratch = Usage::new(&[]);
        let mut all = Dag::new();
        let mut ranges = Vec::with_capacity(jobs.len());
        for (i, j) in jobs.iter().enumerate() {
            let p = plan_job(&sc, i, j, topo, exec.fidelity, exec.seed, &mut scratch)?;
            ranges.push(add_job(&mut all, j, &p.dag, topo));
        }
        let applied = crate::workload::faults::Applied::new(sc.faults(), topo);
        let run = Executor {
            link_events: &applied.link_events,
            ..*exec
        };
        let o = run.run_faulty(&all, SimTime::ZERO)?;
        let ends = makespans(&mut ranges.iter().map(|r| span(&all, &o, r.clone()).1));
        Ok((ends, o.events))
    };
    // run 0 on the healthy fabric, run i + 1 with fault i alone (when there
    // are several: one fault alone is the shared run with every fault)
    let n = if s.faults().len() == 1 {
        1
    } else {
        1 + s.faults().len()
    };
    let runs = run_parallel(workers(exec, n, all), n, |r| {
        if r == 0 {
            run_with(&[]).map_err(|e| e.during(|| "the jobs on the healthy fabric".into()))
        } else {
            let f = &s.faults()[r - 1];
            run_with(&[r - 1])
                .map_err(|e| e.during(|| format!("the jobs with fault {:?} alone", f.name)))
        }
    })?;
    for (_, events) in &runs {
        acc.add_events(*events);
    }
    let healthy = &runs[0].0;
    for (i, f) in s.faults().iter().enumerate() {
        let alone = if s.faults().len() == 1 {
            makespans(&mut shared.iter().map(|&(_, end)| end))
        } else {
            runs[i + 1].0.clone()
        };
        for (k, (t, h)) in alone.iter().zip(healthy).enumerate() {
            let (t, h) = (t.as_secs_f64(), h.as_secs_f64());
            out[k].push(FaultEffect {
                name: f.name.clone(),
                kind: fault_kind_name(&f.kind).into(),
                at_us: f.at.as_us(),
                step_time_s: t,
                healthy_step_time_s: h,
                slowdown: if h > 0.0 { t / h } else { 0.0 },
            });
        }
    }
    Ok(out)
}

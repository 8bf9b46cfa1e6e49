//! `[[jobs]]`: several jobs sharing one fabric, each a workload (the keys of
//! `[workload]`, under `[jobs.workload]`) on a placement of whole nodes.
//!
//! The jobs' fields are checked with the rest of the file; the placements are
//! made once the topology is built (a `spread` job needs each node's leaf),
//! in a fixed order: first the `list` jobs (their nodes must not overlap),
//! then the others in file order from the nodes still free.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::raw::{RawJob, RawScenario};
use super::validate::Validator;
use super::WorkloadSpec;
use crate::topology::Topology;
use crate::units::SimTime;

/// Most jobs one scenario may hold.
pub const MAX_JOBS: usize = 256;

/// How a job's nodes are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The first free nodes in index order (fills a leaf, then the next; Slurm's
    /// default block placement).
    Packed,
    /// Round-robin over the leaves (edge switches): one free node of each leaf
    /// in turn, so the job's traffic crosses the spine as much as it can.
    Spread,
    /// Free nodes drawn at random, seeded from `simulation.seed` and the job's index.
    Random,
    /// The nodes of `node_list`, in that order.
    List,
}

impl Placement {
    /// The name as written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Packed => "packed",
            Placement::Spread => "spread",
            Placement::Random => "random",
            Placement::List => "list",
        }
    }
}

/// A checked job: its workload on its nodes, from its start.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// Name shown in results.
    pub name: String,
    /// How its nodes were chosen.
    pub placement: Placement,
    /// The physical nodes (hosts) it runs on, in rank order: the job's rank
    /// `r` is GPU `r % gpus_per_node` of node `nodes[r / gpus_per_node]`.
    pub nodes: Vec<u32>,
    /// When its first task may start, picoseconds from the start of the run.
    pub start: SimTime,
    /// What it runs (any kind but jobs), on its own ranks: a training or
    /// inference plan's degrees multiply to the job's GPUs, a Chakra trace
    /// set has one rank per GPU of the job.
    pub workload: WorkloadSpec,
}

/// A job whose fields are checked, before its nodes are chosen.
#[derive(Clone, Debug)]
pub(super) struct JobDraft {
    name: String,
    placement: Placement,
    /// Nodes asked for (`nodes`, or the length of `node_list`).
    count: u32,
    /// `node_list`, checked to be within the cluster and without repeats.
    list: Vec<u32>,
    start: SimTime,
    workload: WorkloadSpec,
}

impl Validator<'_> {
    /// Checks every `[[jobs]]` entry (names, counts, placements, start times
    /// and workloads); `None` when there are none or one failed. A scenario
    /// with jobs may not also set `[workload]`.
    pub(super) fn jobs(
        &mut self,
        raw: &RawScenario,
        hosts: Option<u32>,
        gpus_per_host: Option<u32>,
    ) -> Option<Vec<JobDraft>> {
        if raw.jobs.is_empty() {
            return None;
        }
        if let Some(key) = super::keys_set(self.src.text)
            .into_iter()
            .find(|k| k.starts_with("workload."))
        {
            self.err(
                &key,
                "a [workload] table beside [[jobs]]",
                "either one [workload] or several [[jobs]], each with its own [jobs.workload]",
            );
        }
        if raw.jobs.len() > MAX_JOBS {
            self.err(
                &format!("jobs.{MAX_JOBS}"),
                format!("{} jobs", raw.jobs.len()),
                format!("at most {MAX_JOBS} jobs"),
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        let mut names: Vec<String> = Vec::new();
        for (i, j) in raw.jobs.iter().enumerate() {
            match self.job(i, j, hosts, gpus_per_host, &names) {
                Some(d) => {
                    names.push(d.name.clone());
                    out.push(d);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn job(
        &mut self,
        i: usize,
        j: &RawJob,
        hosts: Option<u32>,
        gpus_per_host: Option<u32>,
        taken_names: &[String],
    ) -> Option<JobDraft> {
        let p = |k: &str| format!("jobs.{i}.{k}");
        let name = j.name.clone().unwrap_or_else(|| format!("job{i}"));
        let mut ok = true;
        if taken_names.contains(&name) {
            self.err(
                &p("name"),
                format!("{name:?} again"),
                "a name no other job has",
            );
            ok = false;
        }
        let placement = match j.placement.as_deref() {
            None if j.node_list.is_some() => Placement::List,
            None | Some("packed") => Placement::Packed,
            Some("spread") => Placement::Spread,
            Some("random") => Placement::Random,
            Some("list") => Placement::List,
            Some(other) => {
                self.err(
                    &p("placement"),
                    format!("{other:?}"),
                    "\"packed\", \"spread\", \"random\" or \"list\"",
                );
                return None;
            }
        };
        let mut list = Vec::new();
        let count = match (placement, &j.node_list, j.nodes) {
            (Placement::List, None, _) => {
                self.err(
                    &p("node_list"),
                    "nothing",
                    "the job's nodes, such as `node_list = [0, 1]`, with placement = \"list\"",
                );
                return None;
            }
            (Placement::List, Some(_), Some(n)) => {
                self.err(
                    &p("nodes"),
                    n.to_string(),
                    "no `nodes` beside `node_list`: the list says how many",
                );
                return None;
            }
            (Placement::List, Some(l), None) => {
                if l.is_empty() {
                    self.err(&p("node_list"), "an empty list", "at least one node");
                    return None;
                }
                for (k, &n) in l.iter().enumerate() {
                    let field = format!("jobs.{i}.node_list.{k}");
                    match hosts {
                        Some(h) if n < 0 || n >= i64::from(h) => {
                            self.err(&field, n.to_string(), format!("a node index below {h}"));
                            ok = false;
                        }
                        _ if list.contains(&(n as u32)) => {
                            self.err(&field, format!("node {n} twice"), "each node once");
                            ok = false;
                        }
                        _ => list.push(n as u32),
                    }
                }
                l.len() as u32
            }
            (_, Some(_), _) => {
                self.err(
                    &p("node_list"),
                    format!("a node list with placement = {:?}", placement.name()),
                    "placement = \"list\" (or no placement) with a node list",
                );
                return None;
            }
            (_, None, n) => {
                let n = self.count(&p("nodes"), n, None, 1, "the job's number of nodes")?;
                if let Some(h) = hosts {
                    if n > h {
                        self.err(
                            &p("nodes"),
                            n.to_string(),
                            format!("at most the cluster's {h} nodes"),
                        );
                        return None;
                    }
                }
                n
            }
        };
        let start = self.time(&p("start"), j.start.as_ref(), Some("0us"));
        let Some(w) = &j.workload else {
            self.err(
                &p("workload"),
                "nothing",
                "a [jobs.workload] table with the keys of [workload]",
            );
            return None;
        };
        if w.extra_flows.is_some() {
            self.err(
                &format!("jobs.{i}.workload.extra_flows"),
                "extra flows in a job",
                "no extra flows in a job (not supported yet): write them as a job of kind = \"flows\"",
            );
            return None;
        }
        let gpus = match (gpus_per_host, count) {
            (Some(g), c) => Some(u64::from(g) * u64::from(c)),
            _ => None,
        };
        let saved = self.workload_at.replace(format!("jobs.{i}.workload"));
        let workload = self.workload(w, gpus);
        self.workload_at = saved;
        if !ok {
            return None;
        }
        Some(JobDraft {
            name,
            placement,
            count,
            list,
            start: start?,
            workload: workload?,
        })
    }

    /// Chooses every job's nodes on the built topology: `list` jobs first
    /// (overlaps are errors), then the others in file order from the free
    /// nodes (a job larger than what is left is an error).
    pub(super) fn place_jobs(
        &mut self,
        drafts: Vec<JobDraft>,
        topo: &Topology,
        seed: u64,
    ) -> Option<Vec<JobSpec>> {
        let hosts = topo.hosts as usize;
        let mut owner: Vec<Option<usize>> = vec![None; hosts];
        let mut ok = true;
        for (i, d) in drafts.iter().enumerate() {
            if d.placement != Placement::List {
                continue;
            }
            for (k, &n) in d.list.iter().enumerate() {
                if let Some(o) = owner[n as usize] {
                    self.err(
                        &format!("jobs.{i}.node_list.{k}"),
                        format!("node {n}, which job {:?} also takes", drafts[o].name),
                        "nodes no other job takes (jobs may not overlap)",
                    );
                    ok = false;
                } else {
                    owner[n as usize] = Some(i);
                }
            }
        }
        if !ok {
            return None;
        }
        let requests: Vec<(Placement, u32, &[u32])> = drafts
            .iter()
            .map(|d| (d.placement, d.count, d.list.as_slice()))
            .collect();
        let nodes = match choose_nodes(&requests, topo, seed) {
            Ok(chosen) => chosen,
            Err(short) => {
                self.err(
                    &format!("jobs.{}.nodes", short.job),
                    format!("{} nodes", drafts[short.job].count),
                    format!(
                        "at most the {} nodes left free by the jobs placed before it ({} nodes in all; `list` jobs are placed first, then the others in file order)",
                        short.free, hosts
                    ),
                );
                return None;
            }
        };
        Some(
            drafts
                .into_iter()
                .zip(nodes)
                .map(|(d, nodes)| JobSpec {
                    name: d.name,
                    placement: d.placement,
                    nodes,
                    start: d.start,
                    workload: d.workload,
                })
                .collect(),
        )
    }
}

/// A job asked for more nodes than the jobs placed before it left free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotEnoughNodes {
    /// Index of the job in file order.
    pub job: usize,
    /// Nodes still free when its turn came.
    pub free: usize,
}

/// Every job's nodes, given for each job (in file order) its placement, the
/// number of nodes it asks for and, for `list` jobs, its nodes (which must not
/// overlap). `list` jobs take theirs first; the others are placed in file
/// order from the nodes still free. `random` draws from a generator seeded by
/// `seed` and the job's index, so a different run seed moves random jobs (and
/// the jobs placed after them).
///
/// # Errors
/// The first job asking for more nodes than are left free.
pub fn choose_nodes(
    requests: &[(Placement, u32, &[u32])],
    topo: &Topology,
    seed: u64,
) -> Result<Vec<Vec<u32>>, NotEnoughNodes> {
    let hosts = topo.hosts as usize;
    let mut taken = vec![false; hosts];
    let mut nodes: Vec<Vec<u32>> = vec![Vec::new(); requests.len()];
    for (i, &(placement, _, list)) in requests.iter().enumerate() {
        if placement == Placement::List {
            for &n in list {
                if let Some(t) = taken.get_mut(n as usize) {
                    *t = true;
                }
            }
            nodes[i] = list.to_vec();
        }
    }
    let nics = (topo.nics.len() / hosts.max(1)).max(1); // NIC ports per host
    let leaf_of = |h: usize| topo.nics.get(h * nics).map_or(0, |n| n.leaf.0);
    for (i, &(placement, count, _)) in requests.iter().enumerate() {
        if placement == Placement::List {
            continue;
        }
        let free: Vec<u32> = (0..hosts as u32).filter(|&h| !taken[h as usize]).collect();
        let n = count as usize;
        if n > free.len() {
            return Err(NotEnoughNodes {
                job: i,
                free: free.len(),
            });
        }
        let chosen: Vec<u32> = match placement {
            Placement::Packed | Placement::List => free[..n].to_vec(),
            Placement::Spread => {
                // free nodes grouped by leaf, leaves in order of their first node
                let mut leaves: Vec<(u32, Vec<u32>)> = Vec::new();
                for &h in &free {
                    let l = leaf_of(h as usize);
                    match leaves.iter_mut().find(|(x, _)| *x == l) {
                        Some((_, v)) => v.push(h),
                        None => leaves.push((l, vec![h])),
                    }
                }
                let mut out = Vec::with_capacity(n);
                let mut round = 0;
                while out.len() < n {
                    for (_, v) in &leaves {
                        if let Some(&h) = v.get(round) {
                            if out.len() < n {
                                out.push(h);
                            }
                        }
                    }
                    round += 1;
                }
                out
            }
            Placement::Random => {
                let mut rng = ChaCha8Rng::seed_from_u64(
                    seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                let mut pool = free;
                // partial Fisher-Yates: the first n of a uniform shuffle
                for k in 0..n {
                    let j = k + (rng.next_u64() % (pool.len() - k) as u64) as usize;
                    pool.swap(k, j);
                }
                let mut out = pool[..n].to_vec();
                out.sort_unstable();
                out
            }
        };
        for &h in &chosen {
            taken[h as usize] = true;
        }
        nodes[i] = chosen;
    }
    Ok(nodes)
}

/// The jobs as placed with run seed `seed` instead of the scenario's: the same
/// requests (a job keeps its count, a `list` job its nodes), so only `random`
/// jobs and the jobs placed after them can move. Placement cannot fail here:
/// whether the nodes suffice depends on the counts alone, which validation checked.
pub fn placed_with_seed(jobs: &[JobSpec], topo: &Topology, seed: u64) -> Vec<JobSpec> {
    if !jobs.iter().any(|j| j.placement == Placement::Random) {
        return jobs.to_vec();
    }
    let requests: Vec<(Placement, u32, &[u32])> = jobs
        .iter()
        .map(|j| (j.placement, j.nodes.len() as u32, j.nodes.as_slice()))
        .collect();
    match choose_nodes(&requests, topo, seed) {
        Ok(nodes) => jobs
            .iter()
            .zip(nodes)
            .map(|(j, nodes)| JobSpec { nodes, ..j.clone() })
            .collect(),
        Err(_) => jobs.to_vec(),
    }
}

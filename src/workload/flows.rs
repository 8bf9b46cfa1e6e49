//! Explicit flow lists (`workload.kind = "flows"`): each flow a source, a
//! destination, a size, an earliest start and the flows it waits for, as
//! htsim's connection matrices express them with triggers (a flow that starts
//! when another's last byte is sent, `send_done_trigger`, or received,
//! `recv_done_trigger`) and as [`crate::dag`] does with [`Dep::Sent`] and
//! [`Dep::Done`]. [`import_htsim_cm`] reads an htsim connection matrix into a
//! list, so a peer's scenario runs as it is.
//!
//! **Timing.** A flow starts at the later of its `start` and the moment its
//! last dependency is met. A start time is a pure delay task on the source GPU
//! (the backends run compute tasks as delays), as for extra flows and random
//! arrivals ([`crate::workload::traffic`]).
//!
//! **Results.** Each flow is its own DAG operation named after its id, so its
//! start (when its dependencies released it) and end (last byte delivered) are
//! the operation's timing ([`crate::report::ListedFlowResult`]).

use crate::dag::{Dag, Dep, TaskId};
use crate::topology::GpuId;
use crate::units::SimTime;

/// One flow of a list.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedFlow {
    /// Its name as written (a number's digits, or a string's text).
    pub id: String,
    /// Source GPU.
    pub src: GpuId,
    /// Destination GPU.
    pub dst: GpuId,
    /// Payload bytes.
    pub bytes: u64,
    /// Earliest start, picoseconds from the start of the run.
    pub start: SimTime,
    /// Indices (in the list) of the flows whose last byte must have arrived.
    pub after: Vec<usize>,
    /// Indices of the flows whose last byte must have left its source.
    pub after_sent: Vec<usize>,
    /// Its traffic class (index among the fabric's classes), or `None` for
    /// the workload's (packet level only).
    pub class: Option<u8>,
}

/// The flows in an order where every flow comes after those it waits for, file
/// order among the ready ones (Kahn's algorithm with the smallest index first).
///
/// # Errors
/// The indices of a dependency cycle, in the order they wait for each other.
pub fn order(flows: &[ListedFlow]) -> Result<Vec<usize>, Vec<usize>> {
    let n = flows.len();
    let mut waiting = vec![0usize; n];
    let mut waiters: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, f) in flows.iter().enumerate() {
        for &d in f.after.iter().chain(&f.after_sent) {
            waiting[i] += 1;
            waiters[d].push(i);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        out.push(i);
        for &w in &waiters[i] {
            waiting[w] -= 1;
            if waiting[w] == 0 {
                ready.insert(w);
            }
        }
    }
    if out.len() == n {
        return Ok(out);
    }
    // every flow left waits for another one left: walk back from the first
    // until a flow repeats, which closes a cycle
    let stuck = |i: usize| waiting[i] > 0;
    let mut at = (0..n).find(|&i| stuck(i)).unwrap_or(0);
    let mut seen = vec![usize::MAX; n];
    let mut path = Vec::new();
    while seen[at] == usize::MAX {
        seen[at] = path.len();
        path.push(at);
        let f = &flows[at];
        at = f
            .after
            .iter()
            .chain(&f.after_sent)
            .copied()
            .find(|&d| stuck(d))
            .unwrap_or(at);
    }
    let mut cycle = path.split_off(seen[at]);
    // the walk followed "waits for"; report it in the order flows start
    cycle.reverse();
    Err(cycle)
}

/// Lowers `flows` into `dag`: a delay per flow with a start time, then each
/// flow as its own operation (named after its id) in dependency order. Returns,
/// per flow in list order, the index of its operation in [`Dag::ops`].
///
/// # Panics
/// Never for a list [`order`] accepts; a list with a cycle is lowered without
/// the flows of the cycle (the validator refuses such lists first).
pub fn lower(flows: &[ListedFlow], dag: &mut Dag) -> Vec<u32> {
    let order = order(flows).unwrap_or_default();
    let mut delay: Vec<Option<TaskId>> = vec![None; flows.len()];
    if flows.iter().any(|f| f.start > SimTime::ZERO) {
        dag.begin_op("start times");
        for (i, f) in flows.iter().enumerate() {
            if f.start > SimTime::ZERO {
                delay[i] = Some(dag.compute(f.src, f.start, &[]));
            }
        }
    }
    let mut task = vec![TaskId(0); flows.len()];
    let mut op = vec![0u32; flows.len()];
    let mut deps = Vec::new();
    for i in order {
        let f = &flows[i];
        deps.clear();
        deps.extend(delay[i].map(Dep::Done));
        deps.extend(f.after.iter().map(|&d| Dep::Done(task[d])));
        deps.extend(f.after_sent.iter().map(|&d| Dep::Sent(task[d])));
        op[i] = dag.begin_op(&f.id);
        task[i] = dag.transfer(f.src, f.dst, f.bytes, &deps);
        if let Some(c) = f.class {
            dag.set_class(task[i], c);
        }
    }
    op
}

/// Why an htsim connection matrix cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{line}: {message}")]
pub struct CmError {
    /// 1-based line of the file (0: the file as a whole).
    pub line: usize,
    /// What was found and what was expected.
    pub message: String,
}

/// An htsim connection matrix read as a flow list.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedCm {
    /// `Nodes N`: the hosts of the htsim run (one NIC each).
    pub nodes: u32,
    /// The flows, in file order; ids are htsim's flow ids (`c<line>` for a
    /// connection without one).
    pub flows: Vec<ListedFlow>,
}

/// Reads an htsim connection matrix (`sim/datacenter/connection_matrix.cpp`
/// in Broadcom/csg-htsim): `Nodes N`, `Connections C`, optional `Triggers T`,
/// then `src->dst [id I] [start T_us] [size S] [trigger X]
/// [send_done_trigger X] [recv_done_trigger X]` lines and `trigger id X
/// oneshot|barrier [count K]` lines. A flow with `trigger X` waits for the
/// flows that name X in their `send_done_trigger` (last byte sent) or
/// `recv_done_trigger` (last byte received): a oneshot trigger with one such
/// flow, or a barrier whose count equals their number, is exactly a list of
/// dependencies. htsim truncates `start` to whole microseconds (`(uint32_t)`
/// before `timeFromUs`); so does this.
///
/// # Errors
/// A located [`CmError`] for what a flow list cannot express faithfully: a
/// oneshot trigger set off by several flows (the first one fires it), a
/// multishot trigger, a barrier whose count differs from its flows, `size 0`
/// (an endless flow), `prio`, `addon` and `failure` lines; and for malformed
/// lines, counts that disagree with the header, undefined triggers.
pub fn import_htsim_cm(text: &str) -> Result<ImportedCm, CmError> {
    #[derive(Default)]
    struct Trigger {
        line: usize,
        kind: Option<&'static str>,
        count: Option<u64>,
        // (flow index, fired when sent (true) or received (false))
        set_off_by: Vec<(usize, bool)>,
        starts: Vec<usize>,
    }
    let bad = |line: usize, message: String| CmError { line, message };
    let mut nodes: Option<u32> = None;
    let mut declared_conns: Option<usize> = None;
    let mut declared_triggers: Option<usize> = None;
    let mut flows: Vec<ListedFlow> = Vec::new();
    let mut triggers: std::collections::BTreeMap<u64, Trigger> = Default::default();
    let mut trigger_lines = 0usize;
    let mut ids = std::collections::HashMap::new();
    for (ln, raw) in text.lines().enumerate() {
        let line = ln + 1;
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        let Some(&first) = tokens.first() else {
            continue;
        };
        if first.starts_with('#') {
            continue;
        }
        let number = |i: usize, what: &str| -> Result<u64, CmError> {
            tokens
                .get(i)
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or_else(|| {
                    bad(
                        line,
                        format!(
                            "`{what}` needs a whole number after it, found {:?}",
                            tokens.get(i).copied().unwrap_or("end of line")
                        ),
                    )
                })
        };
        match first {
            "Nodes" => {
                let v = number(1, "Nodes")?;
                nodes = Some(u32::try_from(v).map_err(|_| {
                    bad(line, format!("Nodes {v} exceeds 2^32 hosts"))
                })?);
            }
            "Connections" => declared_conns = Some(number(1, "Connections")? as usize),
            "Triggers" => declared_triggers = Some(number(1, "Triggers")? as usize),
            "Failures" | "failure" => {
                return Err(bad(
                    line,
                    "htsim link failures are not imported; describe them as [[faults]] (link_down, switch_down) in the scenario".into(),
                ))
            }
            "trigger" => {
                trigger_lines += 1;
                let mut id = None;
                let mut kind = None;
                let mut count = None;
                let mut i = 1;
                while i < tokens.len() {
                    match tokens[i] {
                        "id" => {
                            id = Some(number(i + 1, "id")?);
                            i += 1;
                        }
                        "count" => {
                            count = Some(number(i + 1, "count")?);
                            i += 1;
                        }
                        "oneshot" => kind = Some("oneshot"),
                        "barrier" => kind = Some("barrier"),
                        "multishot" => {
                            return Err(bad(
                                line,
                                "a multishot trigger starts one flow per activation, which a list of dependencies cannot express; use oneshot or barrier triggers".into(),
                            ))
                        }
                        other => {
                            return Err(bad(
                                line,
                                format!("unknown trigger attribute {other:?}; expected id, oneshot, barrier, count"),
                            ))
                        }
                    }
                    i += 1;
                }
                let id = id.filter(|&i| i > 0).ok_or_else(|| {
                    bad(line, "a trigger needs `id N` with N > 0".into())
                })?;
                let t = triggers.entry(id).or_default();
                if t.kind.is_some() {
                    return Err(bad(line, format!("trigger {id} is defined twice")));
                }
                t.line = line;
                t.kind = Some(kind.ok_or_else(|| {
                    bad(line, format!("trigger {id} needs a type: oneshot or barrier"))
                })?);
                t.count = count;
            }
            conn if conn.contains("->") => {
                let (s, d) = conn.split_once("->").unwrap_or_default();
                let node = |v: &str, what: &str| {
                    v.parse::<u32>().map_err(|_| {
                        bad(line, format!("{what} {v:?} in {conn:?} is not a host number"))
                    })
                };
                let (src, dst) = (node(s, "source")?, node(d, "destination")?);
                let index = flows.len();
                let mut id = None;
                let mut start_us: Option<f64> = None;
                let mut size = None;
                let mut i = 1;
                while i < tokens.len() {
                    match tokens[i] {
                        "id" => {
                            id = Some(number(i + 1, "id")?);
                            i += 1;
                        }
                        "start" => {
                            let v = tokens.get(i + 1).and_then(|t| t.parse::<f64>().ok());
                            start_us = Some(v.filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| {
                                bad(line, "`start` needs a time in microseconds, 0 or more".into())
                            })?);
                            i += 1;
                        }
                        "size" => {
                            size = Some(number(i + 1, "size")?);
                            i += 1;
                        }
                        key @ ("trigger" | "send_done_trigger" | "recv_done_trigger") => {
                            let t = number(i + 1, key)?;
                            let entry = triggers.entry(t).or_default();
                            match key {
                                "trigger" => entry.starts.push(index),
                                "send_done_trigger" => entry.set_off_by.push((index, true)),
                                _ => entry.set_off_by.push((index, false)),
                            }
                            i += 1;
                        }
                        other @ ("prio" | "addon") => {
                            return Err(bad(
                                line,
                                format!("`{other}` (flow priority classes) is not modelled; remove it to run the flow without"),
                            ))
                        }
                        other => {
                            return Err(bad(
                                line,
                                format!("unknown connection attribute {other:?}; expected id, start, size, trigger, send_done_trigger, recv_done_trigger"),
                            ))
                        }
                    }
                    i += 1;
                }
                let bytes = match size {
                    Some(0) | None => {
                        return Err(bad(
                            line,
                            "a connection needs `size B` with B > 0 (htsim's size 0 is an endless flow, which never completes)".into(),
                        ))
                    }
                    Some(b) => b,
                };
                let name = id.map_or_else(|| format!("c{line}"), |i| i.to_string());
                if let Some(prev) = ids.insert(name.clone(), line) {
                    return Err(bad(line, format!("flow id {name} already used at line {prev}")));
                }
                flows.push(ListedFlow {
                    id: name,
                    src: GpuId(src),
                    dst: GpuId(dst),
                    bytes,
                    // htsim: timeFromUs((uint32_t)crt->start)
                    start: SimTime::from_us(start_us.unwrap_or(0.0).floor() as u64),
                    after: Vec::new(),
                    after_sent: Vec::new(),
                    class: None,
                });
            }
            other => {
                return Err(bad(
                    line,
                    format!("unknown line starting with {other:?}; expected Nodes, Connections, Triggers, a `src->dst` connection or a `trigger`"),
                ))
            }
        }
    }
    let nodes = nodes.ok_or_else(|| bad(0, "no `Nodes N` line".into()))?;
    for f in &flows {
        for g in [f.src, f.dst] {
            if g.0 >= nodes {
                return Err(bad(
                    0,
                    format!("flow {} names host {}, but `Nodes` is {nodes}", f.id, g.0),
                ));
            }
        }
    }
    if let Some(c) = declared_conns.filter(|&c| c != flows.len()) {
        return Err(bad(
            0,
            format!("`Connections {c}` but {} connection lines", flows.len()),
        ));
    }
    if let Some(t) = declared_triggers.filter(|&t| t != trigger_lines) {
        return Err(bad(
            0,
            format!("`Triggers {t}` but {trigger_lines} trigger lines"),
        ));
    }
    for (id, t) in &triggers {
        let Some(kind) = t.kind else {
            return Err(bad(0, format!("trigger {id} is used but never defined")));
        };
        let n = t.set_off_by.len() as u64;
        match (kind, t.count) {
            ("oneshot", _) if n > 1 => {
                return Err(bad(
                    t.line,
                    format!("oneshot trigger {id} is set off by {n} flows and fires at the first of them, which a list of dependencies (all of them) cannot express; use a barrier with count {n}"),
                ))
            }
            ("barrier", Some(c)) if c != n => {
                return Err(bad(
                    t.line,
                    format!("barrier trigger {id} has count {c} but {n} flows set it off; only a barrier waiting for all of its flows is imported"),
                ))
            }
            _ => {}
        }
        if n == 0 && !t.starts.is_empty() {
            return Err(bad(
                t.line,
                format!("trigger {id} starts flows but no flow sets it off (send_done_trigger / recv_done_trigger {id}): they would never start"),
            ));
        }
        for &s in &t.starts {
            for &(by, sent) in &t.set_off_by {
                if sent {
                    flows[s].after_sent.push(by);
                } else {
                    flows[s].after.push(by);
                }
            }
        }
    }
    Ok(ImportedCm { nodes, flows })
}

/// The scenario text of an imported connection matrix: `nodes` hosts of one
/// GPU and one NIC each (an htsim host), the smallest fat-tree that holds them
/// (htsim's own rule: the smallest even k with k³/4 ≥ N) and the flows, with
/// a header naming the source file. The fabric is left to the user (`preset`
/// comment), as htsim's is a command-line choice.
pub fn cm_scenario(cm: &ImportedCm, source: &str) -> String {
    use std::fmt::Write;
    let mut k = 2u64;
    while k * k * k / 4 < u64::from(cm.nodes) {
        k += 2;
    }
    let mut s = String::new();
    let hosts = cm.nodes;
    let flows = cm.flows.len();
    let source = source.replace('"', "'");
    let _ = writeln!(
        s,
        "# imported by `fabricsim import-cm` from {source}: {hosts} hosts, {flows} flows\n\
         name = \"htsim connection matrix {source}\"\n\n\
         [cluster]\nnodes = {hosts}\ngpus_per_node = 1\nnics_per_node = 1\n\
         nvlink_bandwidth = \"450GB/s\"  # required by the schema; one GPU per host never uses it\n\n\
         [topology]\nkind = \"fat_tree\"\n\
         k = {k}                      # the smallest fat-tree with k^3/4 >= {hosts} hosts, as htsim picks\n\n\
         [fabric]\n\
         preset = \"roce-400\"         # choose the fabric htsim ran: its link rate, RoCE/PFC, lossy, ...\n\n\
         [workload]\nkind = \"flows\""
    );
    // htsim ids are numbers; a connection without one gets a string name
    let toml_id = |id: &str| {
        if id.parse::<i64>().is_ok() {
            id.to_string()
        } else {
            format!("{id:?}")
        }
    };
    for f in &cm.flows {
        let _ = write!(
            s,
            "\n[[workload.flows]]\nid = {}\nsrc = {}\ndst = {}\nbytes = {}\n",
            toml_id(&f.id),
            f.src.0,
            f.dst.0,
            f.bytes
        );
        if f.start > SimTime::ZERO {
            let _ = writeln!(s, "start = \"{}us\"", f.start.as_us());
        }
        let list = |v: &[usize]| {
            v.iter()
                .map(|&i| toml_id(&cm.flows[i].id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !f.after.is_empty() {
            let _ = writeln!(s, "after = [{}]", list(&f.after));
        }
        if !f.after_sent.is_empty() {
            let _ = writeln!(s, "after_sent = [{}]", list(&f.after_sent));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: &str, after: &[usize], after_sent: &[usize]) -> ListedFlow {
        ListedFlow {
            id: id.into(),
            src: GpuId(0),
            dst: GpuId(1),
            bytes: 1,
            start: SimTime::ZERO,
            after: after.to_vec(),
            after_sent: after_sent.to_vec(),
            class: None,
        }
    }

    #[test]
    fn order_puts_dependencies_first_and_keeps_file_order_otherwise() {
        let f = [
            flow("a", &[2], &[]),
            flow("b", &[], &[]),
            flow("c", &[], &[1]),
        ];
        assert_eq!(order(&f), Ok(vec![1, 2, 0]));
    }

    #[test]
    fn a_cycle_is_named_in_waiting_order() {
        // b waits for a, c for b, a for c; d is free
        let f = [
            flow("a", &[2], &[]),
            flow("b", &[0], &[]),
            flow("c", &[], &[1]),
            flow("d", &[], &[]),
        ];
        let cycle = order(&f).unwrap_err();
        assert_eq!(cycle.len(), 3);
        // each flow of the reported cycle waits for the one before it
        for w in 0..3 {
            let (prev, next) = (cycle[w], cycle[(w + 1) % 3]);
            let g = &f[next];
            assert!(
                g.after.contains(&prev) || g.after_sent.contains(&prev),
                "{cycle:?}"
            );
        }
    }

    #[test]
    fn an_htsim_matrix_with_triggers_becomes_dependencies() {
        let cm = "Nodes 4\nConnections 3\nTriggers 2\n\
                  0->1 id 1 start 0 size 1000 send_done_trigger 1\n\
                  1->2 id 2 start 2.7 size 2000 recv_done_trigger 2\n\
                  2->3 id 3 size 3000 trigger 1\n\
                  trigger id 1 oneshot\n\
                  trigger id 2 oneshot\n";
        let r = import_htsim_cm(cm).unwrap();
        assert_eq!(r.nodes, 4);
        assert_eq!(r.flows.len(), 3);
        assert_eq!(
            r.flows[1].start,
            SimTime::from_us(2),
            "htsim truncates to whole us"
        );
        assert_eq!(r.flows[2].after_sent, vec![0]);
        assert!(r.flows[2].after.is_empty());
    }

    #[test]
    fn what_a_list_cannot_express_is_refused_with_its_line() {
        let any_of = "Nodes 3\nConnections 3\nTriggers 1\n0->1 id 1 size 1 send_done_trigger 9\n1->2 id 2 size 1 send_done_trigger 9\n2->0 id 3 size 1 trigger 9\ntrigger id 9 oneshot\n";
        let e = import_htsim_cm(any_of).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("barrier with count 2"), "{e}");
        let endless = "Nodes 2\nConnections 1\n0->1 id 1 start 0 size 0\n";
        assert_eq!(import_htsim_cm(endless).unwrap_err().line, 3);
        let multi = "Nodes 2\nConnections 0\nTriggers 1\ntrigger id 1 multishot\n";
        assert_eq!(import_htsim_cm(multi).unwrap_err().line, 4);
        let count = "Nodes 2\nConnections 2\n0->1 id 1 size 5\n";
        assert!(import_htsim_cm(count)
            .unwrap_err()
            .message
            .contains("Connections 2"));
        let host = "Nodes 2\nConnections 1\n0->7 id 1 size 5\n";
        assert!(import_htsim_cm(host)
            .unwrap_err()
            .message
            .contains("host 7"));
    }
}

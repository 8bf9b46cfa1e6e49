//! `workload.kind = "traffic"`: synthetic patterns (incast, permutation,
//! all-to-all, random) and the extra flows added beside them.

use super::raw::{RawNumber, RawWorkload};
use super::validate::Validator;
use super::WorkloadSpec;
use crate::units::{Rate, SimTime};

impl Validator<'_> {
    pub(super) fn extra_flows(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<Vec<crate::workload::traffic::ExtraFlow>> {
        let Some(list) = &w.extra_flows else {
            return Some(Vec::new());
        };
        if w.kind.as_deref() != Some("traffic") {
            self.err(
                "workload.extra_flows",
                "extra flows in a collective workload",
                "it only with kind = \"traffic\"",
            );
            return None;
        }
        let n = total_gpus?;
        let mut out = Vec::new();
        let mut ok = true;
        for (i, f) in list.iter().enumerate() {
            for (what, g) in [("src", f.src), ("dst", f.dst)] {
                if g < 0 || g as u64 >= n {
                    self.err(
                        "workload.extra_flows",
                        format!("flow {i}: {what} = {g}"),
                        format!("a GPU between 0 and {}", n.saturating_sub(1)),
                    );
                    ok = false;
                }
            }
            let bytes = self.size("workload.extra_flows", Some(&f.bytes), None, 1);
            let start = self.time("workload.extra_flows", f.start.as_ref(), Some("0"));
            let class =
                self.class_ref(&format!("workload.extra_flows.{i}.class"), f.class.as_ref());
            if let (Some(bytes), Some(start), Some(class)) = (bytes, start, class) {
                out.push(crate::workload::traffic::ExtraFlow {
                    src: crate::topology::GpuId(f.src.max(0) as u32),
                    dst: crate::topology::GpuId(f.dst.max(0) as u32),
                    bytes,
                    start,
                    class,
                });
            } else {
                ok = false;
            }
        }
        ok.then_some(out)
    }

    pub(super) fn traffic(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<WorkloadSpec> {
        use crate::topology::GpuId;
        use crate::workload::traffic::{FlowSizeCdf, TrafficSpec};
        let collective = w.collective_keys();
        self.refuse_workload_keys(&collective, "traffic", "it only with kind = \"collective\"");
        let model = w.model_keys();
        self.refuse_workload_keys(
            &model,
            "traffic",
            "kind = \"training\" or \"inference\" to describe a model",
        );
        let n = total_gpus.unwrap_or(u64::MAX);
        let pattern = w.pattern.as_deref().unwrap_or("");
        let patterns = "one of \"incast\", \"permutation\", \"alltoall\", \"random\"";
        let allowed: &[&str] = match pattern {
            "incast" => &["bytes", "senders", "receiver"],
            "permutation" => &["bytes", "per_host"],
            "alltoall" => &["bytes"],
            "random" => &["cdf", "load", "duration"],
            "" => {
                self.err("workload.pattern", "nothing", patterns);
                return None;
            }
            other => {
                self.err("workload.pattern", format!("{other:?}"), patterns);
                return None;
            }
        };
        for (key, set) in [
            ("bytes", w.bytes.is_some()),
            ("senders", w.senders.is_some()),
            ("receiver", w.receiver.is_some()),
            ("per_host", w.per_host.is_some()),
            ("cdf", w.cdf.is_some()),
            ("load", w.load.is_some()),
            ("duration", w.duration.is_some()),
        ] {
            if set && !allowed.contains(&key) {
                self.err(
                    &format!("workload.{key}"),
                    format!("`{key}` with pattern {pattern:?}"),
                    format!("only {} for pattern {pattern:?}", allowed.join(", ")),
                );
            }
        }
        match pattern {
            "incast" => {
                let bytes = self.size("workload.bytes", w.bytes.as_ref(), Some("1MiB"), 1);
                let senders = self.count(
                    "workload.senders",
                    w.senders,
                    None,
                    1,
                    "the number of senders (N of N:1)",
                );
                let receiver = match w.receiver.unwrap_or(0) {
                    r if r < 0 || r as u64 >= n => {
                        self.err(
                            "workload.receiver",
                            r.to_string(),
                            format!("a GPU between 0 and {}", n.saturating_sub(1)),
                        );
                        None
                    }
                    r => Some(r as u32),
                };
                if let Some(s) = senders {
                    if s as u64 >= n {
                        self.err(
                            "workload.senders",
                            s.to_string(),
                            format!("fewer senders than GPUs ({n})"),
                        );
                        return None;
                    }
                }
                Some(WorkloadSpec::Traffic(TrafficSpec::Incast {
                    senders: senders?,
                    receiver: GpuId(receiver?),
                    bytes: bytes?,
                }))
            }
            "permutation" => {
                let bytes = self.size("workload.bytes", w.bytes.as_ref(), Some("1MiB"), 1)?;
                Some(WorkloadSpec::Traffic(TrafficSpec::Permutation {
                    bytes,
                    per_host: w.per_host.unwrap_or(false),
                    seed: 0,
                }))
            }
            "alltoall" => {
                let bytes = self.size("workload.bytes", w.bytes.as_ref(), Some("1MiB"), 1)?;
                Some(WorkloadSpec::Traffic(TrafficSpec::AllToAll { bytes }))
            }
            _ => {
                let cdf = match w.cdf.as_deref().unwrap_or("web_search") {
                    "web_search" => Some(FlowSizeCdf::web_search()),
                    "fb_hadoop" => Some(FlowSizeCdf::fb_hadoop()),
                    path => {
                        let base = std::path::Path::new(self.src.file)
                            .parent()
                            .unwrap_or(std::path::Path::new("."));
                        match crate::budget::read_text(
                            &base.join(path),
                            crate::budget::MAX_INPUT_BYTES,
                        ) {
                            Err(e) => {
                                self.err("workload.cdf", format!("{path:?} ({e})"), "web_search, fb_hadoop, or a readable CDF file of at most 64MiB (size and cumulative probability per line), relative to the scenario");
                                None
                            }
                            Ok(text) => match FlowSizeCdf::parse(&text) {
                                Ok(c) => Some(c),
                                Err(e) => {
                                    self.err("workload.cdf", format!("{path:?}: {}", e.message), "lines of `size_bytes cumulative_probability`, increasing, ending at 1");
                                    None
                                }
                            },
                        }
                    }
                };
                let load = w.load.map_or(0.5, RawNumber::as_f64);
                if !(load > 0.0 && load <= 1.0) {
                    self.err(
                        "workload.load",
                        load.to_string(),
                        "an offered load in (0, 1] of the link rate",
                    );
                    return None;
                }
                let duration =
                    self.time("workload.duration", w.duration.as_ref(), Some("100us"))?;
                if duration == SimTime::ZERO {
                    self.err("workload.duration", "0", "a duration above zero");
                    return None;
                }
                Some(WorkloadSpec::Traffic(TrafficSpec::RandomPairs {
                    cdf: cdf?,
                    load,
                    source_rate: Rate(0),
                    duration,
                    seed: 0,
                }))
            }
        }
    }
}

impl Validator<'_> {
    /// `kind = "flows"`: an explicit list of flows with dependencies. Ids are
    /// unique, dependencies name flows of the list, and the dependency graph has
    /// no cycle (a cycle could never start); each problem is located at its entry
    /// (`workload.flows.3.after`).
    pub(super) fn flow_list(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<WorkloadSpec> {
        use crate::topology::GpuId;
        use crate::workload::flows::ListedFlow;
        use crate::workload::traffic::TrafficSpec;
        let collective = w.collective_keys();
        self.refuse_workload_keys(&collective, "flows", "it only with kind = \"collective\"");
        let traffic = w.traffic_keys();
        self.refuse_workload_keys(
            &traffic,
            "flows",
            "it only with kind = \"traffic\" (a flow list gives each flow's size in its entry)",
        );
        let model = w.model_keys();
        self.refuse_workload_keys(
            &model,
            "flows",
            "kind = \"training\" or \"inference\" to describe a model",
        );
        let Some(list) = w.flows.as_ref().filter(|l| !l.is_empty()) else {
            self.err(
                "workload.flows",
                "no flow",
                "at least one [[workload.flows]] entry with id, src, dst and bytes",
            );
            return None;
        };
        let n = total_gpus.unwrap_or(u64::MAX);
        let mut index = std::collections::HashMap::new();
        let mut ok = true;
        for (i, f) in list.iter().enumerate() {
            if let Some(first) = index.insert(f.id.clone(), i) {
                self.err(
                    &format!("workload.flows.{i}.id"),
                    format!("id {} again (flow {first} has it)", f.id),
                    "an id no other flow of the list has",
                );
                ok = false;
            }
        }
        let mut out = Vec::with_capacity(list.len());
        for (i, f) in list.iter().enumerate() {
            let p = |k: &str| format!("workload.flows.{i}.{k}");
            for (what, g) in [("src", f.src), ("dst", f.dst)] {
                if g < 0 || g as u64 >= n {
                    self.err(
                        &p(what),
                        g.to_string(),
                        format!("a GPU between 0 and {}", n.saturating_sub(1)),
                    );
                    ok = false;
                }
            }
            if f.src == f.dst {
                self.err(
                    &p("dst"),
                    format!("{} (the flow's own source)", f.dst),
                    "another GPU: a flow to itself moves nothing",
                );
                ok = false;
            }
            let bytes = self.size(&p("bytes"), Some(&f.bytes), None, 1);
            let start = self.time(&p("start"), f.start.as_ref(), Some("0"));
            let mut deps = |key: &str, ids: &Option<Vec<super::raw::RawFlowId>>| {
                let mut v = Vec::new();
                for id in ids.iter().flatten() {
                    match index.get(id) {
                        Some(&j) if j == i => {
                            self.err(
                                &p(key),
                                format!("{id}, the flow itself"),
                                "ids of other flows of the list",
                            );
                            ok = false;
                        }
                        Some(&j) => v.push(j),
                        None => {
                            self.err(
                                &p(key),
                                format!("{id}, which no flow of the list has"),
                                "ids of flows of the list",
                            );
                            ok = false;
                        }
                    }
                }
                v
            };
            let after = deps("after", &f.after);
            let after_sent = deps("after_sent", &f.after_sent);
            let class = self.class_ref(&p("class"), f.class.as_ref());
            if let (Some(bytes), Some(start), Some(class)) = (bytes, start, class) {
                out.push(ListedFlow {
                    id: match &f.id {
                        super::raw::RawFlowId::Number(n) => n.to_string(),
                        super::raw::RawFlowId::Name(s) => s.clone(),
                    },
                    src: GpuId(f.src.clamp(0, i64::from(u32::MAX)) as u32),
                    dst: GpuId(f.dst.clamp(0, i64::from(u32::MAX)) as u32),
                    bytes,
                    start,
                    after,
                    after_sent,
                    class,
                });
            } else {
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        if let Err(cycle) = crate::workload::flows::order(&out) {
            // a long cycle is named by its first flows and its length
            const SHOWN: usize = 8;
            let names: Vec<&str> = cycle
                .iter()
                .take(SHOWN)
                .map(|&i| out[i].id.as_str())
                .collect();
            let more = if cycle.len() > SHOWN {
                format!(" -> ... ({} flows in all)", cycle.len())
            } else {
                String::new()
            };
            self.err(
                &format!("workload.flows.{}.after", cycle[0]),
                format!(
                    "a cycle of dependencies: {}{more} -> {} (none of them could ever start)",
                    names.join(" -> "),
                    out[cycle[0]].id,
                ),
                "dependencies that end: each flow may wait only for flows that do not wait for it",
            );
            return None;
        }
        Some(WorkloadSpec::Traffic(TrafficSpec::Flows(out)))
    }
}

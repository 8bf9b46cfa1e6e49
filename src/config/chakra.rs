//! `workload.kind = "chakra"`: the trace files are read and matched while the
//! scenario is checked, so a bad trace is a located error of the scenario
//! (`workload.traces`, naming the trace file, node, field, found, expected).

use super::raw::{RawTraces, RawWorkload};
use super::validate::Validator;
use super::{AlgoChoice, WorkloadSpec};
use crate::workload::chakra::{self, ChakraSpec};

impl Validator<'_> {
    /// Validates `kind = "chakra"`.
    pub(super) fn chakra(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<WorkloadSpec> {
        let collective: Vec<&str> = w
            .collective_keys()
            .into_iter()
            .filter(|k| *k != "algorithm")
            .collect();
        self.refuse_workload_keys(
            &collective,
            "chakra",
            "it only with kind = \"collective\" (a trace gives each collective's type and size)",
        );
        let traffic = w.traffic_keys();
        self.refuse_workload_keys(&traffic, "chakra", "it only with kind = \"traffic\"");
        // [workload.gpu] is the GPU model of num_ops compute nodes
        let model: Vec<&str> = w.model_keys().into_iter().filter(|k| *k != "gpu").collect();
        self.refuse_workload_keys(
            &model,
            "chakra",
            "kind = \"training\" or \"inference\" to describe a model (export its traces with `fabricsim export-chakra`)",
        );
        let algo_names =
            "auto, ring, tree, halving_doubling, hierarchical, direct, sharp, nvls, collnet_chain";
        let algorithm = match w.algorithm.as_deref().unwrap_or("auto") {
            "auto" => Some(AlgoChoice::Auto),
            s => match crate::collective::Algorithm::parse(s) {
                Some(a) => Some(AlgoChoice::Fixed(a)),
                None => {
                    self.err(
                        "workload.algorithm",
                        format!("{s:?}"),
                        format!("one of {algo_names}"),
                    );
                    None
                }
            },
        };
        let base = std::path::Path::new(self.src.file)
            .parent()
            .unwrap_or(std::path::Path::new(""))
            .to_path_buf();
        let expected = "a directory of <prefix>.<rank>.et Chakra traces, or a list of .et files in rank order, relative to this scenario";
        let files: Vec<String> = match &w.traces {
            None => {
                self.err("workload.traces", "nothing", expected);
                return None;
            }
            Some(RawTraces::Files(list)) if list.is_empty() => {
                self.err("workload.traces", "an empty list", expected);
                return None;
            }
            Some(RawTraces::Files(list)) => {
                if list.len() > chakra::MAX_RANKS {
                    self.err(
                        "workload.traces",
                        format!("{} files", list.len()),
                        "at most 2^20 ranks",
                    );
                    return None;
                }
                list.iter()
                    .map(|f| base.join(f).display().to_string())
                    .collect()
            }
            Some(RawTraces::Dir(d)) => match chakra::rank_files(&base.join(d)) {
                Ok(v) => v.iter().map(|p| p.display().to_string()).collect(),
                Err(e) => {
                    self.err(
                        "workload.traces",
                        format!("{d:?}: {}: {}", e.file, e.found),
                        e.expected,
                    );
                    return None;
                }
            },
        };
        if let Some(n) = total_gpus {
            if files.len() as u64 != n {
                if self.workload_at.is_some() {
                    self.err(
                        "workload.traces",
                        format!("{} ranks for a job of {n} GPUs", files.len()),
                        format!("{n} rank files, one per GPU of the job (rank r runs on the job's GPU r, in placement order): a job of as many GPUs as the traces have ranks"),
                    );
                } else {
                    self.err(
                        "workload.traces",
                        format!("{} ranks on a cluster of {n} GPUs", files.len()),
                        format!("{n} rank files, one per GPU (rank r runs on GPU r): a cluster of as many GPUs as the traces have ranks"),
                    );
                }
                return None;
            }
        }
        let read = |f: &str| {
            let path = std::path::Path::new(f);
            let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
            if meta.is_dir() {
                return Err("a directory, not a file".to_string());
            }
            if meta.len() > chakra::MAX_FILE_BYTES {
                return Err(format!("{} bytes, over 64 MiB", meta.len()));
            }
            use std::io::Read;
            let mut bytes = Vec::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(chakra::MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
                .map_err(|e| e.to_string())?;
            Ok(bytes)
        };
        // the training workload's GPU model (H100 SXM at 50% of peak unless
        // [workload.gpu] says otherwise) times compute nodes given in num_ops
        let gpu = self.gpu_spec(&w.gpu.clone().unwrap_or_default(), None)?;
        let roofline = chakra::Roofline::of(&gpu);
        let plan = match chakra::load_with(&files, read, Some(roofline)) {
            Ok(p) => p,
            Err(e) => {
                // the trace's own location first: file, node, field
                let node = e.node.map(|n| format!(" node {n}")).unwrap_or_default();
                self.err(
                    "workload.traces",
                    format!("in {}{node}, {}: {}", e.file, e.field, e.found),
                    format!("{} (README \"Chakra traces\")", e.expected),
                );
                return None;
            }
        };
        Some(WorkloadSpec::Chakra(Box::new(ChakraSpec {
            files,
            plan: std::sync::Arc::new(plan),
            algorithm: algorithm?,
            gpu,
        })))
    }
}

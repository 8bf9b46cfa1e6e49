//! `[[fabric.classes]]`: traffic classes (name, strict priority or DWRR
//! weight, lossless or lossy under PFC, ECN thresholds), `fabric.ack_class`,
//! `fabric.cnp_class`, `workload.class` and the `class` of listed and extra
//! flows. Class `i` rides virtual lane `i`.

use super::raw::{RawNumber, RawScenario};
use super::validate::Validator;
use crate::mechanism::{
    pmax_in_range, Ecn, TrafficClass, TrafficClasses, MAX_CLASS_PRIORITY, MAX_CLASS_WEIGHT,
};

impl Validator<'_> {
    /// The classes of `raw.fabric` checked against the fabric's lanes
    /// (`lanes`), lane escalation and ECN (`ecn`, the fabric's thresholds
    /// when marking is on); `Some(None)` when the file names none (and no
    /// key refers to one), `None` after an error.
    pub(super) fn classes(
        &mut self,
        raw: &RawScenario,
        lanes: Option<u8>,
        vl_escalation: bool,
        ecn: Option<(u64, u64, f64)>,
    ) -> Option<Option<TrafficClasses>> {
        let f = &raw.fabric;
        let Some(list) = f.classes.as_ref() else {
            let mut ok = true;
            for (key, v) in [
                ("fabric.ack_class", &f.ack_class),
                ("fabric.cnp_class", &f.cnp_class),
                ("workload.class", &raw.workload.class),
            ] {
                if let Some(name) = v {
                    self.err(
                        key,
                        format!("{name:?} with no [[fabric.classes]]"),
                        "a class defined in [[fabric.classes]] (name = ...), or remove the key",
                    );
                    ok = false;
                }
            }
            return ok.then_some(None);
        };
        let mut ok = true;
        if list.is_empty() {
            self.err(
                "fabric.classes",
                "an empty list",
                "at least one class (name, and priority or weight)",
            );
            return None;
        }
        if let Some(l) = lanes {
            if list.len() > usize::from(l) {
                self.err(
                    "fabric.classes",
                    format!("{} classes with virtual_lanes = {l}", list.len()),
                    format!(
                        "at most one class per virtual lane: set fabric.virtual_lanes = {} (or {} to keep ACKs on a lane of their own above the classes), at most 8",
                        list.len(),
                        list.len() + 1
                    ),
                );
                ok = false;
            }
        }
        if vl_escalation {
            self.err(
                "fabric.vl_escalation",
                "true with [[fabric.classes]]",
                "one of the two: escalation moves data up one lane per switch hop, hence across classes; remove vl_escalation (or the classes)",
            );
            ok = false;
        }
        let mut names: Vec<String> = Vec::new();
        let mut classes = Vec::new();
        for (i, c) in list.iter().enumerate() {
            let p = |k: &str| format!("fabric.classes.{i}.{k}");
            let name = match &c.name {
                Some(n) if !n.trim().is_empty() => {
                    if let Some(j) = names.iter().position(|m| m == n) {
                        self.err(
                            &p("name"),
                            format!("{n:?} again (class {j} has it)"),
                            "a name no other class has",
                        );
                        ok = false;
                    }
                    n.clone()
                }
                other => {
                    self.err(
                        &p("name"),
                        other
                            .as_ref()
                            .map_or("nothing".into(), |n| format!("{n:?}")),
                        "a non-empty name flows and workloads refer to, e.g. \"storage\"",
                    );
                    ok = false;
                    String::new()
                }
            };
            names.push(name.clone());
            let priority = match c.priority.unwrap_or(0) {
                v if (0..=i64::from(MAX_CLASS_PRIORITY)).contains(&v) => v as u8,
                v => {
                    self.err(
                        &p("priority"),
                        v.to_string(),
                        "a strict-priority level from 0 to 7 (higher is served first)",
                    );
                    ok = false;
                    0
                }
            };
            let weight = match c.weight {
                None => None,
                Some(w) if (1..=i64::from(MAX_CLASS_WEIGHT)).contains(&w) => Some(w as u32),
                Some(w) => {
                    self.err(
                        &p("weight"),
                        w.to_string(),
                        "a DWRR weight from 1 to 1000 (its share of its priority level is weight / the level's total)",
                    );
                    ok = false;
                    None
                }
            };
            let overrides = c.ecn_kmin.is_some() || c.ecn_kmax.is_some() || c.ecn_pmax.is_some();
            let ecn = match (overrides, ecn) {
                (false, _) => None,
                (true, None) => {
                    let key = if c.ecn_kmin.is_some() {
                        "ecn_kmin"
                    } else if c.ecn_kmax.is_some() {
                        "ecn_kmax"
                    } else {
                        "ecn_pmax"
                    };
                    self.err(
                        &p(key),
                        "a class ECN threshold with ECN marking off",
                        "fabric.ecn = true (the class's thresholds override the fabric's), or remove it",
                    );
                    ok = false;
                    None
                }
                (true, Some((kmin, kmax, pmax))) => {
                    let kmin = self.size(
                        &p("ecn_kmin"),
                        c.ecn_kmin.as_ref(),
                        Some(&kmin.to_string()),
                        0,
                    );
                    let kmax = self.size(
                        &p("ecn_kmax"),
                        c.ecn_kmax.as_ref(),
                        Some(&kmax.to_string()),
                        0,
                    );
                    let pmax = c.ecn_pmax.map_or(pmax, RawNumber::as_f64);
                    if !pmax_in_range(pmax) {
                        self.err(
                            &p("ecn_pmax"),
                            pmax.to_string(),
                            "a marking probability in (0, 1], such as 0.2",
                        );
                        ok = false;
                    }
                    match (kmin, kmax) {
                        (Some(kmin), Some(kmax)) if kmax >= kmin => Some(Ecn { kmin, kmax, pmax }),
                        (Some(kmin), Some(kmax)) => {
                            self.err(
                                &p("ecn_kmax"),
                                crate::units::format_bytes(kmax),
                                format!(
                                    "at least the class's ecn_kmin ({})",
                                    crate::units::format_bytes(kmin)
                                ),
                            );
                            ok = false;
                            None
                        }
                        _ => {
                            ok = false;
                            None
                        }
                    }
                }
            };
            classes.push(TrafficClass {
                name,
                priority,
                weight,
                lossless: c.pfc.unwrap_or(true),
                ecn,
            });
        }
        // one level: one strict class, or weighted classes sharing it
        for (i, c) in classes.iter().enumerate() {
            if let Some(j) = classes[..i].iter().position(|d| d.priority == c.priority) {
                let d = &classes[j];
                if c.weight.is_none() || d.weight.is_none() {
                    let key = if c.weight.is_none() {
                        "weight"
                    } else {
                        "priority"
                    };
                    self.err(
                        &format!("fabric.classes.{i}.{key}"),
                        format!(
                            "class {:?} at priority {} beside class {:?}, {}",
                            c.name,
                            c.priority,
                            d.name,
                            if d.weight.is_none() { "a strict class" } else { "a weighted class" }
                        ),
                        "weights on every class of a priority level (they share it by DWRR), or distinct priorities (strict order)",
                    );
                    ok = false;
                }
            }
        }
        self.class_names = names;
        let data = self.class_ref("workload.class", raw.workload.class.as_ref());
        let ack = self.class_ref("fabric.ack_class", f.ack_class.as_ref());
        let cnp = self.class_ref("fabric.cnp_class", f.cnp_class.as_ref());
        if !ok {
            return None;
        }
        Some(Some(TrafficClasses {
            classes,
            data: data?.unwrap_or(0),
            ack: ack?,
            cnp: cnp?,
        }))
    }

    /// The index of the class `name` (a key `field` names), `Some(None)` when
    /// the key is not set; a name [`Validator::classes`] did not define is an
    /// error.
    pub(super) fn class_ref(&mut self, field: &str, name: Option<&String>) -> Option<Option<u8>> {
        let Some(name) = name else {
            return Some(None);
        };
        match self.class_names.iter().position(|n| n == name) {
            Some(i) => Some(Some(i as u8)),
            None => {
                let known = if self.class_names.is_empty() {
                    "a class defined in [[fabric.classes]]".to_string()
                } else {
                    format!(
                        "one of the classes of [[fabric.classes]]: {}",
                        self.class_names
                            .iter()
                            .map(|n| format!("{n:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                self.err(field, format!("{name:?}"), known);
                None
            }
        }
    }
}

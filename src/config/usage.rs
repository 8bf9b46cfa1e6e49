//! Which settings of a scenario a run consumed, and why the others change nothing.
//!
//! A scenario promises that no setting silently does nothing. Instead of a list of
//! rules kept beside the code, the code that turns a setting into what a backend
//! runs — the topology builder, [`crate::run::packet_config`], the collective
//! planner, the workload builders, the backends' own declarations of what they do
//! not model — records it in a [`Usage`] as it reads it (or as it decides not
//! to, with the reason). The ignored settings of a run are then the keys the file
//! sets minus the keys consumed: a key nothing reads is listed even when nobody
//! wrote a rule for it.
//!
//! Three fates, by precedence:
//! - **void** (wins over everything): a reader took the value, but the run has no
//!   mechanism it acts through (the analytical fidelity and oversubscription);
//! - **read**: some reader used it (a key read for one size of a sweep and
//!   skipped for another is used);
//! - **skipped**: readers chose not to use it, with their reason;
//! - a key no reader touched at all is listed with a generic reason naming the
//!   workload kind and fidelity.

use super::{Fidelity, IgnoredSetting};

/// What became of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fate {
    /// No reader touched it.
    Unread,
    /// Readers chose not to use it; the first reason given.
    Skipped(String),
    /// A reader used it.
    Read,
    /// Taken, but the run has nothing it acts through; the reason.
    Void(String),
}

/// The keys a scenario file sets and what each run reader did with them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usage {
    keys: Vec<(String, Fate)>,
}

/// Whether `key` is `name` or a key under it (`faults` covers `faults.0.at`).
fn covers(name: &str, key: &str) -> bool {
    key == name
        || key
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('.'))
}

impl Usage {
    /// A ledger over `keys_set` (dotted keys, as [`super::keys_set`] returns them),
    /// all unread.
    pub fn new(keys_set: &[String]) -> Usage {
        Usage {
            keys: keys_set.iter().map(|k| (k.clone(), Fate::Unread)).collect(),
        }
    }

    /// Whether the file sets `name` or a key under it.
    pub fn is_set(&self, name: &str) -> bool {
        self.keys.iter().any(|(k, _)| covers(name, k))
    }

    /// `name` (and every key under it) shapes this run.
    pub fn read(&mut self, name: &str) {
        for (k, fate) in &mut self.keys {
            if covers(name, k) && !matches!(fate, Fate::Void(_)) {
                *fate = Fate::Read;
            }
        }
    }

    /// Each of `names` shapes this run.
    pub fn read_all(&mut self, names: &[&str]) {
        for n in names {
            self.read(n);
        }
    }

    /// `name` is read when `used`, else skipped because of `why` (built only when
    /// the file sets the key).
    pub fn read_if(&mut self, name: &str, used: bool, why: impl FnOnce() -> String) {
        if used {
            self.read(name);
        } else {
            self.skip(name, why);
        }
    }

    /// A reader chose not to use `name` (and the keys under it), because of `why`;
    /// another reader may still use it.
    pub fn skip(&mut self, name: &str, why: impl FnOnce() -> String) {
        if !self.is_set(name) {
            return;
        }
        let why = why();
        for (k, fate) in &mut self.keys {
            if covers(name, k) && *fate == Fate::Unread {
                *fate = Fate::Skipped(why.clone());
            }
        }
    }

    /// `name` was taken but acts through nothing this run models, because of `why`;
    /// no other reader can make it count.
    pub fn void(&mut self, name: &str, why: impl FnOnce() -> String) {
        if !self.is_set(name) {
            return;
        }
        let why = why();
        for (k, fate) in &mut self.keys {
            if covers(name, k) && !matches!(fate, Fate::Void(_)) {
                *fate = Fate::Void(why.clone());
            }
        }
    }

    /// Every key some reader touched in `other` (read or skipped) that no reader
    /// has used here is skipped because of `why`: how a run at one fidelity lists
    /// what only another fidelity's readers consume.
    pub fn skip_touched_by(&mut self, other: &Usage, why: impl Fn() -> String) {
        // a set, not a scan per key: a flow list sets hundreds of thousands of keys
        let touched: std::collections::HashSet<&str> = other
            .keys
            .iter()
            .filter(|(_, f)| *f != Fate::Unread)
            .map(|(k, _)| k.as_str())
            .collect();
        for (k, fate) in &mut self.keys {
            if touched.contains(k.as_str()) && *fate == Fate::Unread {
                *fate = Fate::Skipped(why());
            }
        }
    }

    /// The ledger a reader of one `[[jobs]]` entry sees: the keys under
    /// `under` (`jobs.2.workload`) renamed as under `as_` (`workload`), the
    /// keys outside `outside` (`jobs`) as they are, with their fates so far.
    /// What the readers do to it comes back with [`Usage::merge_view`].
    pub fn view(&self, under: &str, as_: &str, outside: &str) -> Usage {
        Usage {
            keys: self
                .keys
                .iter()
                .filter_map(|(k, fate)| {
                    if covers(under, k) {
                        Some((format!("{as_}{}", &k[under.len()..]), fate.clone()))
                    } else if covers(outside, k) {
                        None
                    } else {
                        Some((k.clone(), fate.clone()))
                    }
                })
                .collect(),
        }
    }

    /// Takes back what readers did to a [`Usage::view`] made with `under`
    /// and `as_`: a key read there is read here; skipped or void there is
    /// skipped here unless something reads it (another job may).
    pub fn merge_view(&mut self, view: &Usage, under: &str, as_: &str) {
        let index: std::collections::HashMap<String, usize> = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        for (k, fate) in &view.keys {
            let original = if covers(as_, k) {
                format!("{under}{}", &k[as_.len()..])
            } else {
                k.clone()
            };
            let Some(&i) = index.get(&original) else {
                continue;
            };
            let mine = &mut self.keys[i].1;
            // what one job's readers void, another job may use: it counts
            // here as skipped (a void of the whole run is already here)
            match (fate, &*mine) {
                (_, Fate::Void(_)) | (Fate::Unread, _) => {}
                (Fate::Read, _) => *mine = Fate::Read,
                (Fate::Skipped(why) | Fate::Void(why), Fate::Unread) => {
                    *mine = Fate::Skipped(why.clone())
                }
                (Fate::Skipped(_) | Fate::Void(_), _) => {}
            }
        }
    }

    /// Whether `key` (a key the file sets) was used by this run.
    pub fn was_read(&self, key: &str) -> bool {
        self.keys.iter().any(|(k, f)| k == key && *f == Fate::Read)
    }

    /// The keys set minus the keys consumed, in file order, with their reason; a
    /// key no reader touched says that nothing in a `kind` workload at `fidelity`
    /// reads it.
    pub fn ignored(&self, kind: &str, fidelity: Fidelity) -> Vec<IgnoredSetting> {
        self.keys
            .iter()
            .filter_map(|(key, fate)| {
                let reason = match fate {
                    Fate::Read => return None,
                    Fate::Skipped(why) | Fate::Void(why) => why.clone(),
                    Fate::Unread => format!(
                        "nothing in a {kind} run at the {} fidelity reads it",
                        fidelity.name()
                    ),
                };
                Some(IgnoredSetting {
                    key: key.clone(),
                    reason,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(keys: &[&str]) -> Usage {
        Usage::new(&keys.iter().map(|k| k.to_string()).collect::<Vec<_>>())
    }

    fn listed(u: &Usage) -> Vec<(String, String)> {
        u.ignored("collective", Fidelity::Flow)
            .into_iter()
            .map(|i| (i.key, i.reason))
            .collect()
    }

    #[test]
    fn set_minus_read_with_reasons() {
        let mut u = usage(&["a.x", "a.y", "b", "faults.0.at", "faults.0.kind"]);
        u.read("a.x");
        u.skip("a.y", || "y is off".into());
        u.read("faults");
        assert_eq!(
            listed(&u),
            vec![
                ("a.y".into(), "y is off".into()),
                (
                    "b".into(),
                    "nothing in a collective run at the flow fidelity reads it".into()
                ),
            ]
        );
    }

    #[test]
    fn read_beats_skip_and_void_beats_read() {
        let mut u = usage(&["k", "v"]);
        u.skip("k", || "one size did not use it".into());
        u.read("k");
        u.skip("k", || "a later size did not either".into());
        u.read("v");
        u.void("v", || "no mechanism".into());
        u.read("v");
        assert_eq!(listed(&u), vec![("v".into(), "no mechanism".into())]);
    }

    #[test]
    fn prefixes_cover_whole_segments_only() {
        let mut u = usage(&["fabric.pfc", "fabric.pfc_xoff"]);
        u.read("fabric.pfc");
        assert!(u.was_read("fabric.pfc"));
        assert!(!u.was_read("fabric.pfc_xoff"));
    }

    #[test]
    fn reasons_are_built_only_for_keys_the_file_sets() {
        let mut u = usage(&["a"]);
        u.skip("b", || panic!("b is not set"));
        u.void("b", || panic!("b is not set"));
        u.read_if("b", false, || panic!("b is not set"));
    }

    #[test]
    fn a_jobs_view_reads_its_workload_keys_under_their_own_names() {
        let mut u = usage(&[
            "fabric.mtu",
            "jobs.0.name",
            "jobs.0.workload.sizes",
            "jobs.1.workload.sizes",
            "jobs.1.workload.root",
        ]);
        let mut v = u.view("jobs.1.workload", "workload", "jobs");
        v.read_all(&["workload.sizes", "fabric.mtu"]);
        v.skip("workload.root", || "broadcast only".into());
        u.merge_view(&v, "jobs.1.workload", "workload");
        u.read("jobs.0");
        assert_eq!(
            listed(&u),
            vec![("jobs.1.workload.root".into(), "broadcast only".into())]
        );
    }

    #[test]
    fn another_fidelitys_readers_lend_their_keys_a_reason() {
        let mut packet = usage(&["fabric.pfc", "fabric.mtu", "cluster.nodes"]);
        packet.read("fabric.pfc");
        packet.skip("fabric.mtu", || "x".into());
        let mut flow = usage(&["fabric.pfc", "fabric.mtu", "cluster.nodes"]);
        flow.read("fabric.mtu");
        flow.skip_touched_by(&packet, || "packet only".into());
        assert_eq!(
            listed(&flow),
            vec![
                ("fabric.pfc".into(), "packet only".into()),
                (
                    "cluster.nodes".into(),
                    "nothing in a collective run at the flow fidelity reads it".into()
                ),
            ]
        );
    }
}

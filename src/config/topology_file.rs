//! The topology file format (`topology.kind = "file"`, `topology.file = "…"`)
//! and its checks. Every problem is a located [`Diagnostic`] in the topology
//! file (file, line, column, field, what was found, what is expected); no
//! input panics.
//!
//! ```toml
//! # a link without rate or latency takes these (optional table)
//! [defaults]
//! rate = "100Gbps"      # line rate of each direction
//! latency = "1us"       # propagation delay of each direction
//!
//! switches = ["leaf0", "leaf1", "spine0"]
//! hosts = ["h0", "h1", "h2", "h3"]     # host i is cluster node i
//!
//! [[links]]             # duplex: both directions at rate and latency
//! a = "h0"
//! b = "leaf0"
//! rate = "400Gbps"      # optional with [defaults]
//! latency = "500ns"     # optional with [defaults]
//! ```
//!
//! Rules: names are unique across switches and hosts; every link joins two
//! different known nodes, at least one a switch (a host is cabled to a
//! switch, not to another host); a pair of nodes has at most one link; host
//! `i` is cluster node `i`, so there are `cluster.nodes` hosts, each with
//! exactly `cluster.nics_per_node` links (its NICs 0, 1, … in file order);
//! every host reaches every other; no path needs more than
//! [`MAX_FILE_HOPS`] switch hops. See [`crate::topology::file`] for how the
//! graph is built and routed.

use std::collections::HashMap;

use serde::Deserialize;

use super::diagnostic::{Diagnostic, Source};
use super::raw::RawQuantity;
use crate::topology::file::{Endpoint, FileLink, FileTopology};
use crate::units::{parse_rate, parse_time, Rate, SimTime};

/// Most switch hops from an edge switch to the switch farthest from it in a
/// topology file: routes are followed for at most 64 hops, so a fabric whose
/// paths could be longer is refused.
pub const MAX_FILE_HOPS: u8 = 30;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    defaults: Option<RawDefaults>,
    switches: Option<Vec<String>>,
    hosts: Option<Vec<String>>,
    links: Option<Vec<RawLink>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    rate: Option<RawQuantity>,
    latency: Option<RawQuantity>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: Option<String>,
    b: Option<String>,
    rate: Option<RawQuantity>,
    latency: Option<RawQuantity>,
}

/// What the cluster asks of the file: its node count and NICs per node
/// (`None` when those keys were themselves refused).
#[derive(Clone, Copy, Debug)]
pub struct Expect {
    /// `cluster.nodes`.
    pub hosts: Option<u32>,
    /// `cluster.nics_per_node`.
    pub nics_per_host: Option<u32>,
}

/// Parses and checks topology file `text` read from `file`.
///
/// # Errors
/// Every problem found, each located in the file.
pub fn parse(file: &str, text: &str, expect: Expect) -> Result<FileTopology, Vec<Diagnostic>> {
    let src = Source::new(file, text);
    let raw: RawFile = match toml::from_str(text) {
        Ok(r) => r,
        Err(e) => return Err(vec![super::validate::serde_diag(&src, &e)]),
    };
    let mut c = Checker {
        src: &src,
        diags: Vec::new(),
    };
    let t = c.check(raw, expect);
    match t {
        Some(t) if c.diags.is_empty() => Ok(t),
        _ => Err(c.diags),
    }
}

struct Checker<'a> {
    src: &'a Source<'a>,
    diags: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn err(&mut self, field: &str, found: impl Into<String>, expected: impl Into<String>) {
        let d = self.src.diag(field, found, expected);
        self.diags.push(d);
    }

    fn line_of(&self, field: &str) -> usize {
        let s = self.src.diag(field, "", "");
        s.line
    }

    fn rate(&mut self, field: &str, q: &RawQuantity) -> Option<Rate> {
        let RawQuantity::Str(s) = q else {
            self.err(
                field,
                format!("{} (no unit)", q.shown()),
                "a rate with a unit such as \"100Gbps\"",
            );
            return None;
        };
        match parse_rate(s) {
            Ok(r) if r.bps() > 0 => Some(r),
            Ok(_) => {
                self.err(field, format!("{s:?}"), "a rate above zero");
                None
            }
            Err(e) => {
                self.err(field, format!("{s:?}"), e.expected);
                None
            }
        }
    }

    fn time(&mut self, field: &str, q: &RawQuantity) -> Option<SimTime> {
        let s = match q {
            RawQuantity::Int(0) => return Some(SimTime::ZERO),
            RawQuantity::Int(_) => {
                self.err(
                    field,
                    format!("{} (no unit)", q.shown()),
                    "a latency with a unit such as \"1us\"",
                );
                return None;
            }
            RawQuantity::Str(s) => s,
        };
        match parse_time(s) {
            Ok(t) if t <= super::simulation::MAX_LATENCY => Some(t),
            Ok(_) => {
                self.err(field, format!("{s:?}"), "a latency of at most 1s");
                None
            }
            Err(e) => {
                self.err(field, format!("{s:?}"), e.expected);
                None
            }
        }
    }

    fn check(&mut self, raw: RawFile, expect: Expect) -> Option<FileTopology> {
        let defaults = raw.defaults.as_ref();
        let d_rate = defaults
            .and_then(|d| d.rate.as_ref())
            .map(|q| self.rate("defaults.rate", q));
        let d_latency = defaults
            .and_then(|d| d.latency.as_ref())
            .map(|q| self.time("defaults.latency", q));
        let switches = raw.switches.unwrap_or_default();
        let hosts = raw.hosts.unwrap_or_default();
        if hosts.is_empty() {
            self.err(
                "hosts",
                "no hosts",
                "hosts = [\"h0\", …], one name per cluster node",
            );
            return None;
        }
        // names, unique across switches and hosts
        let mut names: HashMap<&str, (Endpoint, String)> = HashMap::new();
        let entries = switches
            .iter()
            .enumerate()
            .map(|(i, n)| (n, Endpoint::Switch(i as u32), format!("switches.{i}")))
            .chain(
                hosts
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n, Endpoint::Host(i as u32), format!("hosts.{i}"))),
            );
        for (name, ep, field) in entries {
            if name.trim().is_empty() {
                self.err(&field, format!("{name:?}"), "a non-empty name");
            } else if let Some((_, first)) = names.get(name.as_str()) {
                let line = self.line_of(first);
                self.err(
                    &field,
                    format!("{name:?} again (first as `{first}`, line {line})"),
                    "a name used once, by one switch or one host",
                );
            } else {
                names.insert(name, (ep, field));
            }
        }
        if let Some(n) = expect.hosts {
            if hosts.len() as u64 != u64::from(n) {
                self.err(
                    "hosts",
                    format!("{} hosts", hosts.len()),
                    format!(
                        "{n} hosts, one per cluster node (cluster.nodes = {n}; host i is node i)"
                    ),
                );
            }
        }
        // links
        let mut links = Vec::new();
        let mut seen: HashMap<(Endpoint, Endpoint), usize> = HashMap::new();
        for (i, l) in raw.links.iter().flatten().enumerate() {
            let f = |k: &str| format!("links.{i}.{k}");
            let end = |me: &mut Self, key: &str, v: &Option<String>| -> Option<Endpoint> {
                match v {
                    None => {
                        me.err(&f(key), "nothing", "the name of a switch or host");
                        None
                    }
                    Some(n) => match names.get(n.as_str()) {
                        Some((ep, _)) => Some(*ep),
                        None => {
                            me.err(
                                &f(key),
                                format!("{n:?}, which is no switch or host of this file"),
                                "a name listed in `switches` or `hosts`",
                            );
                            None
                        }
                    },
                }
            };
            let a = end(self, "a", &l.a);
            let b = end(self, "b", &l.b);
            let rate = match (&l.rate, d_rate) {
                (Some(q), _) => self.rate(&f("rate"), q),
                (None, Some(r)) => r,
                (None, None) => {
                    self.err(
                        &f("rate"),
                        "nothing",
                        "a rate such as \"100Gbps\" on the link or in [defaults]",
                    );
                    None
                }
            };
            let latency = match (&l.latency, d_latency) {
                (Some(q), _) => self.time(&f("latency"), q),
                (None, Some(t)) => t,
                (None, None) => {
                    self.err(
                        &f("latency"),
                        "nothing",
                        "a latency such as \"1us\" on the link or in [defaults]",
                    );
                    None
                }
            };
            let (Some(a), Some(b)) = (a, b) else { continue };
            if a == b {
                self.err(
                    &f("b"),
                    format!("{:?}, the same node as `a`", l.b.as_deref().unwrap_or("")),
                    "a link between two different nodes",
                );
                continue;
            }
            if matches!((a, b), (Endpoint::Host(_), Endpoint::Host(_))) {
                self.err(
                    &f("b"),
                    format!(
                        "host {:?} linked to host {:?}",
                        l.a.as_deref().unwrap_or(""),
                        l.b.as_deref().unwrap_or("")
                    ),
                    "a switch at one end at least: a host's NIC is cabled to a switch",
                );
                continue;
            }
            let key = (a.min(b), a.max(b));
            if let Some(&first) = seen.get(&key) {
                let line = self.line_of(&format!("links.{first}"));
                self.err(
                    &format!("links.{i}"),
                    format!(
                        "a second link between {:?} and {:?} (the first is links.{first}, line {line})",
                        l.a.as_deref().unwrap_or(""),
                        l.b.as_deref().unwrap_or("")
                    ),
                    "one link per pair of nodes",
                );
                continue;
            }
            seen.insert(key, i);
            if let (Some(rate), Some(latency)) = (rate, latency) {
                links.push(FileLink {
                    a,
                    b,
                    rate,
                    latency,
                });
            }
        }
        if !self.diags.is_empty() {
            return None;
        }
        let t = FileTopology {
            path: self.src.file.to_string(),
            switches,
            hosts,
            links,
        };
        self.check_hosts(&t, expect);
        self.check_reach(&t);
        Some(t)
    }

    /// One link per NIC on every host.
    fn check_hosts(&mut self, t: &FileTopology, expect: Expect) {
        let per = expect.nics_per_host;
        for (h, l) in t.host_links().iter().enumerate() {
            let want = per.unwrap_or(1) as usize;
            if l.is_empty() {
                self.err(
                    &format!("hosts.{h}"),
                    format!("host {:?} with no link (disconnected)", t.hosts[h]),
                    format!("{want} link(s) to switches, one per NIC (cluster.nics_per_node)"),
                );
            } else if per.is_some() && l.len() != want {
                self.err(
                    &format!("hosts.{h}"),
                    format!("host {:?} with {} links to switches", t.hosts[h], l.len()),
                    format!("{want}, one per NIC (cluster.nics_per_node = {want})"),
                );
            }
        }
    }

    /// Every host reaches host 0 over switches, within [`MAX_FILE_HOPS`].
    fn check_reach(&mut self, t: &FileTopology) {
        let ns = t.switches.len();
        let mut parent: Vec<usize> = (0..ns).collect();
        fn root(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for l in &t.links {
            if let (Endpoint::Switch(a), Endpoint::Switch(b)) = (l.a, l.b) {
                let (ra, rb) = (root(&mut parent, a as usize), root(&mut parent, b as usize));
                parent[ra] = rb;
            }
        }
        let per_host = t.host_links();
        let Some(&(s0, _, _)) = per_host.first().and_then(|l| l.first()) else {
            return; // host 0 unlinked: reported already
        };
        let r0 = root(&mut parent, s0 as usize);
        for (h, l) in per_host.iter().enumerate() {
            for &(s, _, _) in l {
                if root(&mut parent, s as usize) != r0 {
                    self.err(
                        &format!("hosts.{h}"),
                        format!(
                            "host {:?} on switch {:?}, which has no path to host {:?}",
                            t.hosts[h], t.switches[s as usize], t.hosts[0]
                        ),
                        "every host connected to every other through the switches",
                    );
                    return;
                }
            }
        }
        let tiers = t.switch_tiers();
        if let Some((s, &tier)) = tiers
            .iter()
            .enumerate()
            .filter(|&(_, &x)| x != u8::MAX)
            .max_by_key(|&(_, &x)| x)
        {
            if tier > MAX_FILE_HOPS {
                self.err(
                    &format!("switches.{s}"),
                    format!(
                        "switch {:?}, {tier} hops from the nearest switch with a host",
                        t.switches[s]
                    ),
                    format!(
                        "at most {MAX_FILE_HOPS} hops, so that no route exceeds 64 switch hops"
                    ),
                );
            }
        }
    }
}

//! Converters from other simulators' topology descriptions to the topology
//! file format (`config::topology_file`): `fabricsim import-topology`.
//!
//! HPCC simulator (ns-3, `mix/topology.txt`; Li et al., SIGCOMM 2019):
//!
//! ```text
//! 6 2 4                      node_num switch_num link_num
//! 4 5                        the switch ids
//! 0 4 100Gbps 0.001ms 0      src dst rate delay error_rate, link_num lines
//! …
//! ```
//!
//! Nodes are numbered `0 .. node_num`; those not listed as switches are hosts
//! (GPUs' NICs), which become cluster nodes in ascending id order. Names keep
//! the ids: host `n` is `"h<n>"`, switch `n` is `"s<n>"`. A link's rate and
//! delay are copied as they are (ns-3 spells them as fabricsim does:
//! `100Gbps`, `0.001ms`, `1us`). A non-zero error rate has no counterpart in
//! a topology file (link loss is a `[[faults]]` entry of kind
//! `bit_error_rate`): it is reported in a note, not converted.
//!
//! htsim (Broadcom csg-htsim, `sim/datacenter/fat_tree_topology.cpp`,
//! `FatTreeTopology::load`: the `-topo` file of its `htsim_roce`, `htsim_ndp`,
//! `htsim_eqds`… binaries, e.g. `topologies/fat_tree_1024.topo`) describes a
//! fat tree by its tiers, not by its links:
//!
//! ```text
//! Nodes 1024                 hosts (one NIC each)
//! Tiers 3                    2 or 3
//! Podsize 64                 hosts per pod
//! Tier 0                     ToRs; then their keys, one `Key value` a line
//! Downlink_speed_Gbps 100    the tier's down links (host ↔ ToR here), Gb/s
//! Radix_Down 8               down ports (hosts per ToR)
//! Radix_Up 8                 up ports (not on the top tier)
//! Downlink_Latency_ns 1000   the down links' latency
//! Switch_Latency_ns 0        optional
//! Oversubscribed 1           optional (1): down:up ratio of the tier's bandwidth
//! Bundle 1                   optional (1): parallel links per switch pair below
//! Tier 1 …  Tier 2 …         aggregation, core
//! ```
//!
//! Keys are case-insensitive, `#` starts a comment. The tree is wired as
//! htsim's `set_custom_params` and `init_network` wire it: `Nodes / Podsize`
//! pods of `Podsize / Radix_Down₀` ToRs (host `h` on ToR `⌊h / Radix_Down₀⌋`);
//! `Nodes · speed₀ / (speed₁ · Oversubscribed₀)` ToR uplinks, hence
//! `uplinks / (pods · Radix_Down₁)` aggregation switches per pod; every ToR has
//! one bundle (`Bundle₁` links) to each aggregation switch of its pod (with 2
//! tiers: to every one); with 3 tiers `uplinks · speed₁ / (speed₂ ·
//! Oversubscribed₁) / Radix_Down₂` cores, aggregation switch `j` of every pod
//! taking cores `j, j + aggs_per_pod, …` (`Radix_Up₁ / Bundle₂` of them), one
//! bundle each. Links run at their tier's speed (`Downlink_speed_Gbps` of the
//! upper end's tier) and latency. Switches are named `tor<i>`, `agg<i>`,
//! `core<i>`, hosts `h<i>` (cluster node `i`). A bundle becomes one link of
//! the bundle's summed rate (a topology file has one link per pair) and
//! switch latencies a note (`fabric.switch_latency` is one figure); both are
//! reported. The htsim source read asserts three tiers for a custom tree; a
//! 2-tier file is wired as `init_network`'s 2-tier branch (a leaf-spine).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use crate::units::{parse_rate, parse_time};

/// Why an input cannot be converted: the 1-based line (0: the file as a
/// whole), the field on it, what was found and what is expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {field}: found {found}; expected {expected}")]
pub struct ImportError {
    /// 1-based line of the problem (0 when it concerns the whole file).
    pub line: usize,
    /// The field of the line, e.g. `rate` or `switch_num`.
    pub field: String,
    /// What the line holds.
    pub found: String,
    /// What would be accepted.
    pub expected: String,
}

fn bad(
    line: usize,
    field: &str,
    found: impl Into<String>,
    expected: impl Into<String>,
) -> ImportError {
    ImportError {
        line,
        field: field.into(),
        found: found.into(),
        expected: expected.into(),
    }
}

/// A converted topology: the topology file's text, its host count (what
/// `cluster.nodes` must be) and notes on what was not converted.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The topology file (TOML).
    pub text: String,
    /// Hosts, i.e. the cluster's node count.
    pub hosts: usize,
    /// Switches.
    pub switches: usize,
    /// Duplex links.
    pub links: usize,
    /// What the format has that the topology file does not (one line each).
    pub notes: Vec<String>,
}

/// Converts an HPCC-simulator `topology.txt` (see the module doc); `source`
/// is named in the output's header comment.
///
/// # Errors
/// The first problem, located by line and field: a header that is not three
/// counts, a switch id list of the wrong length or with unknown or repeated
/// ids, a link line without five fields, an unknown node, a rate or delay
/// that does not parse, a self-loop, a repeated link, a host-to-host link, a
/// link count other than the header's, a host without a link.
pub fn hpcc(text: &str, source: &str) -> Result<Imported, ImportError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty());
    let (hl, header) = lines.next().ok_or_else(|| {
        bad(
            0,
            "header",
            "an empty file",
            "a first line `node_num switch_num link_num`",
        )
    })?;
    let counts: Vec<&str> = header.split_whitespace().collect();
    let names = ["node_num", "switch_num", "link_num"];
    if counts.len() != 3 {
        return Err(bad(
            hl,
            "header",
            format!("{header:?}"),
            "three whole numbers `node_num switch_num link_num`, such as `6 2 5`",
        ));
    }
    let mut n = [0usize; 3];
    for (i, c) in counts.iter().enumerate() {
        n[i] = c.parse().map_err(|_| {
            bad(
                hl,
                names[i],
                format!("{c:?}"),
                "a whole number of at most 2^32",
            )
        })?;
        if n[i] > u32::MAX as usize {
            return Err(bad(hl, names[i], *c, "a whole number of at most 2^32"));
        }
    }
    let [nodes, n_switches, n_links] = n;
    if nodes as u64 > super::builder::MAX_NETWORK_LINKS {
        return Err(bad(
            hl,
            "node_num",
            nodes.to_string(),
            format!(
                "at most {} nodes, what the simulator builds",
                super::builder::MAX_NETWORK_LINKS
            ),
        ));
    }
    if n_switches >= nodes {
        return Err(bad(
            hl,
            "switch_num",
            n_switches.to_string(),
            format!("fewer switches than the {nodes} nodes (the rest are hosts)"),
        ));
    }
    let mut switch_set = BTreeSet::new();
    if n_switches > 0 {
        let (sl, ids) = lines.next().ok_or_else(|| {
            bad(
                0,
                "switch ids",
                "no second line",
                format!("a line of the {n_switches} switch ids"),
            )
        })?;
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if ids.len() != n_switches {
            return Err(bad(
                sl,
                "switch ids",
                format!("{} ids", ids.len()),
                format!("{n_switches} ids, as switch_num says"),
            ));
        }
        for id in ids {
            let v: usize = id.parse().ok().filter(|&v| v < nodes).ok_or_else(|| {
                bad(
                    sl,
                    "switch ids",
                    format!("{id:?}"),
                    format!("a node id from 0 to {}", nodes - 1),
                )
            })?;
            if !switch_set.insert(v) {
                return Err(bad(
                    sl,
                    "switch ids",
                    format!("{v} twice"),
                    "each switch id once",
                ));
            }
        }
    }
    let name = |v: usize| {
        if switch_set.contains(&v) {
            format!("s{v}")
        } else {
            format!("h{v}")
        }
    };
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    let mut linked = vec![false; nodes];
    let mut body = String::new();
    let mut notes = Vec::new();
    let mut count = 0usize;
    for (ln, l) in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 5 {
            return Err(bad(
                ln,
                "link",
                format!("{l:?} ({} fields)", f.len()),
                "five fields `src dst rate delay error_rate`, such as `0 4 100Gbps 0.001ms 0`",
            ));
        }
        let end = |i: usize, field: &str| -> Result<usize, ImportError> {
            f[i].parse::<usize>()
                .ok()
                .filter(|&v| v < nodes)
                .ok_or_else(|| {
                    bad(
                        ln,
                        field,
                        format!("{:?}", f[i]),
                        format!("a node id from 0 to {}", nodes - 1),
                    )
                })
        };
        let a = end(0, "src")?;
        let b = end(1, "dst")?;
        match parse_rate(f[2]) {
            Ok(r) if r.bps() > 0 => {}
            _ => {
                return Err(bad(
                    ln,
                    "rate",
                    format!("{:?}", f[2]),
                    "a rate above zero such as \"100Gbps\"",
                ))
            }
        }
        if parse_time(f[3]).is_err() {
            return Err(bad(
                ln,
                "delay",
                format!("{:?}", f[3]),
                "a delay such as \"0.001ms\" or \"1us\"",
            ));
        }
        match f[4].parse::<f64>() {
            Ok(0.0) => {}
            Ok(e) if (0.0..=1.0).contains(&e) => notes.push(format!(
                "line {ln}: error rate {e} of link {a}-{b} not converted (a topology file has no link loss; use a [[faults]] entry of kind \"bit_error_rate\")"
            )),
            _ => return Err(bad(ln, "error_rate", format!("{:?}", f[4]), "a probability from 0 to 1")),
        }
        if a == b {
            return Err(bad(
                ln,
                "dst",
                b.to_string(),
                "a node other than src (no self-loops)",
            ));
        }
        if !switch_set.contains(&a) && !switch_set.contains(&b) {
            return Err(bad(
                ln,
                "dst",
                format!("host {b} linked to host {a}"),
                "a switch at one end at least",
            ));
        }
        if let Some(first) = seen.insert((a.min(b), a.max(b)), ln) {
            return Err(bad(
                ln,
                "link",
                format!("a second link between {a} and {b} (the first on line {first})"),
                "one link per pair of nodes",
            ));
        }
        linked[a] = true;
        linked[b] = true;
        count += 1;
        let _ = writeln!(
            body,
            "\n[[links]]\na = \"{}\"\nb = \"{}\"\nrate = \"{}\"\nlatency = \"{}\"",
            name(a),
            name(b),
            f[2],
            f[3]
        );
    }
    if count != n_links {
        return Err(bad(
            hl,
            "link_num",
            format!("{n_links}, but the file has {count} link lines"),
            format!("{count}, one per link line"),
        ));
    }
    let hosts: Vec<usize> = (0..nodes).filter(|v| !switch_set.contains(v)).collect();
    if let Some(&h) = hosts.iter().find(|&&h| !linked[h]) {
        return Err(bad(
            0,
            "links",
            format!("host {h} with no link"),
            "every host linked to a switch",
        ));
    }
    let list = |v: &mut dyn Iterator<Item = String>| {
        v.map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# fabricsim topology file, converted by `fabricsim import-topology --format hpcc` from {source}\n# {} hosts (set cluster.nodes = {}; host i below is node i), {} switches, {count} links",
        hosts.len(),
        hosts.len(),
        switch_set.len()
    );
    let _ = writeln!(
        text,
        "switches = [{}]",
        list(&mut switch_set.iter().map(|&s| name(s)))
    );
    let _ = writeln!(
        text,
        "hosts = [{}]",
        list(&mut hosts.iter().map(|&h| name(h)))
    );
    text.push_str(&body);
    Ok(Imported {
        text,
        hosts: hosts.len(),
        switches: switch_set.len(),
        links: count,
        notes,
    })
}

/// The keys of a tier block of an htsim `.topo` file, lower-cased.
const HTSIM_TIER_KEYS: [&str; 7] = [
    "downlink_speed_gbps",
    "radix_up",
    "radix_down",
    "oversubscribed",
    "bundle",
    "switch_latency_ns",
    "downlink_latency_ns",
];

/// One tier of an htsim `.topo` file: each key's value and line.
#[derive(Default)]
struct HtsimTier {
    /// The tier's header line (`Tier t`).
    line: usize,
    /// Values of [`HTSIM_TIER_KEYS`], with their lines.
    values: [Option<(u64, usize)>; 7],
}

impl HtsimTier {
    fn get(&self, key: &str) -> Option<(u64, usize)> {
        HTSIM_TIER_KEYS
            .iter()
            .position(|k| *k == key)
            .and_then(|i| self.values[i])
    }
}

/// Converts a csg-htsim fat-tree configuration file (the `-topo` file of
/// `htsim_roce`, `htsim_ndp`, `htsim_eqds`…, read by `FatTreeTopology::load`;
/// see the module doc); `source` is named in the output's header comment.
///
/// # Errors
/// The first problem, located by line and key: a line that is not `Key
/// value` with a whole-number value, an unknown key, a key repeated in a
/// tier, a tier out of range or repeated, `Radix_Up` on the top tier, a
/// missing header key or tier key, and the divisibility htsim asserts
/// (nodes by pod size, pod size by ToR `Radix_Down`, uplink counts by the
/// tier above's `Radix_Down`, radices by bundle sizes), ToR uplinks that are
/// not one bundle per aggregation switch of the pod, a fabric larger than the
/// simulator builds.
pub fn htsim(text: &str, source: &str) -> Result<Imported, ImportError> {
    let mut nodes: Option<(u64, usize)> = None;
    let mut tiers: Option<(u64, usize)> = None;
    let mut podsize: Option<(u64, usize)> = None;
    let mut blocks: [Option<HtsimTier>; 3] = [None, None, None];
    let mut current: Option<usize> = None;
    let whole = |ln: usize, key: &str, v: Option<&str>| -> Result<u64, ImportError> {
        match v.map(|s| (s, s.parse::<u64>())) {
            Some((_, Ok(n))) if n <= u64::from(u32::MAX) => Ok(n),
            Some((s, _)) => Err(bad(
                ln,
                key,
                format!("{s:?}"),
                "a whole number of at most 2^32",
            )),
            None => Err(bad(
                ln,
                key,
                "no value",
                "`Key value`, such as `Nodes 1024`",
            )),
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let mut tok = raw.split_whitespace();
        let Some(first) = tok.next() else { continue };
        if first.starts_with('#') {
            continue;
        }
        let key = first.to_ascii_lowercase();
        let value = tok.next();
        if let Some(extra) = tok.next().filter(|t| !t.starts_with('#')) {
            return Err(bad(
                ln,
                first,
                format!("{extra:?} after the value"),
                "one value per line, `Key value`",
            ));
        }
        match (key.as_str(), current) {
            ("nodes" | "tiers" | "podsize", Some(_)) => {
                return Err(bad(
                    ln,
                    first,
                    "a header key inside a tier block",
                    "Nodes, Tiers and Podsize before the first `Tier`",
                ))
            }
            ("nodes" | "tiers" | "podsize", None) => {
                let slot = match key.as_str() {
                    "nodes" => &mut nodes,
                    "tiers" => &mut tiers,
                    _ => &mut podsize,
                };
                if let Some((_, first_line)) = slot {
                    return Err(bad(
                        ln,
                        first,
                        format!("a second {first} (the first on line {first_line})"),
                        "each header key once",
                    ));
                }
                *slot = Some((whole(ln, first, value)?, ln));
            }
            ("tier", _) => {
                let t = whole(ln, "Tier", value)?;
                let Some((n_tiers, _)) = tiers else {
                    return Err(bad(
                        ln,
                        "Tier",
                        "a tier before `Tiers`",
                        "the header `Nodes`, `Tiers`, `Podsize` first",
                    ));
                };
                if t >= n_tiers.min(3) {
                    return Err(bad(
                        ln,
                        "Tier",
                        t.to_string(),
                        format!("a tier from 0 to {}", n_tiers.clamp(1, 3) - 1),
                    ));
                }
                let t = t as usize;
                if let Some(b) = &blocks[t] {
                    return Err(bad(
                        ln,
                        "Tier",
                        format!("tier {t} a second time (the first on line {})", b.line),
                        "each tier once",
                    ));
                }
                blocks[t] = Some(HtsimTier {
                    line: ln,
                    ..HtsimTier::default()
                });
                current = Some(t);
            }
            (k, Some(t)) => {
                let Some(idx) = HTSIM_TIER_KEYS.iter().position(|x| *x == k) else {
                    return Err(bad(
                        ln,
                        first,
                        format!("the key {first:?}"),
                        "one of Downlink_speed_Gbps, Radix_Up, Radix_Down, Oversubscribed, Bundle, Switch_Latency_ns, Downlink_Latency_ns",
                    ));
                };
                let v = whole(ln, first, value)?;
                let top = tiers.map_or(3, |(n, _)| n as usize) - 1;
                if k == "radix_up" && t == top {
                    return Err(bad(
                        ln,
                        first,
                        format!("Radix_Up on tier {t}, the top tier"),
                        "Radix_Up only below the top tier (no uplinks from the top)",
                    ));
                }
                let positive = !matches!(k, "switch_latency_ns");
                if positive && v == 0 {
                    return Err(bad(ln, first, "0", "a whole number above zero"));
                }
                let block = blocks[t].as_mut().expect("the current tier has a block");
                if let Some((_, first_line)) = block.values[idx] {
                    return Err(bad(
                        ln,
                        first,
                        format!("a second {first} in tier {t} (the first on line {first_line})"),
                        "each key once per tier",
                    ));
                }
                block.values[idx] = Some((v, ln));
            }
            (_, None) => {
                return Err(bad(
                    ln,
                    first,
                    format!("the key {first:?}"),
                    "Nodes, Tiers or Podsize, then `Tier 0` and its keys",
                ))
            }
        }
    }
    let need = |v: Option<(u64, usize)>, key: &str, what: &str| {
        v.ok_or_else(|| bad(0, key, "nothing", what.to_string()))
    };
    let (n, _) = need(nodes, "Nodes", "a header line `Nodes N`: the hosts")?;
    let (n_tiers, tl) = need(tiers, "Tiers", "a header line `Tiers 2` or `Tiers 3`")?;
    let (pod, pl) = need(
        podsize,
        "Podsize",
        "a header line `Podsize P`: hosts per pod",
    )?;
    if !(2..=3).contains(&n_tiers) {
        return Err(bad(tl, "Tiers", n_tiers.to_string(), "2 or 3"));
    }
    if n == 0 {
        return Err(bad(0, "Nodes", "0", "at least one host"));
    }
    let n_tiers = n_tiers as usize;
    let mut t: Vec<&HtsimTier> = Vec::new();
    for (i, b) in blocks.iter().enumerate().take(n_tiers) {
        t.push(b.as_ref().ok_or_else(|| {
            bad(
                0,
                "Tier",
                format!("no tier {i}"),
                format!("a block `Tier {i}` for each of the {n_tiers} tiers"),
            )
        })?);
    }
    let get = |i: usize, key: &str, name: &str| -> Result<(u64, usize), ImportError> {
        t[i].get(key).ok_or_else(|| {
            bad(
                t[i].line,
                name,
                format!("no {name} in tier {i}"),
                format!("a line `{name} …` in tier {i}"),
            )
        })
    };
    let opt = |i: usize, key: &str, default: u64| t[i].get(key).map_or((default, t[i].line), |v| v);
    let mut speed = [0u64; 3];
    let mut rd = [(0u64, 0usize); 3];
    let mut lat = [0u64; 3];
    for i in 0..n_tiers {
        speed[i] = get(i, "downlink_speed_gbps", "Downlink_speed_Gbps")?.0;
        rd[i] = get(i, "radix_down", "Radix_Down")?;
        lat[i] = get(i, "downlink_latency_ns", "Downlink_Latency_ns")?.0;
        if i + 1 < n_tiers {
            get(i, "radix_up", "Radix_Up")?;
        }
    }
    let bundle = |i: usize| opt(i, "bundle", 1);
    let over = |i: usize| opt(i, "oversubscribed", 1);
    for (i, &(r, _)) in rd.iter().enumerate().take(n_tiers) {
        let (b, bl) = bundle(i);
        if r % b != 0 {
            return Err(bad(
                bl,
                "Bundle",
                format!("{b}, which does not divide tier {i}'s Radix_Down {r}"),
                "a bundle size dividing the radix",
            ));
        }
        if i + 1 < n_tiers {
            let (ru, rl) = opt(i, "radix_up", 0);
            let (ba, _) = bundle(i + 1);
            if ru % ba != 0 {
                return Err(bad(
                    rl,
                    "Radix_Up",
                    format!("{ru}, not a multiple of tier {}'s Bundle {ba}", i + 1),
                    "uplinks in whole bundles",
                ));
            }
        }
    }
    let (b0, b0l) = bundle(0);
    if b0 != 1 {
        return Err(bad(
            b0l,
            "Bundle",
            b0.to_string(),
            "1 on tier 0 (htsim bundles no host links)",
        ));
    }
    let divides =
        |ln: usize, key: &str, a: u128, b: u128, what: &str| -> Result<u128, ImportError> {
            if b == 0 || a % b != 0 {
                Err(bad(
                    ln,
                    key,
                    format!("{a} over {b} is not whole"),
                    what.to_string(),
                ))
            } else {
                Ok(a / b)
            }
        };
    let pods = divides(
        pl,
        "Podsize",
        n.into(),
        pod.into(),
        "a pod size dividing Nodes",
    )?;
    let tors_per_pod = divides(
        rd[0].1,
        "Radix_Down",
        pod.into(),
        rd[0].0.into(),
        "tier 0's Radix_Down dividing Podsize (whole ToRs per pod)",
    )?;
    let (o0, o0l) = over(0);
    let tor_uplinks = divides(
        o0l,
        "Oversubscribed",
        u128::from(n) * u128::from(speed[0]),
        u128::from(speed[1]) * u128::from(o0),
        "Nodes × tier 0's speed a whole number of tier 1 links (over Oversubscribed)",
    )?;
    let aggs_per_pod = divides(
        rd[1].1,
        "Radix_Down",
        tor_uplinks,
        pods * u128::from(rd[1].0),
        "tier 1's Radix_Down dividing the ToR uplinks of a pod (whole aggregation switches)",
    )?;
    let (b1, _) = bundle(1);
    let (ru0, ru0l) = opt(0, "radix_up", 0);
    let n_tors = pods * tors_per_pod;
    let n_aggs = pods * aggs_per_pod;
    if u128::from(ru0) * n_tors != tor_uplinks {
        return Err(bad(
            ru0l,
            "Radix_Up",
            format!("{ru0} uplinks per ToR on {n_tors} ToRs"),
            format!(
                "{tor_uplinks} uplinks in all (Nodes · speed₀ / (speed₁ · Oversubscribed₀)), so {} per ToR",
                tor_uplinks as f64 / n_tors as f64
            ),
        ));
    }
    // 3 tiers: a ToR reaches its pod's aggregation switches; 2: all of them
    let reach = if n_tiers == 3 { aggs_per_pod } else { n_aggs };
    if u128::from(ru0) != reach * u128::from(b1) {
        return Err(bad(
            ru0l,
            "Radix_Up",
            format!("{ru0} uplinks per ToR"),
            format!(
                "{}: one bundle of {b1} to each of the {reach} aggregation switches a ToR reaches",
                reach * u128::from(b1)
            ),
        ));
    }
    let mut n_cores = 0u128;
    let (mut ru1, mut b2) = (0u64, 1u64);
    if n_tiers == 3 {
        let (o1, o1l) = over(1);
        let agg_uplinks = divides(
            o1l,
            "Oversubscribed",
            tor_uplinks * u128::from(speed[1]),
            u128::from(speed[2]) * u128::from(o1),
            "the ToR uplinks × tier 1's speed a whole number of tier 2 links",
        )?;
        n_cores = divides(
            rd[2].1,
            "Radix_Down",
            agg_uplinks,
            rd[2].0.into(),
            "tier 2's Radix_Down dividing the aggregation uplinks (whole core switches)",
        )?;
        ru1 = opt(1, "radix_up", 0).0;
        b2 = bundle(2).0;
        let highest =
            aggs_per_pod.saturating_sub(1) + aggs_per_pod * u128::from(ru1 / b2).saturating_sub(1);
        if highest >= n_cores {
            return Err(bad(
                opt(1, "radix_up", 0).1,
                "Radix_Up",
                format!("{ru1}, which wires aggregation switches to core {highest} of {n_cores}"),
                format!(
                    "at most {} (aggregation j of a pod takes cores j, j + {aggs_per_pod}, …, one bundle of {b2} each)",
                    n_cores.div_ceil(aggs_per_pod.max(1)) * u128::from(b2)
                ),
            ));
        }
    }
    let total = u128::from(n)
        + n_tors * reach
        + if n_tiers == 3 {
            n_aggs * u128::from(ru1 / b2)
        } else {
            0
        };
    let max = u128::from(super::builder::MAX_NETWORK_LINKS);
    if total > max || n_tors + n_aggs + n_cores > max {
        return Err(bad(
            0,
            "Nodes",
            format!("{n} hosts and {total} links"),
            format!("at most {max} links, what the simulator builds"),
        ));
    }
    let (n, n_tors, n_aggs, n_cores) = (
        n as usize,
        n_tors as usize,
        n_aggs as usize,
        n_cores as usize,
    );
    let (tors_per_pod, aggs_per_pod) = (tors_per_pod as usize, aggs_per_pod as usize);
    let mut body = String::new();
    let mut links = 0usize;
    let mut link = |a: String, b: String, gbps: u64, ns: u64| {
        links += 1;
        let _ = writeln!(
            body,
            "\n[[links]]\na = \"{a}\"\nb = \"{b}\"\nrate = \"{gbps}Gbps\"\nlatency = \"{ns}ns\""
        );
    };
    let per_tor = rd[0].0 as usize;
    for h in 0..n {
        link(
            format!("h{h}"),
            format!("tor{}", h / per_tor),
            speed[0],
            lat[0],
        );
    }
    for tor in 0..n_tors {
        let (lo, hi) = if n_tiers == 3 {
            let p = tor / tors_per_pod;
            (p * aggs_per_pod, (p + 1) * aggs_per_pod)
        } else {
            (0, n_aggs)
        };
        for agg in lo..hi {
            link(
                format!("tor{tor}"),
                format!("agg{agg}"),
                speed[1] * b1,
                lat[1],
            );
        }
    }
    if n_tiers == 3 {
        for agg in 0..n_aggs {
            for l in 0..(ru1 / b2) as usize {
                let core = agg % aggs_per_pod + aggs_per_pod * l;
                link(
                    format!("agg{agg}"),
                    format!("core{core}"),
                    speed[2] * b2,
                    lat[2],
                );
            }
        }
    }
    let mut notes = Vec::new();
    for (i, b) in [(1, b1), (2, b2)] {
        if b > 1 && i < n_tiers {
            notes.push(format!(
                " tier {i}'s bundles of {b} links are one link of {b}× the rate each (a topology file has one link per pair; flows share the bundle max-min instead of hashing onto one of its links)"
            ));
        }
    }
    let sw: Vec<(u64, usize)> = (0..n_tiers)
        .map(|i| opt(i, "switch_latency_ns", 0))
        .collect();
    if sw.iter().any(|&(v, _)| v > 0) {
        let list: Vec<String> = sw
            .iter()
            .enumerate()
            .map(|(i, (v, _))| format!("tier {i} {v} ns"))
            .collect();
        notes.push(format!(
            " switch latencies ({}) are not in a topology file: set fabric.switch_latency (one figure for every switch)",
            list.join(", ")
        ));
    }
    let names = |prefix: &str, k: usize| {
        (0..k)
            .map(|i| format!("\"{prefix}{i}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# fabricsim topology file, converted by `fabricsim import-topology --format htsim` from {source}\n# {n}-host {n_tiers}-tier htsim fat tree (set cluster.nodes = {n}, nics_per_node = 1; host i below is node i), {} switches, {links} links",
        n_tors + n_aggs + n_cores
    );
    let mut all = vec![names("tor", n_tors), names("agg", n_aggs)];
    if n_cores > 0 {
        all.push(names("core", n_cores));
    }
    let _ = writeln!(text, "switches = [{}]", all.join(", "));
    let _ = writeln!(text, "hosts = [{}]", names("h", n));
    text.push_str(&body);
    Ok(Imported {
        text,
        hosts: n,
        switches: n_tors + n_aggs + n_cores,
        links,
        notes,
    })
}

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

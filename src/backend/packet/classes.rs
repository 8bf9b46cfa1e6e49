//! Traffic classes at the packet level ([`PacketConfig::classes`]): which
//! lane each kind of traffic rides, how a port chooses among its queued
//! lanes, which lanes are lossless under PFC and which ECN thresholds a lane
//! marks with.
//!
//! Without classes a port serves its lanes in strict priority, highest lane
//! first ([`super::switch`]'s fast path, unchanged). With classes the lanes
//! form priority levels, served highest first (802.1Qaz ETS: strict classes
//! over weighted ones of a lower level); the weighted lanes of one level are
//! served by deficit round robin (Shreedhar & Varghese, ToN 1996): a lane
//! visited by the round gets its quantum (weight × one full packet's wire
//! bytes) and sends while its deficit covers its head packet; an empty lane's
//! deficit is reset. Over a busy period the backlogged lanes of one level get
//! bandwidth in proportion to their weights, within one quantum plus one
//! packet per round. The state is two flat vectors per (port, lane), nothing
//! allocates per packet. Lanes no class names (the ACK lane above the
//! classes, by default) keep their strict order above every class.
//!
//! [`PacketConfig::classes`]: super::PacketConfig::classes

use super::ids::{IdVec, LaneIdx};
use super::{Ecn, PacketConfig};
use crate::mechanism::TrafficClasses;

/// Level of an unclassed lane `vl`: above every class's priority.
const UNCLASSED_LEVEL: u16 = 0x100;

/// The class scheduler's configuration and per-(port, lane) state.
pub struct ClassSched {
    /// Classes are configured: ports use [`ClassSched::groups`] instead of the
    /// strict highest-lane-first order.
    pub on: bool,
    /// Priority levels, highest first: (lanes of the level as a bit mask,
    /// whether they share it by DWRR).
    pub groups: [(u8, bool); 8],
    /// Number of entries of `groups` in use.
    pub ngroups: usize,
    /// DWRR quantum per lane, bytes (0 for a strict lane).
    pub quantum: [u32; 8],
    /// Lane lossless under PFC (true for every lane without classes).
    pub lossless: [bool; 8],
    /// ECN thresholds per lane (the fabric's without classes).
    pub ecn: [Option<Ecn>; 8],
    /// Lane of data whose transfer names no class.
    pub data_lane: u8,
    /// Lane of ACKs and NACKs.
    pub ack_lane: u8,
    /// Lane of CNPs.
    pub cnp_lane: u8,
    /// DWRR deficit per (port, lane), bytes.
    pub deficit: IdVec<LaneIdx, u32>,
    /// DWRR round position per (port, group index): the lane being served.
    pub cur: IdVec<LaneIdx, u8>,
}

impl ClassSched {
    /// The scheduler for `cfg` on `nports` ports.
    pub fn new(cfg: &PacketConfig, nports: usize) -> ClassSched {
        let vls = cfg.vls as usize;
        let top = cfg.vls.saturating_sub(1);
        let mut s = ClassSched {
            on: false,
            groups: [(0, false); 8],
            ngroups: 0,
            quantum: [0; 8],
            lossless: [true; 8],
            ecn: [cfg.ecn; 8],
            data_lane: 0,
            ack_lane: top,
            cnp_lane: top,
            deficit: IdVec::from_vec(Vec::new()),
            cur: IdVec::from_vec(Vec::new()),
        };
        let Some(tc) = &cfg.classes else {
            return s;
        };
        s.on = true;
        Self::configure(&mut s, tc, cfg, vls);
        s.deficit = IdVec::from_vec(vec![0; nports * vls]);
        // each group's round starts at its lowest lane
        let mut cur = vec![0u8; nports * vls];
        for p in 0..nports {
            for g in 0..s.ngroups {
                cur[p * vls + g] = s.groups[g].0.trailing_zeros() as u8;
            }
        }
        s.cur = IdVec::from_vec(cur);
        s
    }

    fn configure(s: &mut ClassSched, tc: &TrafficClasses, cfg: &PacketConfig, vls: usize) {
        let full_packet = cfg.mtu + cfg.header_bytes;
        let mut level = [0u16; 8];
        for (vl, lv) in level.iter_mut().enumerate().take(vls) {
            match tc.classes.get(vl) {
                Some(c) => {
                    *lv = u16::from(c.priority);
                    s.quantum[vl] = c.weight.map_or(0, |w| w.saturating_mul(full_packet));
                    s.lossless[vl] = c.lossless;
                    if c.ecn.is_some() && cfg.ecn.is_some() {
                        s.ecn[vl] = c.ecn;
                    }
                }
                None => *lv = UNCLASSED_LEVEL + vl as u16,
            }
        }
        // distinct levels, highest first
        let mut levels: Vec<u16> = level[..vls].to_vec();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        levels.dedup();
        for &lv in &levels {
            let mask = (0..vls)
                .filter(|&vl| level[vl] == lv)
                .fold(0u8, |m, vl| m | 1 << vl);
            let weighted = (0..vls).any(|vl| level[vl] == lv && s.quantum[vl] > 0);
            s.groups[s.ngroups] = (mask, weighted);
            s.ngroups += 1;
        }
        let top = cfg.vls.saturating_sub(1);
        s.data_lane = tc.data;
        s.ack_lane = tc.ack.unwrap_or(top);
        s.cnp_lane = tc.cnp.unwrap_or(top);
    }

    /// The lane after `vl` in `mask`, cyclically.
    #[inline]
    pub fn next_in(mask: u8, vl: u8) -> u8 {
        let above = u16::from(mask) & !((2u16 << vl) - 1);
        if above != 0 {
            above.trailing_zeros() as u8
        } else {
            mask.trailing_zeros() as u8
        }
    }
}

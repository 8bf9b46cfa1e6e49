//! Time, sizes and rates, and the parsing of their human spellings.
//!
//! Simulated time is an integer number of picoseconds ([`SimTime`]): 400 Gb/s
//! moves one byte in 20 ps, so picoseconds keep serialization exact at every
//! rate fabricsim models without floating-point drift. Sizes are bytes (`u64`),
//! rates are bits per second ([`Rate`]).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Picoseconds in one nanosecond.
pub const PS_PER_NS: u64 = 1_000;
/// Picoseconds in one microsecond.
pub const PS_PER_US: u64 = 1_000_000;
/// Picoseconds in one millisecond.
pub const PS_PER_MS: u64 = 1_000_000_000;
/// Picoseconds in one second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// A point in (or span of) simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    /// Time zero, the start of every run.
    pub const ZERO: SimTime = SimTime(0);
    /// The largest representable time (about 213 days).
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// A span of `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> SimTime {
        SimTime(ns * PS_PER_NS)
    }
    /// A span of `us` microseconds.
    pub const fn from_us(us: u64) -> SimTime {
        SimTime(us * PS_PER_US)
    }
    /// A span given in seconds as a float, rounded to the nearest picosecond.
    pub fn from_secs_f64(s: f64) -> SimTime {
        SimTime((s * PS_PER_S as f64).round().max(0.0) as u64)
    }
    /// The span in picoseconds.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// The span in microseconds, as a float (for reports).
    pub fn as_us(self) -> f64 {
        self.0 as f64 / PS_PER_US as f64
    }
    /// The span in seconds, as a float (for reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// `self + d`, saturating at [`SimTime::MAX`].
    pub fn saturating_add(self, d: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 + rhs.0)
    }
}
impl AddAssign for SimTime {
    fn add_assign(&mut self, rhs: SimTime) {
        self.0 += rhs.0;
    }
}
impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 - rhs.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= PS_PER_S {
            write!(f, "{:.3}s", ps as f64 / PS_PER_S as f64)
        } else if ps >= PS_PER_MS {
            write!(f, "{:.3}ms", ps as f64 / PS_PER_MS as f64)
        } else if ps >= PS_PER_US {
            write!(f, "{:.3}us", ps as f64 / PS_PER_US as f64)
        } else if ps >= PS_PER_NS {
            write!(f, "{:.3}ns", ps as f64 / PS_PER_NS as f64)
        } else {
            write!(f, "{ps}ps")
        }
    }
}

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    /// A rate of `g` gigabits per second.
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Gigabytes (10^9 bytes) per second, as reported by nccl-tests.
    pub fn as_gbytes_per_s(self) -> f64 {
        self.0 as f64 / 8e9
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next picosecond.
    ///
    /// # Panics
    /// Panics if the rate is zero; validated configurations never hold one.
    pub fn tx_time(self, bytes: u64) -> SimTime {
        debug_assert!(self.0 > 0, "zero rate reached the engine");
        let num = bytes as u128 * 8 * PS_PER_S as u128;
        let den = self.0 as u128;
        SimTime(num.div_ceil(den) as u64)
    }
    /// This rate scaled by `f` (used for header overhead and degraded links).
    pub fn scaled(self, f: f64) -> Rate {
        Rate((self.0 as f64 * f).round() as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if b >= 1e12 {
            write!(f, "{}Tbps", trim(b / 1e12))
        } else if b >= 1e9 {
            write!(f, "{}Gbps", trim(b / 1e9))
        } else if b >= 1e6 {
            write!(f, "{}Mbps", trim(b / 1e6))
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Formats a byte count with binary units (`4KiB`, `1GiB`), as sizes are written in scenarios.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if b >= size {
            return if b % size == 0 {
                format!("{}{name}", b / size)
            } else {
                format!("{}{name}", trim(b as f64 / size as f64))
            };
        }
    }
    format!("{b}B")
}

/// Why a human-spelled quantity could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// What was expected, with an example, e.g. `a size such as "4KiB"`.
    pub expected: &'static str,
}

const SIZE_EXPECTED: &str =
    "a size such as \"4KiB\", \"1.5MiB\", \"1GiB\" or \"9000B\" (units B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)";
const TIME_EXPECTED: &str =
    "a duration such as \"500ns\", \"1.5us\", \"2ms\" or \"1s\" (units ps, ns, us, ms, s)";
const RATE_EXPECTED: &str =
    "a rate such as \"400Gbps\", \"100Mbps\" or \"900GB/s\" (bit units bps, Kbps, Mbps, Gbps, Tbps; byte units B/s, KB/s, MB/s, GB/s, TB/s)";

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == '-'))
        .unwrap_or(s.len());
    // An exponent 'e' directly followed by a unit letter ("1e") is ambiguous; keep it simple:
    // only accept 'e' when a digit or '-' follows.
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim()))
}

/// Parses a size in bytes: `"4KiB"`, `"1.5MiB"`, `"9000"`, `"9000B"`, `"1GB"`.
///
/// # Errors
/// Returns a [`UnitError`] for an unknown unit, a negative or non-finite number,
/// or a fractional number of bytes.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let err = UnitError {
        expected: SIZE_EXPECTED,
    };
    let (v, unit) = split_number(s).ok_or(err.clone())?;
    let mult: f64 = match unit {
        "" | "B" | "b" | "bytes" => 1.0,
        "KB" | "kB" => 1e3,
        "KiB" | "K" | "k" => 1024.0,
        "MB" => 1e6,
        "MiB" | "M" => 1048576.0,
        "GB" => 1e9,
        "GiB" | "G" => 1073741824.0,
        "TB" => 1e12,
        "TiB" | "T" => 1099511627776.0,
        _ => return Err(err),
    };
    let bytes = v * mult;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(err);
    }
    Ok(bytes as u64)
}

/// Parses a duration: `"500ns"`, `"1.5us"`, `"2ms"`, `"0"`.
///
/// # Errors
/// Returns a [`UnitError`] for a missing or unknown unit (only `0` may omit it),
/// or a negative or non-finite number.
pub fn parse_time(s: &str) -> Result<SimTime, UnitError> {
    let err = UnitError {
        expected: TIME_EXPECTED,
    };
    let (v, unit) = split_number(s).ok_or(err.clone())?;
    let mult: f64 = match unit {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        "" if v == 0.0 => 1.0,
        _ => return Err(err),
    };
    let ps = v * mult;
    if !ps.is_finite() || ps < 0.0 || ps > u64::MAX as f64 {
        return Err(err);
    }
    Ok(SimTime(ps.round() as u64))
}

/// Parses a rate: `"400Gbps"`, `"100Gb/s"`, `"900GB/s"` (bytes), `"25GBps"` (bytes).
///
/// # Errors
/// Returns a [`UnitError`] for a missing or unknown unit, or a negative or non-finite number.
pub fn parse_rate(s: &str) -> Result<Rate, UnitError> {
    let err = UnitError {
        expected: RATE_EXPECTED,
    };
    let (v, unit) = split_number(s).ok_or(err.clone())?;
    let mult: f64 = match unit {
        "bps" | "b/s" => 1.0,
        "Kbps" | "kbps" | "Kb/s" | "kb/s" => 1e3,
        "Mbps" | "Mb/s" => 1e6,
        "Gbps" | "Gb/s" => 1e9,
        "Tbps" | "Tb/s" => 1e12,
        "B/s" | "Bps" => 8.0,
        "KB/s" | "kB/s" | "KBps" => 8e3,
        "MB/s" | "MBps" => 8e6,
        "GB/s" | "GBps" => 8e9,
        "TB/s" | "TBps" => 8e12,
        _ => return Err(err),
    };
    let bps = v * mult;
    if !bps.is_finite() || bps < 0.0 || bps > u64::MAX as f64 {
        return Err(err);
    }
    Ok(Rate(bps.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_binary_and_decimal_units() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1.5MiB"), Ok(1572864));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("9000"), Ok(9000));
        assert_eq!(parse_size("9000B"), Ok(9000));
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("-4KiB").is_err());
        assert!(parse_size("0.5B").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn times_parse_to_picoseconds() {
        assert_eq!(parse_time("1.5us"), Ok(SimTime(1_500_000)));
        assert_eq!(parse_time("500ns"), Ok(SimTime(500_000)));
        assert_eq!(parse_time("2ms"), Ok(SimTime(2 * PS_PER_MS)));
        assert_eq!(parse_time("0"), Ok(SimTime(0)));
        assert!(
            parse_time("5").is_err(),
            "a bare non-zero number has no unit"
        );
        assert!(parse_time("-1us").is_err());
    }

    #[test]
    fn rates_parse_bits_and_bytes() {
        assert_eq!(parse_rate("400Gbps"), Ok(Rate::gbps(400)));
        assert_eq!(parse_rate("900GB/s"), Ok(Rate(7_200_000_000_000)));
        assert_eq!(parse_rate("64GB/s"), Ok(Rate::gbps(512)));
        assert!(parse_rate("400").is_err());
        assert!(parse_rate("400 furlongs").is_err());
    }

    #[test]
    fn one_byte_at_400g_takes_20ps() {
        // DESIGN.md: "400 Gb/s moves one byte in 20 ps".
        assert_eq!(Rate::gbps(400).tx_time(1), SimTime(20));
        assert_eq!(Rate::gbps(400).tx_time(4096), SimTime(81_920));
        // rounding up: 1 byte at 3 bps = 2.666..s -> ceil
        assert_eq!(Rate(3).tx_time(1).0, 2_666_666_666_667);
    }

    #[test]
    fn formatting_round_trips_common_values() {
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1 << 30), "1GiB");
        assert_eq!(format_bytes(100), "100B");
        assert_eq!(Rate::gbps(400).to_string(), "400Gbps");
        assert_eq!(SimTime(1_500_000).to_string(), "1.500us");
    }
}

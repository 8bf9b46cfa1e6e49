//! Defaults and limits of the packet level that a scenario and a directly
//! built `backend::packet::PacketConfig` share. They lived twice — as strings
//! in `config` and as numbers in `PacketConfig::default` — and a change to one
//! silently made a scenario and a library user simulate different fabrics;
//! here each is stated once and both sides read it.

use crate::units::SimTime;

/// Largest payload per packet when neither the file nor a preset sets one, bytes.
pub const MTU: u64 = 4096;

/// Largest MTU either side accepts, bytes (64 KiB).
pub const MAX_MTU: u64 = 65536;

/// Most header (and ACK) bytes per packet either side accepts.
pub const MAX_HEADER_BYTES: u64 = 4096;

/// Buffer per port and virtual lane, bytes (a per-port share of a
/// Quantum-2-class switch buffer; vendors publish only the shared total).
pub const PORT_BUFFER: u64 = 128 << 10;

/// Dynamic-threshold α of a shared buffer (Choudhury & Hahne 1998).
pub const SHARED_BUFFER_ALPHA: f64 = 1.0;

/// Virtual lanes per port.
pub const VIRTUAL_LANES: u8 = 2;

/// Most virtual lanes per port (InfiniBand's data VLs in use, Ethernet priorities).
pub const MAX_VIRTUAL_LANES: u8 = 8;

/// Unacknowledged bytes per queue pair: about the bandwidth-delay product of
/// 400 Gb/s over a 10 µs round trip (see `PacketConfig::window_bytes`).
pub const WINDOW: u64 = 512 << 10;

/// The receiver ACKs every this many packets.
pub const ACK_EVERY: u32 = 4;

/// Retransmission timeout: 4.096 µs × 2^8, the IB local-ACK-timeout encoding
/// with value 8 (see `PacketConfig::rto`).
pub const RTO: SimTime = SimTime(1_048_576_000);

/// Idle time that ends a flowlet: the LetFlow/CONGA timeout of the ConWeave
/// ns-3 simulator (see `PacketConfig::flowlet_gap`).
pub const FLOWLET_GAP: SimTime = SimTime::from_us(100);

/// Nothing moved for this long while packets wait: a deadlock.
pub const DEADLOCK_TIMEOUT: SimTime = SimTime(10_000_000_000);

/// Simulated time after which a packet-level run gives up: 60 s.
pub const TIME_LIMIT: SimTime = SimTime(60_000_000_000_000);

/// Most pause quanta one PAUSE frame may carry (a 16-bit field, IEEE 802.1Qbb).
pub const MAX_PAUSE_QUANTA: u32 = 65535;

/// DCTCP's α gain g (Alizadeh et al. 2010).
pub const DCTCP_G: f64 = 1.0 / 16.0;

//! Hardware presets a scenario can name and then override field by field.
//!
//! Figures are the vendors' published ones; where a vendor publishes none
//! (cable latency, per-hop NVSwitch latency) the value is a typical one and is
//! marked as such. Override any of them in the scenario.

/// A host (node) model: GPUs, NVLink, NICs, PCIe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodePreset {
    /// Name used in `cluster.preset`.
    pub name: &'static str,
    /// One-line description for `fabricsim presets`.
    pub about: &'static str,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// NICs per node.
    pub nics_per_node: u32,
    /// NVLink bandwidth per GPU per direction.
    pub nvlink_bandwidth: &'static str,
    /// One-way latency of each NVLink hop (GPU→NVSwitch, NVSwitch→GPU).
    pub nvlink_latency: &'static str,
    /// PCIe bandwidth per direction between a GPU and its NIC.
    pub pcie_bandwidth: &'static str,
    /// One-way PCIe latency.
    pub pcie_latency: &'static str,
    /// Fraction of the NVLink rate NCCL's copy and reduce kernels reach (Simple
    /// protocol, large messages); the NVLink links run at this share of their rate.
    pub nvlink_efficiency: f64,
    /// The NVSwitches reduce and multicast (NVLink SHARP, NVLink 4 and later).
    pub nvls: bool,
}

/// Host presets.
pub const NODE_PRESETS: [NodePreset; 3] = [
    NodePreset {
        name: "dgx-h100-node",
        about: "DGX H100: 8 H100 SXM, NVLink 4 (900 GB/s bidirectional per GPU), 4 NVSwitches, 8 x ConnectX-7, PCIe Gen5",
        gpus_per_node: 8,
        nics_per_node: 8,
        // 900 GB/s total bidirectional per GPU (18 NVLink 4 links) = 450 GB/s each way.
        nvlink_bandwidth: "450GB/s",
        // typical, not published: one NVSwitch traversal ~0.5 us GPU to GPU.
        nvlink_latency: "250ns",
        // PCIe Gen5 x16: about 64 GB/s per direction.
        pcie_bandwidth: "64GB/s",
        pcie_latency: "250ns",
        // Calibrated on one case: NVIDIA's nccl-tests maintainers quote about
        // 370 GB/s ring all-reduce busbw on 8 x H100 ("protocol overhead ~20%"),
        // 370 / 450 = 0.822. Checked (not fitted) on multi-node rings.
        nvlink_efficiency: 370.0 / 450.0,
        // third-generation NVSwitch: NVLink SHARP (NCCL's NVLS algorithm)
        nvls: true,
    },
    NodePreset {
        name: "dgx-a100-node",
        about: "DGX A100: 8 A100 SXM, NVLink 3 (600 GB/s bidirectional per GPU), 8 x ConnectX-6 HDR, PCIe Gen4",
        gpus_per_node: 8,
        nics_per_node: 8,
        nvlink_bandwidth: "300GB/s",
        nvlink_latency: "250ns",
        // PCIe Gen4 x16: about 32 GB/s per direction.
        pcie_bandwidth: "32GB/s",
        pcie_latency: "250ns",
        // NCCL's tuning model caps sm80 (A100) bus bandwidth at 235 GB/s
        // (src/graph/tuning.cc), what 8 x A100 all_reduce_perf reaches: 235 / 300.
        nvlink_efficiency: 235.0 / 300.0,
        // second-generation NVSwitch: no in-switch reduction
        nvls: false,
    },
    NodePreset {
        name: "dgx-b200-node",
        about: "DGX B200: 8 B200, NVLink 5 (1.8 TB/s bidirectional per GPU), 8 x ConnectX-7, PCIe Gen5",
        gpus_per_node: 8,
        nics_per_node: 8,
        nvlink_bandwidth: "900GB/s",
        nvlink_latency: "250ns",
        pcie_bandwidth: "64GB/s",
        pcie_latency: "250ns",
        // No public B200 measurement was found: H100's measured ratio is assumed,
        // not calibrated. Override it with `cluster.nvlink_efficiency`.
        nvlink_efficiency: 370.0 / 450.0,
        nvls: true,
    },
];

/// A network model: technology, port rate, MTU, headers, latencies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FabricPreset {
    /// Name used in `fabric.preset`.
    pub name: &'static str,
    /// One-line description.
    pub about: &'static str,
    /// `infiniband`, `roce` or `ethernet`.
    pub kind: &'static str,
    /// Port rate of NICs and switches.
    pub link_rate: &'static str,
    /// Largest payload per packet.
    pub mtu: &'static str,
    /// Per-packet header and framing bytes on the wire.
    pub header_bytes: u64,
    /// Propagation latency of each network link (cable).
    pub link_latency: &'static str,
    /// Port-to-port forwarding latency of a switch.
    pub switch_latency: &'static str,
    /// Share of the payload rate (after headers) a NIC moves with GPUDirect RDMA;
    /// the links between NICs and their switches run at this share.
    pub nic_efficiency: f64,
}

/// NIC goodput over payload rate on NDR, calibrated on one figure: NVIDIA's
/// nccl-tests maintainers quote 46-48 GB/s per ConnectX-7 NDR NIC; the payload
/// rate is 400 Gb/s x 4096 / (4096 + 26) = 49.68 GB/s, and 47 / 49.68 = 0.946.
/// The other fabric presets carry the same ratio (not measured on them).
const NIC_EFFICIENCY: f64 = 47.0 / (50.0 * 4096.0 / 4122.0);

/// InfiniBand per-packet overhead for an RDMA WRITE middle packet: LRH 8 + BTH 12 +
/// ICRC 4 + VCRC 2 bytes (IBA vol. 1, ch. 5-7).
const IB_HEADER: u64 = 26;
/// RoCEv2 per-packet overhead: preamble+SFD 8, Ethernet 14, FCS 4, inter-frame gap 12,
/// IPv4 20, UDP 8, BTH 12, ICRC 4 (IBTA RoCEv2 annex A17).
const ROCE_HEADER: u64 = 82;
/// TCP/IPv4 over Ethernet: preamble+SFD 8, Ethernet 14, FCS 4, IFG 12, IPv4 20, TCP 20.
const TCP_HEADER: u64 = 78;

/// Fabric presets.
pub const FABRIC_PRESETS: [FabricPreset; 6] = [
    FabricPreset {
        name: "ib-ndr-400",
        about: "InfiniBand NDR 400 Gb/s (Quantum-2 switches, ConnectX-7), 4 KiB MTU, credit flow control",
        kind: "infiniband",
        link_rate: "400Gbps",
        mtu: "4KiB",
        header_bytes: IB_HEADER,
        // typical: ~10 m of fiber at 5 ns/m.
        link_latency: "50ns",
        // Quantum-class switches forward in about 130 ns port to port (vendor figure for HDR).
        switch_latency: "130ns",
        nic_efficiency: NIC_EFFICIENCY,
    },
    FabricPreset {
        name: "ib-hdr-200",
        about: "InfiniBand HDR 200 Gb/s (Quantum switches, ConnectX-6), 4 KiB MTU",
        kind: "infiniband",
        link_rate: "200Gbps",
        mtu: "4KiB",
        header_bytes: IB_HEADER,
        link_latency: "50ns",
        switch_latency: "130ns",
        nic_efficiency: NIC_EFFICIENCY,
    },
    FabricPreset {
        name: "ib-xdr-800",
        about: "InfiniBand XDR 800 Gb/s, 4 KiB MTU",
        kind: "infiniband",
        link_rate: "800Gbps",
        mtu: "4KiB",
        header_bytes: IB_HEADER,
        link_latency: "50ns",
        switch_latency: "130ns",
        nic_efficiency: NIC_EFFICIENCY,
    },
    FabricPreset {
        name: "roce-400",
        about: "RoCEv2 over 400 GbE, 4 KiB RDMA MTU, PFC + ECN + DCQCN",
        kind: "roce",
        link_rate: "400Gbps",
        mtu: "4KiB",
        header_bytes: ROCE_HEADER,
        link_latency: "50ns",
        // typical Ethernet switch ASIC cut-through latency: 0.3-0.8 us.
        switch_latency: "500ns",
        nic_efficiency: NIC_EFFICIENCY,
    },
    FabricPreset {
        name: "roce-200",
        about: "RoCEv2 over 200 GbE, 4 KiB RDMA MTU",
        kind: "roce",
        link_rate: "200Gbps",
        mtu: "4KiB",
        header_bytes: ROCE_HEADER,
        link_latency: "50ns",
        switch_latency: "500ns",
        nic_efficiency: NIC_EFFICIENCY,
    },
    FabricPreset {
        name: "ethernet-400",
        about: "Plain lossy 400 GbE with TCP, 1500-byte MTU",
        kind: "ethernet",
        link_rate: "400Gbps",
        mtu: "1460B",
        header_bytes: TCP_HEADER,
        link_latency: "50ns",
        switch_latency: "500ns",
        // plain TCP is not GPUDirect RDMA: its host costs are the packet level's
        // tcp_packet_overhead; the links carry their full payload rate.
        nic_efficiency: 1.0,
    },
];

/// The default per-packet header bytes of a fabric kind (used when neither the
/// scenario nor a preset gives `header_bytes`).
pub fn default_header(kind: &str) -> u64 {
    match kind {
        "infiniband" => IB_HEADER,
        "roce" => ROCE_HEADER,
        _ => TCP_HEADER,
    }
}

/// Looks up a host preset.
pub fn node(name: &str) -> Option<&'static NodePreset> {
    NODE_PRESETS.iter().find(|p| p.name == name)
}

/// Looks up a fabric preset.
pub fn fabric(name: &str) -> Option<&'static FabricPreset> {
    FABRIC_PRESETS.iter().find(|p| p.name == name)
}

/// Names of the host presets, comma-separated.
pub fn node_names() -> String {
    NODE_PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names of the fabric presets, comma-separated.
pub fn fabric_names() -> String {
    FABRIC_PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

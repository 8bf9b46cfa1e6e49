//! The layout of `config` keeps its promises: a default of the packet level is
//! stated once (a scenario that leaves a key out and a `PacketConfig` built by
//! `Default` simulate the same fabric), and `config` does not depend on the
//! backends it feeds.

use fabricsim::backend::packet::PacketConfig;
use fabricsim::config::parse;

const MINIMAL: &str = r#"
[cluster]
preset = "dgx-h100-node"
nodes = 2
[topology]
kind = "single_switch"
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
sizes = ["1MiB"]
"#;

#[test]
fn a_scenario_without_packet_keys_gets_the_packet_configs_defaults() {
    let s = parse("minimal.toml", MINIMAL).expect("valid");
    let d = PacketConfig::default();
    let p = s.packet();
    assert_eq!(p.buffer(), d.port_buffer_bytes);
    assert_eq!(p.shared_buffer_alpha(), d.shared_buffer_alpha);
    assert_eq!(p.virtual_lanes(), d.vls);
    assert_eq!(p.window(), d.window_bytes);
    assert_eq!(p.ecn_mark_at(), d.ecn_mark_at);
    assert_eq!(p.ack_every(), d.ack_every);
    assert_eq!(p.rto(), d.rto);
    assert_eq!(p.flowlet_gap(), d.flowlet_gap);
    assert_eq!(p.deadlock_timeout(), d.deadlock_timeout);
    assert_eq!(p.time_limit(), d.time_limit);
    assert_eq!(s.fabric().mtu(), u64::from(d.mtu));
}

#[test]
fn config_does_not_import_a_backend() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
    for entry in std::fs::read_dir(&dir).expect("src/config") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains("crate::backend") && !code.contains("fabricsim::backend"),
                "{}:{}: config names a backend; put the type in crate::mechanism",
                path.display(),
                i + 1
            );
        }
    }
}

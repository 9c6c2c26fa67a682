//! Loopback ports for servers the tests start as separate processes (Synapse, the gateway's
//! metrics endpoint), which must be told their port before they bind it.
//!
//! Asking the kernel for a free port (`bind` to port 0) and handing it on leaves a gap before
//! the other process binds it. In that gap the kernel may give the same port to any outgoing
//! connection, since it comes from the ephemeral range, and with many tests running at once
//! it sometimes does ("Address already in use"). A port chosen at random *below* the
//! ephemeral range is never handed out that way; only another test choosing the same one at
//! the same moment can take it (one in about 12,000), and the harness's Synapse, started by
//! nearly every test, is then started again on another port.

use std::hash::{BuildHasher, RandomState};
use std::net::TcpListener;

/// The lowest port chosen: above the well-known and most registered service ports.
const LOWEST: u16 = 20_000;

/// A loopback port that nobody listens on now, outside the kernel's ephemeral range.
pub fn free_port() -> u16 {
    let highest = ephemeral_range_start()
        .saturating_sub(1)
        .max(LOWEST + 1_000);
    let span = u64::from(highest - LOWEST);
    let random = RandomState::new();
    for attempt in 0u64..200 {
        let port = LOWEST + (random.hash_one(attempt) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between {LOWEST} and {highest}");
}

/// Where the kernel's ephemeral ports begin (Linux's default when it cannot be read).
fn ephemeral_range_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Whether a server's log says it lost its port to someone else.
pub fn lost_port(log: &str) -> bool {
    log.contains("Address already in use")
}

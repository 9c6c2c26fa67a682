#![recursion_limit = "256"]
//! The container image (`deploy/container/Containerfile`), built with this build's binary by
//! `scripts/build-image.sh --prebuilt` and smoke-tested by it: the binary runs as the
//! unprivileged `sidekicks` user, the state and workspace volumes are declared, the state
//! folder and config have their owners and modes, and `sidekicks check` passes inside it for
//! the compose demo's config.
//!
//! Where no registry can be reached (our machines), the Debian base image is made from
//! Debian's packages with debootstrap when running as root. Where no container engine is
//! installed, or it cannot run a container here, the test says so and checks nothing else.

mod support;

use std::process::Command;

const BASE: &str = "docker.io/library/debian:bookworm-slim";

fn engine() -> Option<&'static str> {
    ["podman", "docker"].into_iter().find(|e| {
        Command::new(e)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn the_image_builds_runs_unprivileged_and_checks_the_demo_config() {
    let Some(engine) = engine() else {
        eprintln!("no podman or docker here: the container image is not tested");
        return;
    };
    let root = env!("CARGO_MANIFEST_DIR");
    let has_base = Command::new(engine)
        .args(["image", "inspect", BASE])
        .output()
        .is_ok_and(|o| o.status.success());
    let root_user = unsafe { libc::geteuid() } == 0;
    let can_debootstrap = Command::new("debootstrap")
        .arg("--version")
        .output()
        .is_ok();
    if !(has_base || root_user && can_debootstrap) {
        eprintln!("no {BASE} image and no way to make one: the container image is not tested");
        return;
    }
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/build-image.sh"))
        .arg("--prebuilt")
        .arg(support::gateway::binary())
        .env("SIDEKICKS_CONTAINER_ENGINE", engine)
        .env("SIDEKICKS_IMAGE", "sidekicks:test")
        .env("SIDEKICKS_DEBOOTSTRAP", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // The engine itself may be unable to run containers on this machine (no cgroup support,
    // limits it may not set): that is no fault of the image.
    let probe = Command::new(engine)
        .args(["run", "--rm", BASE, "true"])
        .output()
        .unwrap();
    if !probe.status.success() {
        eprintln!(
            "{engine} cannot run a container here ({}): the container image is not tested",
            String::from_utf8_lossy(&probe.stderr).trim()
        );
        return;
    }
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "user: 10001",
        "/var/lib/sidekicks 700 sidekicks:sidekicks",
        "/etc/sidekicks/sidekicks.toml 640 root:sidekicks",
        "session/new: ok",
    ] {
        assert!(stdout.contains(line), "{line} in:\n{stdout}");
    }
}

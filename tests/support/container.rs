//! The container runner's test image: this build's binary (the demo agent) on the Debian
//! base the container image test uses, built with Podman.

use std::path::Path;
use std::process::Command;

/// The Debian base image (made with debootstrap where no registry is reachable).
pub const BASE: &str = "docker.io/library/debian:bookworm-slim";
/// The demo agent's image.
pub const IMAGE: &str = "localhost/sidekicks-demo-agent:test";

/// Builds the agent's image (the base, and this build's binary at
/// `/usr/local/bin/sidekicks`); `None` when Podman cannot build or run one here.
pub fn agent_image() -> Option<&'static str> {
    // What may fail here (no engine, no base yet) is asked, not asserted.
    let asks = |args: &[&str]| Command::new("podman").args(args).output();
    if !asks(&["--version"]).is_ok_and(|o| o.status.success()) {
        eprintln!("no podman here: the container runner is not tested");
        return None;
    }
    if !asks(&["image", "inspect", BASE]).is_ok_and(|o| o.status.success()) {
        // The container image's build script makes the base from Debian's packages.
        let root = env!("CARGO_MANIFEST_DIR");
        let made = Command::new("bash")
            .arg(format!("{root}/scripts/build-image.sh"))
            .arg("--prebuilt")
            .arg(super::gateway::binary())
            .env("SIDEKICKS_CONTAINER_ENGINE", "podman")
            .env("SIDEKICKS_IMAGE", "sidekicks:test")
            .env("SIDEKICKS_DEBOOTSTRAP", "1")
            .output()
            .unwrap();
        if !made.status.success() {
            eprintln!(
                "no {BASE} image and none could be made: the container runner is not tested\n{}",
                String::from_utf8_lossy(&made.stderr)
            );
            return None;
        }
    }
    let probe = asks(&["run", "--rm", BASE, "true"]).unwrap();
    if !probe.status.success() {
        eprintln!(
            "podman cannot run a container here ({}): the container runner is not tested",
            String::from_utf8_lossy(&probe.stderr).trim()
        );
        return None;
    }
    let context = tempfile::tempdir().unwrap();
    std::fs::copy(super::gateway::binary(), context.path().join("sidekicks")).unwrap();
    std::fs::write(
        context.path().join("Containerfile"),
        // An entry point of its own, as agents' images have: the configured command must
        // replace it.
        format!(
            "FROM {BASE}\nCOPY sidekicks /usr/local/bin/sidekicks\nENTRYPOINT [\"/bin/false\"]\n"
        ),
    )
    .unwrap();
    podman(&["build", "-q", "-t", IMAGE, context.path().to_str().unwrap()]);
    Some(IMAGE)
}

/// Runs `podman args`, which must succeed; returns what it printed.
pub fn podman(args: &[&str]) -> String {
    let out = Command::new("podman").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "podman {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The label the gateway whose state folder is `state` puts on its containers.
pub fn label(state: &Path) -> String {
    format!(
        "sidekicks.state={}",
        state.canonicalize().unwrap().display()
    )
}

/// The names of the containers of the gateway whose state folder is `state`.
pub fn containers(state: &Path) -> Vec<String> {
    let filter = format!("label={}", label(state));
    let names = podman(&["ps", "-a", "--format", "{{.Names}}", "--filter", &filter]);
    names.split_whitespace().map(str::to_owned).collect()
}

/// `podman inspect` of `name`, formatted by `format`.
pub fn inspect(name: &str, format: &str) -> String {
    podman(&["inspect", "--format", format, name])
}

/// The agent's table: the demo agent in `image`, with limits, and `extra` lines for its
/// runner table.
pub fn in_container(image: &str, extra: &str) -> String {
    format!(
        "command = \"/usr/local/bin/sidekicks\"\nargs = [\"demo-agent\"]\n\
         [agents.runner]\nkind = \"container\"\nimage = \"{image}\"\ncpus = 1.5\n\
         memory = \"768m\"\npids_limit = 300\n{extra}"
    )
}

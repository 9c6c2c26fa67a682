#![recursion_limit = "256"]
//! The Debian package (`scripts/build-deb.sh`): what it holds, and, where the tests run as
//! root (CI does), installed with `dpkg`: the user, the folders' owners and modes, and
//! `sidekicks check` run from the installed binary; then purged.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// The owner, group and mode of `path`, as `user:group 0750`.
fn owned(path: &str) -> String {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let name = |id: u32, db: &str| {
        let line = run(Command::new("getent").args([db, &id.to_string()]));
        line.split(':').next().unwrap().to_owned()
    };
    format!(
        "{}:{} {:04o}",
        name(meta.uid(), "passwd"),
        name(meta.gid(), "group"),
        meta.mode() & 0o7777
    )
}

#[test]
fn the_package_installs_the_binary_unit_user_and_folders_and_check_runs_from_it() {
    let root = env!("CARGO_MANIFEST_DIR");
    let deb = run(Command::new("bash")
        .arg(format!("{root}/scripts/build-deb.sh"))
        .arg(support::gateway::binary())
        .env("SIDEKICKS_DEB_COMPRESSION", "none"));
    let deb = deb.trim();
    assert!(deb.ends_with(".deb") && Path::new(deb).exists(), "{deb}");
    let contents = run(Command::new("dpkg-deb").args(["--contents", deb]));
    for (mode, path) in [
        ("-rwxr-xr-x root/root", "./usr/bin/sidekicks"),
        (
            "-rw-r--r-- root/root",
            "./lib/systemd/system/sidekicks.service",
        ),
        ("-rw-r----- root/root", "./etc/sidekicks/sidekicks.toml"),
    ] {
        assert!(
            contents
                .lines()
                .any(|l| l.starts_with(mode) && l.ends_with(path)),
            "{mode} {path} in:\n{contents}"
        );
    }
    let control = run(Command::new("dpkg-deb").args(["--field", deb, "Package", "Depends"]));
    assert!(
        control.contains("sidekicks") && control.contains("bubblewrap"),
        "{control}"
    );

    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: the package was built and read, not installed");
        return;
    }
    // Installed for real, then purged: nothing is left behind.
    let _ = Command::new("dpkg").args(["--purge", "sidekicks"]).output();
    // Inside the purge's guard: a failed install (a dependency missing) leaves the package
    // half installed, which stops every later `apt-get install` on the machine.
    let result = std::panic::catch_unwind(|| {
        run(Command::new("dpkg").args(["--install", deb]));
        let version = run(Command::new("/usr/bin/sidekicks").arg("--version"));
        assert!(version.starts_with("sidekicks "), "{version}");
        let user = run(Command::new("getent").args(["passwd", "sidekicks"]));
        assert!(user.contains(":/var/lib/sidekicks:"), "{user}");
        assert_eq!(owned("/var/lib/sidekicks"), "sidekicks:sidekicks 0700");
        assert_eq!(owned("/etc/sidekicks"), "root:sidekicks 0750");
        assert_eq!(
            owned("/etc/sidekicks/sidekicks.toml"),
            "root:sidekicks 0640"
        );
        let unit = std::fs::read_to_string("/lib/systemd/system/sidekicks.service").unwrap();
        assert!(
            unit.contains("User=sidekicks") && unit.contains("ExecStart=/usr/bin/sidekicks run")
        );

        // `sidekicks check` from the installed binary, with its own demo agent.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let cfg = dir.path().join("check.toml");
        std::fs::write(
            &cfg,
            r#"state_dir = "state"
[matrix]
homeserver = "https://matrix.example.org"
[access]
allowed_users = ["@alice:example.org"]
[[agents]]
id = "demo"
display_name = "Demo"
command = "/usr/bin/sidekicks"
args = ["demo-agent"]
workspace = "ws"
[agents.matrix]
user_id = "@demo:example.org"
password_env = "SIDEKICKS_DEMO_PASSWORD"
"#,
        )
        .unwrap();
        let report = run(Command::new("/usr/bin/sidekicks")
            .args(["check", "--config"])
            .arg(&cfg));
        assert!(report.contains("session/new: ok"), "{report}");
    });
    run(Command::new("dpkg").args(["--purge", "sidekicks"]));
    assert!(!Path::new("/usr/bin/sidekicks").exists());
    assert!(!Path::new("/var/lib/sidekicks").exists());
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

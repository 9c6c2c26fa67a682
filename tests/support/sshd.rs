//! A throwaway SSH server on loopback (Debian's `openssh-server`), for the SSH runner: its
//! own host key, one user key allowed (the test process's user), the known-hosts file
//! that names its key, and its log. Gone when dropped.
//!
//! It runs in a mount namespace of its own where [`Sshd::remote`] is [`Sshd::disk`]: a
//! folder that is empty for the gateway and holds the "remote host's" files for what runs
//! through the server. What the gateway wrote or read by itself, instead of through the
//! host, would land in (or be looked for in) the empty folder.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::ports::free_port;

/// A running `sshd`.
pub struct Sshd {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Holds its keys, config and log.
    dir: TempDir,
    /// The server.
    child: Child,
}

impl Sshd {
    /// Starts one, or `None` (said on stderr) where `sshd` is not installed.
    pub fn start() -> Option<Self> {
        let sshd = PathBuf::from("/usr/sbin/sshd");
        if !sshd.exists() {
            eprintln!("sshd is not installed (Debian package `openssh-server`): not tested");
            return None;
        }
        // SAFETY: getuid(2) cannot fail.
        if unsafe { libc::getuid() } != 0 {
            eprintln!("the SSH server's mount namespace needs root: not tested");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("sidekicks-sshd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for key in ["host", "user"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", key, "-f"])
                .arg(d.join(key))
                .status()
                .unwrap();
            assert!(made.success(), "ssh-keygen");
        }
        std::fs::copy(d.join("user.pub"), d.join("authorized_keys")).unwrap();
        let port = free_port();
        let host_key = std::fs::read_to_string(d.join("host.pub")).unwrap();
        let mut parts = host_key.split_whitespace();
        let (kind, key) = (parts.next().unwrap(), parts.next().unwrap());
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {kind} {key}\n"),
        )
        .unwrap();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\nPidFile none\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nUsePAM no\n\
                 StrictModes no\nPermitRootLogin prohibit-password\nLogLevel VERBOSE\n\
                 MaxStartups 100\nMaxSessions 100\n",
                d = d.display()
            ),
        )
        .unwrap();
        // Privilege separation needs its empty folder when run as root.
        let _ = std::fs::create_dir_all("/run/sshd");
        let log = std::fs::File::create(d.join("sshd.log")).unwrap();
        for folder in ["remote", "disk"] {
            std::fs::create_dir(d.join(folder)).unwrap();
        }
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
            .arg("mount --bind \"$1\" \"$2\" && exec \"$3\" -D -e -f \"$4\"")
            .arg("sh")
            .args([
                d.join("disk"),
                d.join("remote"),
                sshd,
                d.join("sshd_config"),
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let server = Sshd { port, dir, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd did not listen: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }

    /// The destination that signs in here as this process's user.
    pub fn destination(&self) -> String {
        format!("ssh://{}@127.0.0.1:{}", user(), self.port)
    }

    /// The user key the server allows.
    pub fn identity(&self) -> PathBuf {
        self.dir.path().join("user")
    }

    /// The known-hosts file naming the server's key.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    /// A folder that is empty here and, for what runs through the server, is [`Sshd::disk`].
    pub fn remote(&self) -> PathBuf {
        self.dir.path().join("remote")
    }

    /// Where the files of [`Sshd::remote`] really are.
    pub fn disk(&self) -> PathBuf {
        self.dir.path().join("disk")
    }

    /// Its process: the listener, whose children are the sessions (and what runs in them).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The config lines of an agent on `hosts` signing in here, its workspace and home
    /// below `remote` (a path on the host).
    pub fn agent_toml(&self, hosts: &[String], remote: &Path) -> String {
        format!(
            "workspace = \"{remote}/work/{{room}}\"\nhome = \"{remote}/home\"\nroom_tools = false\n\
             [agents.runner]\nkind = \"ssh\"\nhosts = {hosts:?}\nknown_hosts = {known:?}\n\
             identity = {identity:?}\nprogram = {program:?}\nconnect_timeout_secs = 5\n",
            remote = remote.display(),
            known = self.known_hosts(),
            identity = self.identity(),
            program = super::gateway::binary(),
        )
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This process's user name.
fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

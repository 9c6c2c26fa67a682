//! The SSH runner (`[agents.runner] kind = "ssh"`): an agent that runs on another host, and
//! everything the gateway does with its files done there too.
//!
//! The gateway reaches the host with the system `ssh` client ([`link`]), host keys checked
//! against the known-hosts file the operator gives and nothing of the user's own ssh config
//! read. Every connection runs one fixed command on the far side, `sidekicks remote`, and
//! says what it wants in one line on its stdin ([`wire`]): nothing the agent controls is
//! ever put on a command line a remote shell reads. The helper on the far side runs the
//! agent or one of its commands (in the host's bubblewrap sandbox where it has one, ended
//! when the connection goes), or does one file operation beneath the conversation's folder
//! with the same by-handle code the gateway uses at home (`workspace::folder`): a link the
//! agent plants on its host leads nowhere there either.

pub mod link;
pub mod wire;

pub use link::{Link, NoHost, SshSettings};

/// Where the homes the gateway gives its agents on a host are, below the remote user's home
/// (each agent's sandbox there hides all but its own).
pub const AGENT_HOMES: &str = ".sidekicks/agent-homes";

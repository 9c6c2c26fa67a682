//! The ACP side: the only module that imports the ACP SDK. It starts agent processes,
//! speaks the protocol with them and hands the core our own types (`crate::core::agent`).

mod client_fs;
mod client_permission;
mod client_question;
mod client_requests;
mod client_terminal;
mod connection;
mod container;
pub mod demo_agent;
pub mod dialect;
mod ending;
mod events;
mod in_container;
mod launch;
mod lines;
mod notifications;
mod on_host;
mod per_room;
mod process;
mod requests;
mod sandbox;
mod sessions;
mod supervisor;
mod tasks;
mod terminal;
mod transport;

pub use connection::AcpAgent;
pub use container::Container;
pub use launch::{ENV_FD, own_session, read_on_fd3};
pub use per_room::{PerRoomAgent, RoomLimits};
pub use process::ProcessSpec;
pub use sandbox::{Network, Sandbox, locate as locate_program, program_folders};
pub use supervisor::{Supervised, SupervisedAgent};

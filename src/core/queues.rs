//! Every queue between two tasks is bounded, so a flooded room or a flooding agent cannot
//! grow the gateway's memory without end. Each queue's size and what happens when it is
//! full are stated here, once (see `docs/turns.md`, "Queues").

/// Inputs waiting for one conversation's channel to take them (the channel takes them
/// while a turn runs, too, so this fills only while it is busy elsewhere: opening a
/// session, delivering a turn's last edits through an outage).
///
/// Full: a message is refused with a notice in the room and settled (nothing runs it later);
/// a reaction, an edit or a `!status` question is dropped with a warning in the log.
pub const CHANNEL_INPUTS: usize = 256;

/// Updates of one session waiting for its channel (read during a turn and between turns).
///
/// Full: the agent sends faster than the room takes its updates. The update is dropped and
/// counted; the channel gets the count as soon as there is room again and says in the room
/// that what it shows may be incomplete. The agent is never blocked: its other sessions and
/// its answers to requests flow on.
pub const SESSION_UPDATES: usize = 4_096;

/// Requests from the channels waiting for the agent connection's task, which only starts
/// each one and goes back for the next.
///
/// Full: the channel waits (it is waiting for the answer anyway).
pub const AGENT_REQUESTS: usize = 64;

/// Finished answers waiting for the gateway to hand them to the agents they address.
///
/// Full: the answering channel waits (handing off never waits for a channel: its inputs
/// are offered with the policy of [`CHANNEL_INPUTS`]).
pub const HANDOFFS: usize = 64;

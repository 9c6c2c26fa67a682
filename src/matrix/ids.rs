//! The Matrix SDK's typed IDs and ours, converted in one place. An ID the SDK hands us was
//! parsed by it, so it becomes ours as it is; one of ours is parsed by the SDK before a
//! request, and one it refuses is a permanent failure of that request.

use matrix_sdk::ruma;

use crate::core::chat::ChatError;
use crate::model::ids::{EventId, RoomId, UserId};

/// An SDK ID, as the core names it.
pub trait Ours {
    /// Our ID type for it.
    type Id;
    /// The same ID, ours.
    fn ours(&self) -> Self::Id;
}

impl Ours for ruma::RoomId {
    type Id = RoomId;
    fn ours(&self) -> RoomId {
        RoomId::new(self.as_str())
    }
}

impl Ours for ruma::EventId {
    type Id = EventId;
    fn ours(&self) -> EventId {
        EventId::new(self.as_str())
    }
}

impl Ours for ruma::UserId {
    type Id = UserId;
    fn ours(&self) -> UserId {
        UserId::new(self.as_str())
    }
}

/// `id` as the SDK's room ID.
pub fn sdk_room(id: &RoomId) -> Result<ruma::OwnedRoomId, ChatError> {
    ruma::OwnedRoomId::try_from(id.as_str())
        .map_err(|e| ChatError::Permanent(format!("bad room ID {id}: {e}").into()))
}

/// `id` as the SDK's event ID.
pub fn sdk_event(id: &EventId) -> Result<ruma::OwnedEventId, ChatError> {
    ruma::OwnedEventId::try_from(id.as_str())
        .map_err(|e| ChatError::Permanent(format!("bad event ID {id}: {e}").into()))
}

/// `id` as the SDK's user ID.
pub fn sdk_user(id: &UserId) -> Result<ruma::OwnedUserId, ChatError> {
    ruma::OwnedUserId::try_from(id.as_str())
        .map_err(|e| ChatError::Permanent(format!("bad user ID {id}: {e}").into()))
}

//! Files in and out as an agent's Matrix user: fetching what people send (plain or
//! encrypted, through matrix-sdk's media API) and uploading what agents post (encrypted in
//! encrypted rooms), within the homeserver's own upload limit.

use std::io::Cursor;

use matrix_sdk::Client;
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::room::Room;
use matrix_sdk::ruma::UInt;
use matrix_sdk::ruma::events::room::message::{
    FileInfo, FileMessageEventContent, ImageMessageEventContent, MessageType,
};
use matrix_sdk::ruma::events::room::{ImageInfo, MediaSource};

use super::errors::classify;
use crate::core::chat::ChatError;
use crate::model::OutMessage;
use crate::model::media::{MediaKind, OutAttachment};

/// The bytes of the file `source` names (a media source as [`super::inbound`] wrote it);
/// an encrypted file is decrypted.
pub(super) async fn download(client: &Client, source: &str) -> Result<Vec<u8>, ChatError> {
    let source: MediaSource = serde_json::from_str(source).map_err(|e| {
        ChatError::Permanent(format!("the file's source cannot be read: {e}").into())
    })?;
    let request = MediaRequestParameters {
        source,
        format: MediaFormat::File,
    };
    client
        .media()
        .get_media_content(&request, false)
        .await
        .map_err(classify)
}

/// Uploads `file` for `room` (encrypted when the room is) and returns where it is.
pub(super) async fn upload(
    client: &Client,
    room: &Room,
    file: &OutAttachment,
) -> Result<MediaSource, ChatError> {
    if let Ok(max) = client.load_or_fetch_max_upload_size().await
        && file.data.len() as u64 > u64::from(max)
    {
        return Err(ChatError::Permanent(
            format!(
                "{} is {} bytes, more than the homeserver takes ({max} bytes)",
                file.name,
                file.data.len()
            )
            .into(),
        ));
    }
    let encrypted = match room.latest_encryption_state().await {
        Ok(state) => state.is_encrypted(),
        // Unknown: encrypting is never wrong.
        Err(_) => true,
    };
    if encrypted {
        let mut reader = Cursor::new(&file.data[..]);
        let encrypted = client
            .upload_encrypted_file(&mut reader)
            .await
            .map_err(classify)?;
        return Ok(MediaSource::Encrypted(Box::new(encrypted)));
    }
    let mime: mime_guess::mime::Mime = file
        .mimetype
        .parse()
        .unwrap_or(mime_guess::mime::APPLICATION_OCTET_STREAM);
    let response = client
        .media()
        .upload(&mime, file.data.to_vec(), None)
        .await
        .map_err(classify)?;
    Ok(MediaSource::Plain(response.content_uri))
}

/// The message type of `msg` carrying `file`, uploaded to `source`: a picture or a file, its
/// body a caption when it differs from the file name.
pub(super) fn message_type(
    msg: &OutMessage,
    file: &OutAttachment,
    source: MediaSource,
) -> MessageType {
    let size = UInt::try_from(file.data.len() as u64).ok();
    let filename = (msg.body != file.name).then(|| file.name.clone());
    match file.kind {
        MediaKind::Image => {
            let mut info = ImageInfo::new();
            info.mimetype = Some(file.mimetype.clone());
            info.size = size;
            let mut content = ImageMessageEventContent::new(msg.body.clone(), source);
            content.filename = filename;
            content.info = Some(Box::new(info));
            MessageType::Image(content)
        }
        _ => {
            let mut info = FileInfo::new();
            info.mimetype = Some(file.mimetype.clone());
            info.size = size;
            let mut content = FileMessageEventContent::new(msg.body.clone(), source);
            content.filename = filename;
            content.info = Some(Box::new(info));
            MessageType::File(content)
        }
    }
}

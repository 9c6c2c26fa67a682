//! One place that decides whether a Matrix failure is worth retrying.

use std::time::Duration;

use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};

use crate::core::chat::ChatError;

/// Used when the server rate-limits without saying for how long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Classifies a matrix-sdk error: rate limit, transient (network, 5xx) or permanent.
pub fn classify(e: &matrix_sdk::Error) -> ChatError {
    if let Some(ErrorKind::LimitExceeded(data)) = e.client_api_error_kind() {
        let retry_after = match data.retry_after {
            Some(RetryAfter::Delay(d)) => d,
            Some(RetryAfter::DateTime(t)) => t
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default(),
            None => DEFAULT_RETRY_AFTER,
        };
        return ChatError::RateLimited { retry_after };
    }
    let text = e.to_string();
    if let matrix_sdk::Error::Http(http) = e {
        if let Some(api) = http.as_client_api_error() {
            if api.status_code.is_server_error() {
                return ChatError::Transient(text);
            }
            return ChatError::Permanent(text);
        }
        // Network errors, timeouts, bad gateway pages: all worth another try.
        return ChatError::Transient(text);
    }
    ChatError::Permanent(text)
}

/// Whether a sync error means our access token is no longer valid.
pub fn is_unknown_token(e: &matrix_sdk::Error) -> bool {
    matches!(e.client_api_error_kind(), Some(ErrorKind::UnknownToken(_)))
}

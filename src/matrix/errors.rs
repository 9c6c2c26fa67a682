//! One place that decides whether a Matrix failure is worth retrying.

use std::time::Duration;

use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};

use crate::core::chat::ChatError;
use crate::model::errors::Cause;

/// Used when the server rate-limits without saying for how long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Classifies a matrix-sdk error: rate limit, transient (network, 5xx) or permanent.
pub fn classify(e: matrix_sdk::Error) -> ChatError {
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
    let transient = match &e {
        matrix_sdk::Error::Http(http) => match http.as_client_api_error() {
            Some(api) => api.status_code.is_server_error(),
            // Network errors, timeouts, bad gateway pages: all worth another try.
            None => true,
        },
        _ => false,
    };
    if transient {
        ChatError::Transient(Cause::new(e))
    } else {
        ChatError::Permanent(Cause::new(e))
    }
}

/// Whether a sync error means our access token is no longer valid.
pub fn is_unknown_token(e: &matrix_sdk::Error) -> bool {
    matches!(e.client_api_error_kind(), Some(ErrorKind::UnknownToken(_)))
}

//! Logging an agent's Matrix user in (or restoring its session), with a persistent store so
//! a restart reuses the same device and its encryption keys.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::config::RequestConfig;
use matrix_sdk::encryption::{BackupDownloadStrategy, EncryptionSettings};
use matrix_sdk::{Client, ClientBuildError};

use crate::config::SignIn;

use super::late_keys::LateKeys;
use super::outbound::MatrixChat;
use super::sender_proof::SenderTrust;
use crate::config::AgentConfig;
use crate::core::chat::ChatPort;
use crate::model::Secret;
use crate::model::errors::Cause;
use crate::model::errors::Chain;
use crate::model::ids::{AgentId, UserId};

/// Why a store that the configured passphrase does not open cannot be used, and what to do.
const WRONG_PASSPHRASE: &str = "cannot open the store with the configured passphrase; a store \
     made without it, or with another, must be moved away (the agent then logs in again as a \
     new device)";

/// Failures of the Matrix side that stop an agent's Matrix user.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The store folder or session file could not be used.
    #[error("Matrix state for {agent} at {path}: {cause}")]
    State {
        /// Agent ID.
        agent: String,
        /// The path involved.
        path: PathBuf,
        /// What went wrong, whole.
        #[source]
        cause: Cause,
    },
    /// The homeserver refused the login (wrong password, deactivated account…).
    #[error("login of {user} refused by the homeserver: {cause}")]
    LoginRefused {
        /// The Matrix user.
        user: UserId,
        /// The server's answer, whole.
        #[source]
        cause: Cause,
    },
    /// The homeserver no longer accepts our access token.
    #[error(
        "the homeserver rejected the access token of {user} (logged out or deactivated); \
         delete {session_file} to log in again with the password"
    )]
    TokenRejected {
        /// The Matrix user.
        user: UserId,
        /// The saved session to delete.
        session_file: PathBuf,
    },
    /// The homeserver refused the access token the config gives (`access_token_file`).
    #[error(
        "the homeserver refused the access token in {file} for {user}: {cause}; issue a new \
         one for its device (with the Matrix Authentication Service: `mas-cli manage \
         issue-compatibility-token`) and write it there"
    )]
    IssuedTokenRefused {
        /// The Matrix user.
        user: UserId,
        /// The file the token was read from.
        file: PathBuf,
        /// The server's answer, whole.
        #[source]
        cause: Cause,
    },
    /// Any other client failure.
    #[error("Matrix client error for {user}: {cause}")]
    Client {
        /// The Matrix user.
        user: UserId,
        /// What went wrong, whole.
        #[source]
        cause: Cause,
    },
}

/// One agent's Matrix user, logged in.
#[derive(Clone)]
pub struct MatrixAgent {
    /// The SDK client.
    pub(super) client: Client,
    /// Agent ID.
    pub(super) agent_id: AgentId,
    /// Matrix user ID.
    pub(super) user_id: UserId,
    /// Where the session is saved (named in errors).
    pub(super) session_file: PathBuf,
    /// How much proof of their sender encrypted events need.
    pub(super) trust: SenderTrust,
    /// The messages waiting for their room keys.
    pub(super) late_keys: LateKeys,
    /// Where its recovery key is kept (`None`: no key backup or recovery).
    pub(super) recovery_key_file: Option<PathBuf>,
}

/// What every agent's Matrix user shares: how it protects its keys and whom it believes.
#[derive(Debug, Clone, Default)]
pub struct MatrixSecurity {
    /// Encrypts the store (end-to-end keys) at rest; `None`: not encrypted.
    pub store_passphrase: Option<Secret>,
    /// Refuse encrypted events from devices their owner has not cross-signed.
    pub require_cross_signed: bool,
    /// Refuse them also from identities the agent's own has not verified.
    pub require_verified_identity: bool,
}

/// The agent's Matrix client, its state in `store` (encrypted with `passphrase`, if any).
async fn build_client(
    homeserver: &str,
    store: &Path,
    passphrase: Option<&str>,
) -> Result<Client, ClientBuildError> {
    Client::builder()
        .homeserver_url(homeserver)
        .sqlite_store(store, passphrase)
        .request_config(
            RequestConfig::new()
                .retry_limit(3)
                .timeout(Duration::from_secs(60)),
        )
        // Sign the agent's device with its own cross-signing identity: clients that only
        // share room keys with signed devices (Element's "exclude insecure devices") then
        // still let the agent read encrypted rooms.
        // With recovery, a message whose room key this device lacks is looked up in the key
        // backup.
        .with_encryption_settings(EncryptionSettings {
            auto_enable_cross_signing: true,
            backup_download_strategy: BackupDownloadStrategy::AfterDecryptionFailure,
            ..Default::default()
        })
        .build()
        .await
}

impl MatrixAgent {
    /// Logs in `agent`'s Matrix user, restoring the saved session when there is one. Waits
    /// (with back-off) while the homeserver cannot be reached; fails at once when the login
    /// is refused.
    pub async fn connect(
        homeserver: &str,
        state_dir: &Path,
        agent: &AgentConfig,
        security: &MatrixSecurity,
    ) -> Result<Self, MatrixError> {
        let dir = state_dir.join("matrix").join(&agent.id);
        let state_err = |path: &Path, cause: Cause| MatrixError::State {
            agent: agent.id.clone(),
            path: path.to_owned(),
            cause,
        };
        std::fs::create_dir_all(&dir).map_err(|e| state_err(&dir, Cause::new(e)))?;
        let session_file = dir.join("session.json");
        let user = agent.user_id();
        let client_err = |cause: Cause| MatrixError::Client {
            user: user.clone(),
            cause,
        };

        let store = dir.join("store");
        let passphrase = security.store_passphrase.as_ref().map(Secret::expose);
        let client = build_client(homeserver, &store, passphrase)
            .await
            .map_err(|e| match passphrase {
                // A store made without the passphrase (or with another) cannot be opened.
                Some(_) => state_err(&store, format!("{WRONG_PASSPHRASE} ({e})").into()),
                None => client_err(Cause::new(e)),
            })?;

        let sign_in = (agent.matrix.sign_in()).map_err(|e| state_err(&session_file, e.into()))?;
        if let SignIn::Token {
            token,
            device_id,
            file,
        } = sign_in
        {
            sign_in_by_token(&client, &user, &token, &device_id, &file).await?;
            tracing::info!(agent = %agent.id, user = %user, device = %device_id, "signed in with the configured access token");
        } else if session_file.exists() {
            let text = std::fs::read_to_string(&session_file)
                .map_err(|e| state_err(&session_file, Cause::new(e)))?;
            let session: MatrixSession = serde_json::from_str(&text)
                .map_err(|e| state_err(&session_file, format!("unreadable: {e}").into()))?;
            client
                .restore_session(session)
                .await
                .map_err(|e| client_err(Cause::new(e)))?;
            tracing::info!(agent = %agent.id, user = %user, "Matrix session restored");
        } else if let SignIn::Password(password) = sign_in {
            login_with_retry(&client, &user, &password, &agent.display_name).await?;
            let session = client
                .matrix_auth()
                .session()
                .ok_or_else(|| client_err("no session after login".into()))?;
            crate::state_dir::write_private(
                &session_file,
                &serde_json::to_string(&session).expect("session serialises"),
            )
            .map_err(|e| state_err(&session_file, Cause::new(e)))?;
            tracing::info!(agent = %agent.id, user = %user, "logged in; session saved");
        }

        let me = Self {
            client,
            agent_id: agent.agent_id(),
            user_id: user,
            session_file,
            trust: SenderTrust {
                require_cross_signed: security.require_cross_signed
                    || security.require_verified_identity,
                require_verified_identity: security.require_verified_identity,
            },
            late_keys: LateKeys::default(),
            recovery_key_file: agent.matrix.recovery_key_file.clone(),
        };
        me.set_display_name(&agent.display_name).await;
        Ok(me)
    }

    /// The chat port through which the core acts as this user.
    pub fn chat(&self) -> Arc<dyn ChatPort> {
        Arc::new(MatrixChat::new(
            self.client.clone(),
            &self.agent_id,
            self.trust,
        ))
    }

    async fn set_display_name(&self, name: &str) {
        let account = self.client.account();
        match account.get_display_name().await {
            Ok(Some(current)) if current == name => {}
            _ => {
                if let Err(e) = account.set_display_name(Some(name)).await {
                    tracing::warn!(agent = %self.agent_id, error = %Chain(&e), "could not set the display name");
                }
            }
        }
    }
}

/// Whether the homeserver takes the access token `agent`'s config gives, for
/// `sidekicks check`: `Ok(None)` for an agent that signs in with a password (nothing asked),
/// `Ok(Some(device))` when it does, else why not. One request (`whoami`), no state kept.
pub async fn check_token(homeserver: &str, agent: &AgentConfig) -> Result<Option<String>, String> {
    let Ok(SignIn::Token {
        token,
        device_id,
        file,
    }) = agent.matrix.sign_in()
    else {
        return Ok(None);
    };
    let client = Client::builder()
        .homeserver_url(homeserver)
        .request_config(
            RequestConfig::new()
                .retry_limit(1)
                .timeout(Duration::from_secs(20)),
        )
        .build()
        .await
        .map_err(|e| e.to_string())?;
    let user = agent.user_id();
    let signed = tokio::time::timeout(
        Duration::from_secs(30),
        sign_in_by_token(&client, &user, &token, &device_id, &file),
    )
    .await;
    match signed {
        Ok(Ok(())) => Ok(Some(device_id)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("the homeserver {homeserver} did not answer")),
    }
}

/// Signs `user` in with an access token the homeserver issued for `device_id` (read from
/// `file`), and checks with the homeserver that it is the user's and the device's. Waits
/// (with back-off) while the homeserver cannot be reached; fails at once when the token is
/// refused. Nothing of the token is logged.
async fn sign_in_by_token(
    client: &Client,
    user: &UserId,
    token: &Secret,
    device_id: &str,
    file: &Path,
) -> Result<(), MatrixError> {
    let refused = |cause: Cause| MatrixError::IssuedTokenRefused {
        user: user.clone(),
        file: file.to_owned(),
        cause,
    };
    let user_id = matrix_sdk::ruma::OwnedUserId::try_from(user.as_str())
        .map_err(|e| refused(Cause::new(e)))?;
    let session = MatrixSession {
        meta: matrix_sdk::SessionMeta {
            user_id: user_id.clone(),
            device_id: device_id.into(),
        },
        tokens: matrix_sdk::authentication::SessionTokens {
            access_token: token.expose().to_owned(),
            refresh_token: None,
        },
    };
    client
        .restore_session(session)
        .await
        .map_err(|e| refused(Cause::new(e)))?;
    let mut delay = Duration::from_secs(1);
    loop {
        match client.whoami().await {
            Ok(me)
                if me.user_id == user_id
                    && me
                        .device_id
                        .as_deref()
                        .is_none_or(|d| d.as_str() == device_id) =>
            {
                return Ok(());
            }
            Ok(me) => {
                let whose = format!(
                    "it is {}'s, device {}",
                    me.user_id,
                    me.device_id.as_ref().map_or("unknown", |d| d.as_str())
                );
                return Err(refused(whose.into()));
            }
            Err(e) => match super::errors::classify(e.into()) {
                crate::core::chat::ChatError::Permanent(cause) => return Err(refused(cause)),
                other => {
                    tracing::warn!(%user, error = %other, retry_in = ?delay, "homeserver unreachable; retrying the sign-in");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(60));
                }
            },
        }
    }
}

async fn login_with_retry(
    client: &Client,
    user: &UserId,
    password: &Secret,
    display_name: &str,
) -> Result<(), MatrixError> {
    let mut delay = Duration::from_secs(1);
    loop {
        let result = client
            .matrix_auth()
            .login_username(user.as_str(), password.expose())
            .initial_device_display_name(&format!("Sidekicks: {display_name}"))
            .await;
        match result {
            Ok(_) => return Ok(()),
            Err(e) => match super::errors::classify(e) {
                crate::core::chat::ChatError::Permanent(cause) => {
                    return Err(MatrixError::LoginRefused {
                        user: user.clone(),
                        cause,
                    });
                }
                other => {
                    tracing::warn!(%user, error = %other, retry_in = ?delay, "homeserver unreachable; retrying login");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(60));
                }
            },
        }
    }
}

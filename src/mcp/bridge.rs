//! `sidekicks mcp-stdio`: the command an agent runs to reach its session's room tools over
//! stdio. It connects to the gateway on loopback, or through a socket file (`unix:<path>`)
//! for an agent without network (the address and token are in its environment, as the
//! session was given them), sends the token, then passes bytes both ways until either side
//! ends. It knows nothing of MCP: the gateway serves the protocol.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use super::{ADDRESS_VAR, TOKEN_VAR};

/// Why the command could not connect its agent to the gateway.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// A variable the session's MCP server entry sets is missing.
    #[error("{0} is not set: this command is run by an agent, as its session was told to")]
    Missing(&'static str),
    /// The gateway could not be reached, or the connection broke.
    #[error("the gateway at {address} cannot be reached: {source}")]
    Unreachable {
        /// Where it was looked for.
        address: String,
        /// What failed.
        source: std::io::Error,
    },
}

/// Passes stdin and stdout through to the gateway until either side ends.
pub async fn run() -> Result<(), BridgeError> {
    let address = std::env::var(ADDRESS_VAR).map_err(|_| BridgeError::Missing(ADDRESS_VAR))?;
    let token = std::env::var(TOKEN_VAR).map_err(|_| BridgeError::Missing(TOKEN_VAR))?;
    let unreachable = |source| BridgeError::Unreachable {
        address: address.clone(),
        source,
    };
    match address.strip_prefix("unix:") {
        Some(path) => {
            let stream = UnixStream::connect(path).await.map_err(unreachable)?;
            let (read, write) = stream.into_split();
            pass_through(read, write, &token).await.map_err(unreachable)
        }
        None => {
            let stream = TcpStream::connect(&address).await.map_err(unreachable)?;
            let (read, write) = stream.into_split();
            pass_through(read, write, &token).await.map_err(unreachable)
        }
    }
}

/// Sends the token, then passes stdin and stdout through until either side ends.
async fn pass_through<R, W>(
    mut from_gateway: R,
    mut to_gateway: W,
    token: &str,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    to_gateway
        .write_all(format!("{token}\n").as_bytes())
        .await?;
    let upstream = async {
        tokio::io::copy(&mut tokio::io::stdin(), &mut to_gateway).await?;
        to_gateway.shutdown().await
    };
    let downstream = async {
        let mut stdout = tokio::io::stdout();
        tokio::io::copy(&mut from_gateway, &mut stdout).await?;
        stdout.flush().await
    };
    // The gateway ending the connection (the session ended) ends the command; the agent
    // closing stdin ends it once the gateway has answered what it was sent.
    tokio::pin!(downstream);
    tokio::select! {
        done = &mut downstream => done,
        sent = upstream => match sent {
            Ok(()) => downstream.await,
            Err(e) => Err(e),
        },
    }
}

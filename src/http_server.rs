//! Serving on a local listener until stopped: taking connections (a failed accept, such as
//! too many open files, is logged and tried again after a pause instead of spinning), and
//! answering HTTP/1 requests on them, within [`Limits`] so that idle or slow connections
//! cannot use up the gateway's file descriptors. Used by the room tools (`crate::mcp`) and
//! by the metrics and health endpoints (`crate::app`).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// How long to wait after a failed accept before the next.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// What one listener lets its clients hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; one more is closed as soon as it is taken (and logged),
    /// so the gateway's other files never run short because of this listener.
    pub connections: usize,
    /// How long a client may take to send a request's headers, on a new connection or
    /// between requests on a kept one; then the connection is closed.
    pub header_timeout: Duration,
}

impl Default for Limits {
    /// 1,024 connections (the room tools see one or two per agent session, and a gateway
    /// holds hundreds of rooms), 10 s for the headers.
    fn default() -> Self {
        Self {
            connections: 1024,
            header_timeout: Duration::from_secs(10),
        }
    }
}

/// Lets at most so many connections be open at once, and says so in the log once each time
/// it is full.
#[derive(Debug)]
pub struct Gate {
    /// One permit per connection that may be open.
    open: Arc<Semaphore>,
    /// How many.
    limit: usize,
    /// Whether the last connection was refused: the log says it once per time it fills.
    full: std::sync::atomic::AtomicBool,
    /// The server, in the log.
    what: &'static str,
}

impl Gate {
    /// A gate for `limit` connections of the server `what`.
    pub fn new(limit: usize, what: &'static str) -> Self {
        Self {
            open: Arc::new(Semaphore::new(limit)),
            limit,
            full: false.into(),
            what,
        }
    }

    /// A permit for one more connection, held while it is open; `None` when full (close it).
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        use std::sync::atomic::Ordering;
        let permit = self.open.clone().try_acquire_owned().ok();
        let was_full = self.full.swap(permit.is_none(), Ordering::Relaxed);
        if permit.is_none() && !was_full {
            tracing::warn!(
                what = self.what,
                limit = self.limit,
                "too many connections open: new ones are closed until some end"
            );
        }
        permit
    }
}

/// A listener connections are taken from: on a port, or on a socket file.
pub trait Accept {
    /// One connection.
    type Stream;
    /// The next connection, or why none could be taken.
    fn accept_one(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
}

impl Accept for TcpListener {
    type Stream = TcpStream;
    async fn accept_one(&self) -> std::io::Result<TcpStream> {
        self.accept().await.map(|(stream, _)| stream)
    }
}

impl Accept for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn accept_one(&self) -> std::io::Result<tokio::net::UnixStream> {
        self.accept().await.map(|(stream, _)| stream)
    }
}

/// The next connection to `listener`, or `None` once `stopped`. `what` names the server in
/// the log.
pub async fn next_connection<L: Accept>(
    listener: &L,
    stopped: &CancellationToken,
    what: &str,
) -> Option<L::Stream> {
    loop {
        tokio::select! {
            _ = stopped.cancelled() => return None,
            accepted = listener.accept_one() => match accepted {
                Ok(stream) => return Some(stream),
                Err(e) => {
                    tracing::warn!(error = %e, what, "could not accept a connection");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
            },
        }
    }
}

/// Answers HTTP/1 requests on `listener` with `answer` until `stopped`, which also cuts the
/// connections still open, within `limits`. `what` names the server in the log.
pub async fn serve<F, Fut, B>(
    listener: TcpListener,
    what: &'static str,
    limits: Limits,
    stopped: CancellationToken,
    answer: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let gate = Gate::new(limits.connections, what);
    while let Some(stream) = next_connection(&listener, &stopped, what).await {
        let Some(permit) = gate.admit() else {
            drop(stream);
            continue;
        };
        let answer = answer.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let answered = answer(request);
            async move { Ok::<_, Infallible>(answered.await) }
        });
        let stopped = stopped.clone();
        tokio::spawn(async move {
            let _open = permit;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = stopped.cancelled() => {}
                served = connection => if let Err(e) = served {
                    tracing::debug!(error = %e, what, "a connection failed");
                },
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A listener answering `ok` within `limits`, and its address.
    async fn serving(limits: Limits) -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let stopped = CancellationToken::new();
        tokio::spawn(serve(
            listener,
            "test",
            limits,
            stopped.clone(),
            |_| async {
                Response::new(http_body_util::Full::new(hyper::body::Bytes::from_static(
                    b"ok",
                )))
            },
        ));
        (address, stopped)
    }

    /// Whether the server closes `stream` (end of file, or reset) within `within`.
    async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(within, stream.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    /// One request on a new connection, and whether it was answered.
    async fn answered(address: std::net::SocketAddr) -> bool {
        let Ok(mut stream) = TcpStream::connect(address).await else {
            return false;
        };
        let request = b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        if stream.write_all(request).await.is_err() {
            return false;
        }
        let mut reply = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut reply));
        matches!(read.await, Ok(Ok(_))) && reply.starts_with(b"HTTP/1.1 200")
    }

    #[tokio::test]
    async fn a_connection_that_sends_no_headers_is_closed_after_the_timeout() {
        let limits = Limits {
            connections: 8,
            header_timeout: Duration::from_millis(300),
        };
        let (address, _stopped) = serving(limits).await;
        let mut silent = TcpStream::connect(address).await.unwrap();
        let mut slow = TcpStream::connect(address).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nhost:").await.unwrap();
        assert!(closed(&mut silent, Duration::from_secs(5)).await);
        assert!(closed(&mut slow, Duration::from_secs(5)).await);
        // A kept connection idle after its answer goes the same way.
        let mut kept = TcpStream::connect(address).await.unwrap();
        kept.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut reply = [0u8; 256];
        assert!(kept.read(&mut reply).await.unwrap() > 0);
        assert!(closed(&mut kept, Duration::from_secs(5)).await);
    }

    #[tokio::test]
    async fn connections_beyond_the_cap_are_closed_and_served_again_once_some_end() {
        let limits = Limits {
            connections: 4,
            header_timeout: Duration::from_secs(60),
        };
        let (address, _stopped) = serving(limits).await;
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(TcpStream::connect(address).await.unwrap());
        }
        // Until the four are taken, the next one may still wait in the queue: retry.
        let mut refused = false;
        for _ in 0..50 {
            let mut extra = TcpStream::connect(address).await.unwrap();
            if closed(&mut extra, Duration::from_millis(200)).await {
                refused = true;
                break;
            }
        }
        assert!(refused, "a fifth connection is closed");
        assert!(
            !answered(address).await,
            "no request is answered while full"
        );
        held.clear();
        let mut served = false;
        for _ in 0..50 {
            if answered(address).await {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(served, "answered again once the held connections ended");
    }
}

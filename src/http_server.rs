//! Serving on a local listener until stopped: taking connections (a failed accept, such as
//! too many open files, is logged and tried again after a pause instead of spinning), and
//! answering HTTP/1 requests on them. Used by the room tools (`crate::mcp`) and by the
//! metrics and health endpoints (`crate::app`).

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How long to wait after a failed accept before the next.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The next connection to `listener`, or `None` once `stopped`. `what` names the server in
/// the log.
pub async fn next_connection(
    listener: &TcpListener,
    stopped: &CancellationToken,
    what: &str,
) -> Option<TcpStream> {
    loop {
        tokio::select! {
            _ = stopped.cancelled() => return None,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => return Some(stream),
                Err(e) => {
                    tracing::warn!(error = %e, what, "could not accept a connection");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
            },
        }
    }
}

/// Answers HTTP/1 requests on `listener` with `answer` until `stopped`, which also cuts the
/// connections still open. `what` names the server in the log.
pub async fn serve<F, Fut, B>(
    listener: TcpListener,
    what: &'static str,
    stopped: CancellationToken,
    answer: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    while let Some(stream) = next_connection(&listener, &stopped, what).await {
        let answer = answer.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let answered = answer(request);
            async move { Ok::<_, Infallible>(answered.await) }
        });
        let stopped = stopped.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
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

//! The accept loop of every server of ours: the attach proxy, the demo runtime, and an agent
//! session's hook socket.
//!
//! Three rules that each of them needs, and that are easy to get wrong once:
//! - When `accept` fails (out of file descriptors, say), the connection stays queued, so trying
//!   again at once would spin a core until a descriptor frees. The loop waits
//!   [`ACCEPT_ERROR_BACKOFF`] first.
//! - Each connection's task is kept, and finished ones are reaped as the loop goes, so that
//!   stopping the server really closes its connections and the set does not grow with each one.
//! - Stopping stops accepting at once, gives open connections a bounded time to finish, then
//!   aborts the rest.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long the loop waits after `accept` fails before it tries again.
pub const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);

/// A listening socket: TCP or Unix.
pub trait Listener: Send {
    /// A connection it accepted.
    type Stream: Send + 'static;

    /// The next connection.
    fn accept_stream(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;

    async fn accept_stream(&self) -> io::Result<Self::Stream> {
        self.accept().await.map(|(stream, _peer)| stream)
    }
}

impl Listener for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;

    async fn accept_stream(&self) -> io::Result<Self::Stream> {
        self.accept().await.map(|(stream, _peer)| stream)
    }
}

/// Accepts connections on `listener` until `stop` is cancelled.
///
/// `serve` gets each connection and how many are open already, and returns the task that
/// serves it, or `None` to close it unread. Once `stop` is cancelled the listener is closed,
/// open connections get `drain` to finish (a connection's own task should wind down when it sees
/// `stop`), and whatever is left is aborted. `server` names the server in the log.
pub async fn run<L, S, F>(
    server: &'static str,
    listener: L,
    stop: CancellationToken,
    drain: Duration,
    mut serve: S,
) where
    L: Listener,
    S: FnMut(L::Stream, usize) -> Option<F>,
    F: Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept_stream() => match accepted {
                Ok(stream) => {
                    if let Some(task) = serve(stream, connections.len()) {
                        connections.spawn(task);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, server, "could not accept a connection");
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(ACCEPT_ERROR_BACKOFF) => {}
                    }
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(drain, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A listener whose every accept fails, as it does out of file descriptors.
    struct Failing(Arc<AtomicUsize>);

    impl Listener for Failing {
        type Stream = TcpStream;

        async fn accept_stream(&self) -> io::Result<TcpStream> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Err(io::Error::from_raw_os_error(24))
        }
    }

    // Threads of its own, so that a loop that spins fails the test instead of starving it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_accept_is_retried_after_a_pause_not_at_once() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let serving = tokio::spawn(run(
            "test",
            Failing(attempts.clone()),
            stop.clone(),
            Duration::ZERO,
            |_stream, _open| None::<std::future::Ready<()>>,
        ));
        tokio::time::sleep(ACCEPT_ERROR_BACKOFF * 5).await;
        stop.cancel();
        serving.await.unwrap();
        let attempts = attempts.load(Ordering::Relaxed);
        assert!(
            (1..=6).contains(&attempts),
            "{attempts} accepts in 5 pauses"
        );
    }

    #[tokio::test]
    async fn serves_each_connection_and_closes_refused_ones_unread() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let mut accepted = 0;
        let serving = tokio::spawn(run("test", listener, stop.clone(), Duration::ZERO, {
            move |mut stream: TcpStream, _open| {
                accepted += 1;
                // Every second connection is refused: dropped, so its peer reads the end.
                (accepted % 2 == 1).then_some(async move {
                    use tokio::io::AsyncWriteExt;
                    let _ = stream.write_all(b"served").await;
                })
            }
        }));
        for expected in [&b"served"[..], b"", b"served"] {
            let mut client = TcpStream::connect(address).await.unwrap();
            let mut read = Vec::new();
            client.read_to_end(&mut read).await.unwrap();
            assert_eq!(read, expected);
        }
        stop.cancel();
        serving.await.unwrap();
    }

    #[tokio::test]
    async fn stopping_closes_the_listener_and_aborts_connections_left_after_the_drain() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let open = Arc::new(AtomicUsize::new(0));
        let serving = tokio::spawn(run(
            "test",
            listener,
            stop.clone(),
            Duration::from_millis(50),
            {
                let open = open.clone();
                move |stream: TcpStream, _open| {
                    let open = open.clone();
                    // A connection that never ends by itself.
                    Some(async move {
                        open.fetch_add(1, Ordering::Relaxed);
                        let _stream = stream;
                        std::future::pending::<()>().await
                    })
                }
            },
        ));
        let mut client = TcpStream::connect(address).await.unwrap();
        while open.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .expect("the loop ends once the drain is over")
            .unwrap();
        let mut rest = Vec::new();
        assert_eq!(client.read_to_end(&mut rest).await.unwrap(), 0, "aborted");
        assert!(
            TcpStream::connect(address).await.is_err(),
            "listener closed"
        );
    }
}

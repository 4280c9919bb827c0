//! Bounded HTTP serving, shared by the agent's endpoint and the central
//! shaper: a connection limit, an idle timeout per connection, a header
//! read timeout and a whole-request timeout, so that clients that open
//! connections and never finish them cannot exhaust the server.
//!
//! * Connections over `max_connections` are closed at once (counted).
//! * A connection on which nothing is read or written for `idle_timeout`
//!   is closed (keep-alive connections left open, stalled clients); one
//!   that sends no byte at all within `header_read_timeout` is closed then.
//! * HTTP/1 request headers must be complete within `header_read_timeout`
//!   (hyper's own timer).
//! * A request (headers to response, body included) must be handled within
//!   `request_timeout`, else the answer is 408 (see [`request_timeout`]).
//! * An HTTP/2 request body that the server answers before reading it all
//!   (413 over the body limit, 401, ...) is read to its end and discarded
//!   after the answer, within bounds, rather than the stream reset while
//!   the client still sends (see [`drain_unread_body`]).
//! * A request head over [`MAX_HEADER_BYTES`] is answered 431 with a JSON
//!   error body (see [`header_limit`]). hyper answers 431 itself, with no
//!   body, only past [`TRANSPORT_HEADER_BYTES`] (where it stops reading),
//!   or past 100 HTTP/1 header lines.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum_server::accept::Accept;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// The bounds of one server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServeLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub request_timeout: Duration,
}

impl ServeLimits {
    /// The agent's endpoint (a few scrapers at most).
    pub const AGENT: ServeLimits = ServeLimits {
        max_connections: 128,
        header_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
    };
}

/// Connection counters (for `/metrics`).
#[derive(Debug, Default)]
pub struct ConnStats {
    open: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    idle_closed: AtomicU64,
}

/// A snapshot of [`ConnStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnCounts {
    pub open: u64,
    pub accepted: u64,
    /// Closed at once because `max_connections` were open.
    pub refused: u64,
    /// Closed after `idle_timeout` without any I/O.
    pub idle_closed: u64,
}

impl ConnStats {
    pub fn counts(&self) -> ConnCounts {
        ConnCounts {
            open: self.open.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            idle_closed: self.idle_closed.load(Ordering::Relaxed),
        }
    }
}

/// An acceptor (innermost: on the TCP stream, before any TLS) that enforces
/// the connection limit and wraps the stream with the idle timeout.
#[derive(Clone, Debug)]
pub struct LimitAcceptor {
    permits: Arc<Semaphore>,
    idle: Duration,
    first_byte: Duration,
    stats: Arc<ConnStats>,
}

impl LimitAcceptor {
    pub fn new(limits: &ServeLimits, stats: Arc<ConnStats>) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            idle: limits.idle_timeout,
            first_byte: limits.header_read_timeout.min(limits.idle_timeout),
            stats,
        }
    }
}

impl<S> Accept<TcpStream, S> for LimitAcceptor {
    type Stream = IdleTimeoutStream<TcpStream>;
    type Service = S;
    type Future = std::future::Ready<io::Result<(Self::Stream, S)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                self.stats.accepted.fetch_add(1, Ordering::Relaxed);
                self.stats.open.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_nodelay(true);
                std::future::ready(Ok((
                    IdleTimeoutStream::new(
                        stream,
                        self.idle,
                        self.first_byte,
                        permit,
                        self.stats.clone(),
                    ),
                    service,
                )))
            }
            Err(_) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("connection limit reached: connection closed");
                // Dropping the stream closes it.
                std::future::ready(Err(io::Error::other("connection limit reached")))
            }
        }
    }
}

/// A stream that fails with `TimedOut` once no byte has moved in either
/// direction for `idle` while the server waits on it, or no byte has come
/// in within `first_byte` of the connection; holds a connection permit
/// until dropped.
#[derive(Debug)]
pub struct IdleTimeoutStream<T> {
    inner: T,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    stats: Arc<ConnStats>,
    _permit: OwnedSemaphorePermit,
}

impl<T> IdleTimeoutStream<T> {
    fn new(
        inner: T,
        idle: Duration,
        first_byte: Duration,
        permit: OwnedSemaphorePermit,
        stats: Arc<ConnStats>,
    ) -> Self {
        Self {
            inner,
            idle,
            deadline: Box::pin(tokio::time::sleep(first_byte)),
            stats,
            _permit: permit,
        }
    }

    fn touch(&mut self) {
        self.deadline.as_mut().reset(Instant::now() + self.idle);
    }

    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.stats.idle_closed.fetch_add(1, Ordering::Relaxed);
                // Fire once per idle period.
                self.touch();
                Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connection idle for too long",
                ))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> Drop for IdleTimeoutStream<T> {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for IdleTimeoutStream<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.touch();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.poll_idle(cx).map(Err),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for IdleTimeoutStream<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(r) => {
                if matches!(r, Ok(n) if n > 0) {
                    this.touch();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.poll_idle(cx).map(Err),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => this.poll_idle(cx).map(Err),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                if matches!(r, Ok(n) if n > 0) {
                    this.touch();
                }
                Poll::Ready(r)
            }
            Poll::Pending => this.poll_idle(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The largest request head answered normally (request line and headers,
/// counted as [`head_bytes`]); a larger one gets 431 from [`header_limit`].
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Where hyper stops reading a request head (its HTTP/1 read buffer, the
/// HTTP/2 header list size), a little above [`MAX_HEADER_BYTES`] so that
/// heads in between reach [`header_limit`] and get its JSON 431: past it,
/// hyper answers 431 without a body (it has no hook for that answer).
pub const TRANSPORT_HEADER_BYTES: usize = MAX_HEADER_BYTES + 16 * 1024;

/// The size of a request head as HTTP/1 writes it: the request line
/// (`METHOD URI HTTP/1.1`), each `name: value` line and the blank line,
/// CRLFs included. The same count for HTTP/2 requests.
pub fn head_bytes(req: &Request) -> usize {
    let line = req.method().as_str().len() + req.uri().to_string().len() + " HTTP/1.1".len() + 3;
    req.headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum::<usize>()
        + line
        + 2
}

/// Middleware: answers 431 with a JSON error body when the request head is
/// over [`MAX_HEADER_BYTES`].
pub async fn header_limit(req: Request, next: Next) -> Response {
    let size = head_bytes(&req);
    if size <= MAX_HEADER_BYTES {
        return next.run(req).await;
    }
    (
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        axum::Json(serde_json::json!({
            "error": "headers_too_large",
            "message": format!(
                "request headers too large: {size} bytes, at most {MAX_HEADER_BYTES}"
            ),
        })),
    )
        .into_response()
}

/// The most an unread HTTP/2 request body is read on, and discarded, after
/// its answer (see [`drain_unread_body`]).
pub const DRAIN_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Middleware (HTTP/2 requests): a request body that the handler drops
/// before its end (a 413 over the body limit, a 401 before the body is
/// read) is read to its end in a task of its own and discarded, up to
/// [`DRAIN_MAX_BYTES`] more and for at most `timeout`.
///
/// Without it, h2 resets the stream (`RST_STREAM(NO_ERROR)`) once the
/// answer is sent, as RFC 9113 section 8.1 allows; clients are told not to
/// discard the answer for it, but some do while they are still sending
/// (curl 7.88 reports "Stream error in the HTTP/2 framing layer" instead of
/// the 413). Past the bounds the stream is reset as before. HTTP/1 is left
/// alone: hyper answers and closes the connection, which clients handle.
pub async fn drain_unread_body(timeout: Duration, mut req: Request, next: Next) -> Response {
    if req.version() == axum::http::Version::HTTP_2 {
        let body = std::mem::take(req.body_mut());
        *req.body_mut() = axum::body::Body::new(DrainOnDrop {
            inner: body,
            ended: false,
            timeout,
        });
    }
    next.run(req).await
}

/// A request body that reads itself to its end when dropped unfinished.
struct DrainOnDrop {
    inner: axum::body::Body,
    /// Its end (or an error) was seen.
    ended: bool,
    timeout: Duration,
}

impl http_body::Body for DrainOnDrop {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None | Some(Err(_)))) {
            this.ended = true;
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        use http_body::Body as _;
        if self.ended || self.inner.is_end_stream() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut body = std::mem::take(&mut self.inner);
        let timeout = self.timeout;
        rt.spawn(async move {
            let drain = async {
                let mut read = 0u64;
                while read <= DRAIN_MAX_BYTES {
                    let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
                    match frame.await {
                        Some(Ok(f)) => {
                            read += f.data_ref().map_or(0, |d| d.len() as u64);
                        }
                        None | Some(Err(_)) => break,
                    }
                }
            };
            // Past the bounds the body is dropped: the stream is reset.
            let _ = tokio::time::timeout(timeout, drain).await;
        });
    }
}

/// Applies the HTTP-level bounds (header read timeout and size; HTTP/2
/// stream cap) to an axum-server.
pub fn configure<A>(server: &mut axum_server::Server<A>, limits: &ServeLimits) {
    let b = server.http_builder();
    b.http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(TRANSPORT_HEADER_BYTES);
    b.http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_concurrent_streams(32)
        .max_header_list_size(TRANSPORT_HEADER_BYTES as u32);
}

/// Middleware: answers 408 when the request (its body included) is not
/// handled within `timeout`.
pub async fn request_timeout(timeout: Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            axum::Json(serde_json::json!({
                "error": "timeout",
                "message": format!("request not completed within {} s", timeout.as_secs_f64()),
            })),
        )
            .into_response(),
    }
}

/// Serves `app` on `listener` (plain HTTP) with `limits` until `shutdown`
/// resolves; then lets requests in flight finish (up to 5 s).
pub async fn serve_plain(
    listener: std::net::TcpListener,
    app: axum::Router,
    limits: ServeLimits,
    stats: Arc<ConnStats>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let handle = axum_server::Handle::new();
    let h = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        h.graceful_shutdown(Some(Duration::from_secs(5)));
    });
    let app = app
        .layer(axum::middleware::from_fn(move |req, next| {
            request_timeout(limits.request_timeout, req, next)
        }))
        .layer(axum::middleware::from_fn(header_limit))
        .layer(axum::middleware::from_fn(move |req, next| {
            drain_unread_body(limits.request_timeout, req, next)
        }));
    let mut server = axum_server::from_tcp(listener)
        .acceptor(LimitAcceptor::new(&limits, stats))
        .handle(handle);
    configure(&mut server, &limits);
    server.serve(app.into_make_service()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    async fn start(limits: ServeLimits) -> (std::net::SocketAddr, Arc<ConnStats>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let stats = Arc::new(ConnStats::default());
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        tokio::spawn(serve_plain(
            l,
            app,
            limits,
            stats.clone(),
            std::future::pending(),
        ));
        (addr, stats)
    }

    fn get(addr: std::net::SocketAddr) -> Option<String> {
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    }

    /// One request with an `x-pad` header of `pad` bytes; the raw answer.
    fn get_padded(addr: std::net::SocketAddr, pad: usize) -> String {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let head = format!(
            "GET / HTTP/1.1\r\nHost: x\r\nx-pad: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(pad)
        );
        s.write_all(head.as_bytes()).expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Request headers over the limit get 431 with a JSON error body (hyper
    /// alone answered 431 with an empty body); just under it, 200.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn headers_over_the_limit_get_a_json_431() {
        let (addr, _) = start(ServeLimits::AGENT).await;
        let (under, over) = tokio::task::spawn_blocking(move || {
            (
                get_padded(addr, MAX_HEADER_BYTES - 200),
                get_padded(addr, MAX_HEADER_BYTES + 4 * 1024),
            )
        })
        .await
        .expect("join");
        assert!(under.starts_with("HTTP/1.1 200"), "{under:.200}");
        assert!(over.starts_with("HTTP/1.1 431"), "{over:.200}");
        let body = over.split("\r\n\r\n").nth(1).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(body).expect("JSON body");
        assert_eq!(v["error"], "headers_too_large", "{v}");
        assert!(
            v["message"].as_str().is_some_and(|m| m.contains("65536")),
            "{v}"
        );
    }

    /// A connection that never sends a byte is closed at the header read
    /// timeout, not held for the (much longer) idle timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_connection_is_closed_at_the_header_timeout() {
        let limits = ServeLimits {
            max_connections: 8,
            header_read_timeout: Duration::from_millis(200),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(5),
        };
        let (addr, stats) = start(limits).await;
        let closed = tokio::task::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            let mut buf = Vec::new();
            match s.read_to_end(&mut buf) {
                Ok(_) => true,
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        })
        .await
        .expect("join");
        assert!(closed, "closed by the server well before the idle timeout");
        assert_eq!(stats.counts().idle_closed, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_and_silent_connections_are_closed_and_the_limit_holds() {
        let limits = ServeLimits {
            max_connections: 8,
            header_read_timeout: Duration::from_millis(400),
            idle_timeout: Duration::from_millis(600),
            request_timeout: Duration::from_secs(5),
        };
        let (addr, stats) = start(limits).await;
        let out = tokio::task::spawn_blocking(move || {
            // 6 silent + 2 half-header connections: 8 = the limit.
            let mut held = Vec::new();
            for i in 0..8 {
                let mut s = std::net::TcpStream::connect(addr).expect("connect");
                if i >= 6 {
                    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
                        .expect("write");
                }
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(200));
            // Over the limit: closed at once, no answer.
            let refused = get(addr).unwrap_or_default();
            // After the timeouts every held connection is closed by the server.
            std::thread::sleep(Duration::from_millis(1200));
            let mut closed = 0;
            for mut s in held {
                s.set_read_timeout(Some(Duration::from_secs(2)))
                    .expect("timeout");
                // Closed by the server: EOF (maybe after an error answer)
                // or a reset; still open: the read times out.
                let mut buf = Vec::new();
                match s.read_to_end(&mut buf) {
                    Ok(_) => closed += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
                    Err(_) => {}
                }
            }
            (refused, closed, get(addr))
        })
        .await
        .expect("join");
        let (refused, closed, after) = out;
        assert!(!refused.contains("200 OK"), "over the limit: {refused:?}");
        assert_eq!(closed, 8);
        assert!(after.unwrap_or_default().contains("200 OK"), "served again");
        let c = stats.counts();
        assert!(c.refused >= 1, "{c:?}");
        assert!(c.idle_closed >= 6, "{c:?}");
    }
}

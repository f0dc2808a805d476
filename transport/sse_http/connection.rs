//! One accepted connection of [`HttpServer`](super::HttpServer)'s listener, served as HTTP/1.1
//! or HTTP/2 on the same port: its first bytes tell them apart (HTTP/2's connection preface,
//! RFC 9113 §3.4, whether the client knew in advance, h2c, or chose `h2` by ALPN over TLS),
//! then they are handed back in front of the rest of the stream to hyper's HTTP/1.1 or HTTP/2
//! connection.
//!
//! The sniffing waits at most [`HttpServerConfig::header_read_timeout`] for bytes that decide:
//! a connection that sends nothing is closed as an idle HTTP/1.1 one is. (hyper-util's auto
//! builder sniffs the same way but without a limit, so an idle connection would be held
//! forever.) A client that is neither is given to HTTP/1.1, which answers it 400.
//!
//! Not here: TLS (the accept loop does the handshake first), what requests mean.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use super::server::HttpServerConfig;

/// HTTP/2's connection preface (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The hyper builders of both protocols, made once per listener from its configuration.
pub(super) struct Builders {
    pub(super) http1: hyper::server::conn::http1::Builder,
    pub(super) http2: Option<hyper::server::conn::http2::Builder<hyper_util::rt::TokioExecutor>>,
    pub(super) sniff_timeout: Option<Duration>,
}

impl Builders {
    pub(super) fn new(config: &HttpServerConfig) -> Builders {
        let mut http1 = hyper::server::conn::http1::Builder::new();
        // Without a timer hyper applies no header read timeout at all.
        http1.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(config.header_read_timeout);
        let http2 = config.http2.then(|| {
            let mut http2 = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
            http2
                .timer(hyper_util::rt::TokioTimer::new())
                .max_concurrent_streams(config.http2_max_concurrent_streams)
                .max_header_list_size(config.http2_max_header_list_size);
            http2
        });
        Builders { http1, http2, sniff_timeout: config.header_read_timeout }
    }
}

/// Whether the connection opens with HTTP/2's preface, and the connection with the bytes read
/// to find out put back in front. `Err` when it ends, fails or says nothing in time.
pub(super) async fn sniff<IO: AsyncRead + Unpin>(
    mut io: IO,
    timeout: Option<Duration>,
) -> io::Result<(bool, Prefixed<IO>)> {
    let mut buf = [0u8; PREFACE.len()];
    let mut filled = 0;
    let read = async {
        loop {
            let n = io.read(&mut buf[filled..]).await?;
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            filled += n;
            if buf[..filled] != PREFACE[..filled] {
                return Ok(false);
            }
            if filled == PREFACE.len() {
                return Ok(true);
            }
        }
    };
    let is_h2 = match timeout {
        Some(limit) => {
            tokio::time::timeout(limit, read).await.map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??
        }
        None => read.await?,
    };
    Ok((is_h2, Prefixed { prefix: buf, start: 0, end: filled, io }))
}

/// A stream with bytes already read from it put back in front.
pub(super) struct Prefixed<IO> {
    prefix: [u8; PREFACE.len()],
    start: usize,
    end: usize,
    io: IO,
}

impl<IO: AsyncRead + Unpin> AsyncRead for Prefixed<IO> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start < this.end {
            let n = (this.end - this.start).min(buf.remaining());
            buf.put_slice(&this.prefix[this.start..this.start + n]);
            this.start += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Prefixed<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn sniffed(input: &'static [u8], chunk: usize) -> (bool, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for part in input.chunks(chunk) {
                client.write_all(part).await.unwrap();
            }
            client
        });
        let (is_h2, mut io) = sniff(server, Some(Duration::from_secs(60))).await.unwrap();
        let client = writer.await.unwrap();
        drop(client);
        let mut all = Vec::new();
        io.read_to_end(&mut all).await.unwrap();
        (is_h2, all)
    }

    #[tokio::test]
    async fn the_preface_is_told_from_http1_at_every_split_and_every_byte_is_given_back() {
        let h2: &'static [u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04";
        let h1: &'static [u8] = b"POST /mcp HTTP/1.1\r\nHost: x\r\n\r\n";
        let short_h1: &'static [u8] = b"GET / HTTP/1.0\r\n\r\n";
        for chunk in 1..=h2.len() {
            assert_eq!(sniffed(h2, chunk).await, (true, h2.to_vec()), "chunk {chunk}");
            assert_eq!(sniffed(h1, chunk).await, (false, h1.to_vec()), "chunk {chunk}");
            assert_eq!(sniffed(short_h1, chunk).await, (false, short_h1.to_vec()), "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn a_connection_that_says_nothing_or_ends_early_is_refused() {
        // The client never writes: whatever the limit, it passes.
        let (_client, server) = tokio::io::duplex(64);
        let error = sniff(server, Some(Duration::from_millis(20))).await.err().unwrap();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"PRI * HT").await.unwrap();
        drop(client);
        let error = sniff(server, Some(Duration::from_secs(30))).await.err().unwrap();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
    }
}

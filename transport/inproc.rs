//! An in-process transport: two ends of a bounded channel pair passing [`Message`] values.
//!
//! Nothing is serialized: a message whose params or result is a typed [`Body`](crate::proto::jsonrpc::Body)
//! arrives as the same Rust value. Use it to embed a server in the same process as its client,
//! and in tests. Each direction holds at most [`Limits::queue_depth`] messages.
//!
//! `recv` serves one waiting task at a time (the connection's reader), as the
//! [`Transport`] contract has it: a second task waiting at the same moment may not be woken.

use std::sync::Mutex;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::{Limits, Transport, TransportError};
use crate::proto::jsonrpc::Message;

/// One end of an in-process pair.
pub struct InprocTransport {
    outgoing: Mutex<Option<mpsc::Sender<Message>>>,
    incoming: Mutex<mpsc::Receiver<Message>>,
}

/// Two connected ends: what one sends, the other receives.
pub fn pair(limits: Limits) -> (InprocTransport, InprocTransport) {
    let depth = limits.queue_depth.max(1);
    let (a_tx, b_rx) = mpsc::channel(depth);
    let (b_tx, a_rx) = mpsc::channel(depth);
    (
        InprocTransport { outgoing: Mutex::new(Some(a_tx)), incoming: Mutex::new(a_rx) },
        InprocTransport { outgoing: Mutex::new(Some(b_tx)), incoming: Mutex::new(b_rx) },
    )
}

impl Transport for InprocTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        // While there is room the message goes in under the lock; only a full queue makes us
        // wait, on a clone of the sender (the lock is never held across an await). The wait is
        // boxed: it is rare, and this future is part of every request's and every answer's
        // (tokio's send future and a second copy of the message would make it 408 bytes, not 96).
        let wait = {
            let outgoing = self.outgoing.lock().expect("sender lock");
            let sender = outgoing.as_ref().ok_or(TransportError::Closed)?;
            match sender.try_send(message) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed(_)) => return Err(TransportError::Closed),
                Err(TrySendError::Full(message)) => {
                    let sender = sender.clone();
                    Box::pin(async move { sender.send(message).await })
                }
            }
        };
        wait.await.map_err(|_| TransportError::Closed)
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        let message = std::future::poll_fn(|cx| self.incoming.lock().expect("receiver lock").poll_recv(cx)).await;
        Ok(message)
    }

    async fn close(&self) -> Result<(), TransportError> {
        // Messages already queued stay in the channel for the peer; it sees the end after them.
        self.outgoing.lock().expect("sender lock").take();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::jsonrpc::{Body, Id, Response};

    #[derive(Clone, serde::Serialize, serde::Deserialize)]
    struct Big {
        text: String,
    }

    #[tokio::test]
    async fn typed_bodies_arrive_unserialized_and_close_is_seen_after_queued_messages() {
        let (a, b) = pair(Limits::default().with_queue_depth(4));
        let text = "y".repeat(1 << 16);
        let body = Body::typed(Big { text: text.clone() });
        a.send(Message::Response(Response { id: Id::Number(1), result: body })).await.unwrap();
        a.close().await.unwrap();
        let Some(Message::Response(r)) = b.recv().await.unwrap() else { panic!("expected a response") };
        assert!(r.result.as_raw().is_none(), "still a Rust value");
        assert_eq!(r.result.into_decoded::<Big>().unwrap().text, text);
        assert!(b.recv().await.unwrap().is_none());
        assert!(matches!(
            a.send(Message::Response(Response { id: Id::Number(2), result: Body::typed(()) })).await,
            Err(TransportError::Closed)
        ));
    }

    #[tokio::test]
    async fn a_full_queue_makes_send_wait() {
        let (a, b) = pair(Limits::default().with_queue_depth(1));
        let msg = || Message::Response(Response { id: Id::Number(1), result: Body::typed(()) });
        a.send(msg()).await.unwrap();
        let second = tokio::time::timeout(std::time::Duration::from_millis(50), a.send(msg())).await;
        assert!(second.is_err(), "the second send waits for room");
        b.recv().await.unwrap();
        a.send(msg()).await.unwrap();
    }

    #[tokio::test]
    async fn a_send_that_waited_for_room_delivers_in_order_and_fails_once_the_peer_is_gone() {
        use crate::transport::task::poll_once;
        let (a, b) = pair(Limits::default().with_queue_depth(1));
        let msg = |n| Message::Response(Response { id: Id::Number(n), result: Body::typed(()) });
        let id = |m: Option<Message>| match m {
            Some(Message::Response(r)) => r.id,
            other => panic!("expected a response, got {other:?}"),
        };
        a.send(msg(1)).await.unwrap();
        let mut second = std::pin::pin!(a.send(msg(2)));
        assert!(poll_once(second.as_mut()).is_pending(), "the queue is full");
        assert_eq!(id(b.recv().await.unwrap()), Id::Number(1));
        second.await.unwrap();
        assert_eq!(id(b.recv().await.unwrap()), Id::Number(2));

        a.send(msg(3)).await.unwrap();
        let mut fourth = std::pin::pin!(a.send(msg(4)));
        assert!(poll_once(fourth.as_mut()).is_pending(), "the queue is full");
        drop(b);
        assert!(matches!(fourth.await, Err(TransportError::Closed)));
    }
}

//! [`BoxTransport`]: any [`Transport`] behind one concrete type.
//!
//! The client, the server's dispatch and the peer under both are generic over their transport,
//! so a program that uses them over three transports gets three copies of all that code. A
//! program that wraps each transport in a `BoxTransport` first gets one copy: `mcp-bridge`
//! does so for its upstream connections (stdio, HTTP, in process) and its downstream sessions
//! (stdio, HTTP, recorded or not). The price is one boxed future per `send`, `recv` and
//! `close` and a virtual call per method, small beside what a message costs to frame and
//! parse; code that uses a single transport keeps calling it directly.
//!
//! [`BoxTransport::downcast_ref`] gives back the transport inside, for what only one kind of
//! transport has (a child's pid and exit status); [`downcast`] does the same for code generic
//! over transports, whether it was given a box or not.
//!
//! Not here: any behaviour of its own. Every method is the wrapped transport's, defaults
//! included.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::Arc;

use super::forward_queries::forward_queries;
use super::principal::Principal;
use super::{Transport, TransportError};
use crate::proto::jsonrpc::{Id, Message};
use crate::proto::mcp_types::Tool;
use crate::proto::version::ProtocolVersion;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Transport`] with its futures boxed, so that it can be a trait object.
trait ErasedTransport: Send + Sync + 'static {
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>>;
    fn send_related<'a>(&'a self, message: Message, related: &'a Id) -> BoxFuture<'a, Result<(), TransportError>>;
    fn is_stateless(&self) -> bool;
    fn outlives_its_input(&self) -> bool;
    fn param_headers(&self, request: &Id) -> Option<Vec<(String, String)>>;
    fn principal(&self, request: &Id) -> Option<Arc<Principal>>;
    #[cfg(feature = "http")]
    fn http_request(&self, request: &Id) -> Option<Arc<super::sse_http::HttpRequestParts>>;
    fn related_request(&self, incoming: &Id) -> Option<Id>;
    fn set_protocol_version(&self, version: Option<ProtocolVersion>);
    fn admit_tools(&self, tools: &mut Vec<Tool>) -> Vec<(String, String)>;
    fn network_transport(&self) -> Option<&'static str>;
    fn server_endpoint(&self) -> Option<(String, u16)>;
    fn session_id(&self) -> Option<String>;
    fn child_pid(&self) -> Option<u32>;
    fn exit_status(&self) -> Option<ExitStatus>;
    fn recv(&self) -> BoxFuture<'_, Result<Option<Message>, TransportError>>;
    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>>;
    fn as_any(&self) -> &dyn Any;
}

impl<T: Transport> ErasedTransport for T {
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(Transport::send(self, message))
    }

    fn send_related<'a>(&'a self, message: Message, related: &'a Id) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(Transport::send_related(self, message, related))
    }

    forward_queries!(Transport, |this| this);

    fn recv(&self) -> BoxFuture<'_, Result<Option<Message>, TransportError>> {
        Box::pin(Transport::recv(self))
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(Transport::close(self))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Any [`Transport`], behind one type (see the module doc for why).
///
/// # Cancel safety
/// That of the transport inside: dropping a boxed future drops the transport's own future.
pub struct BoxTransport(Box<dyn ErasedTransport>);

impl BoxTransport {
    /// `transport`, boxed. A `BoxTransport` given here is returned as it is, not boxed twice.
    pub fn new<T: Transport>(transport: T) -> BoxTransport {
        let mut slot = Some(transport);
        if let Some(boxed) = (&mut slot as &mut dyn Any).downcast_mut::<Option<BoxTransport>>() {
            if let Some(boxed) = boxed.take() {
                return boxed;
            }
        }
        BoxTransport(Box::new(slot.expect("taken only when it was a BoxTransport")))
    }

    /// The transport inside, when it is a `T`.
    pub fn downcast_ref<T: Transport>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

/// `transport` as a `T`: itself when it is one, or the transport inside it when it is a
/// [`BoxTransport`] of a `T`. For code generic over transports that needs what only one kind
/// has (what every transport may be asked is a method of [`Transport`] instead).
pub fn downcast<T: Transport, U: Transport>(transport: &U) -> Option<&T> {
    let any = transport as &dyn Any;
    any.downcast_ref::<T>().or_else(|| any.downcast_ref::<BoxTransport>().and_then(BoxTransport::downcast_ref))
}

impl fmt::Debug for BoxTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxTransport").finish_non_exhaustive()
    }
}

impl Transport for BoxTransport {
    fn send(&self, message: Message) -> impl Future<Output = Result<(), TransportError>> + Send {
        self.0.send(message)
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        self.0.send_related(message, related).await
    }

    forward_queries!(ErasedTransport, |this| &*this.0);

    fn recv(&self) -> impl Future<Output = Result<Option<Message>, TransportError>> + Send {
        self.0.recv()
    }

    fn close(&self) -> impl Future<Output = Result<(), TransportError>> + Send {
        self.0.close()
    }
}

#[cfg(test)]
mod tests {
    use super::{downcast, BoxTransport};
    use crate::proto::jsonrpc::{Message, Notification};
    use crate::transport::{inproc, Limits, Transport, TransportError};

    #[tokio::test]
    async fn messages_pass_through_in_both_directions_and_close_ends_the_peer() {
        let (a, b) = inproc::pair(Limits::default());
        let (a, b) = (BoxTransport::new(a), BoxTransport::new(b));
        a.send(Message::Notification(Notification { method: "one".into(), params: None })).await.unwrap();
        b.send(Message::Notification(Notification { method: "two".into(), params: None })).await.unwrap();
        let Some(Message::Notification(got)) = b.recv().await.unwrap() else { panic!("expected a notification") };
        assert_eq!(got.method, "one");
        let Some(Message::Notification(got)) = a.recv().await.unwrap() else { panic!("expected a notification") };
        assert_eq!(got.method, "two");
        a.close().await.unwrap();
        assert!(b.recv().await.unwrap().is_none(), "the peer's input ends when the other side closes");
        assert!(matches!(
            a.send(Message::Notification(Notification { method: "late".into(), params: None })).await,
            Err(TransportError::Closed)
        ));
    }

    #[test]
    fn downcast_sees_through_a_box_and_refuses_another_kind() {
        let (a, b) = inproc::pair(Limits::default());
        assert!(downcast::<inproc::InprocTransport, _>(&a).is_some(), "the transport itself");
        let boxed = BoxTransport::new(b);
        assert!(downcast::<inproc::InprocTransport, _>(&boxed).is_some(), "the transport inside the box");
        assert!(downcast::<crate::transport::stdio::StdioTransport, _>(&boxed).is_none());
    }

    #[test]
    fn the_transport_inside_is_reachable_and_a_box_is_not_boxed_twice() {
        let (a, _b) = inproc::pair(Limits::default());
        let boxed = BoxTransport::new(a);
        assert!(boxed.downcast_ref::<inproc::InprocTransport>().is_some());
        assert!(boxed.downcast_ref::<BoxTransport>().is_none());
        let again = BoxTransport::new(boxed);
        assert!(again.downcast_ref::<inproc::InprocTransport>().is_some(), "the inner transport, not a box of a box");
    }
}

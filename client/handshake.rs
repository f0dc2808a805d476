//! Connecting: [`Client::connect`](super::Client::connect) and the era it settles on — the
//! `initialize` handshake, the `server/discover` probe of a stateless (2026-07-28) server and the
//! fallback from one to the other, the version told to the transport — and the guard that closes
//! a connection whose handshake was abandoned. Not here: what is sent once connected.

use super::server_requests::ClientPeerHandler;
use super::{
    decode_named, error_for, listen, request, Client, ClientError, ClientOptions, EraPolicy, Inner, InputAnswerers,
    ListCache,
};

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use crate::peer::{Peer, RequestError};
use crate::proto::jsonrpc::{Body, ErrorCode};
use crate::proto::mcp_types::{
    ClientCapabilities, Discover, Initialize, InitializeRequestParams, InitializeResult, Method,
};
use crate::proto::mcp_types::{PerRequestMeta, UnsupportedProtocolVersionData};
use crate::proto::session::{Mode, RequestOptions, Role};
use crate::proto::version::ProtocolVersion;
use crate::transport::{Transport, TransportError};

impl<T: Transport> Client<T> {
    /// Connects over `transport`: `initialize`, version check, `notifications/initialized`.
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`ClientError::UnsupportedVersion`] when the server answers a version not in
    /// [`ClientOptions::supported_versions`]; [`ClientError::Rpc`] when it refuses `initialize`;
    /// [`ClientError::ServerExited`], [`ClientError::Closed`], [`ClientError::Timeout`] when
    /// it never answers. The connection is closed in every case.
    pub async fn connect(transport: T, options: ClientOptions) -> Result<Client<T>, ClientError> {
        // A roots handler takes precedence: the static list is then not kept at all.
        let roots = options.roots.clone().filter(|_| options.roots_handler.is_none()).map(|r| Arc::new(RwLock::new(r)));
        let cache = Arc::new(Mutex::new(ListCache::default()));
        let acks = Arc::new(listen::AwaitedAcks::default());
        let handler = ClientPeerHandler {
            handler: options.handler.clone(),
            sampling: options.sampling.clone(),
            elicitation: options.elicitation.clone(),
            roots: roots.clone(),
            roots_handler: options.roots_handler.clone(),
            running: Arc::default(),
            cache: cache.clone(),
            acks: acks.clone(),
        };
        // A probe goes out statelessly; the session gets its handshake gate back if the server
        // does not take it.
        let mode = if options.era == EraPolicy::Legacy { Mode::Handshake } else { Mode::Stateless };
        let peer = Peer::start(transport, Role::Client, mode, options.session_limits, handler);
        // Dropping this future before the handshake settles (a cancelled start) closes the
        // connection too: the peer's tasks would otherwise keep it (and a child) alive.
        let guard = CloseOnDrop(Some(peer.clone()));
        let declared = options.declared_capabilities();
        let stateless =
            |init, version| (init, version, Some(PerRequestMeta::new(version, &options.client_info, &declared)));
        let mut strict_capabilities = options.strict_capabilities;
        let connected = match options.era {
            EraPolicy::Legacy => handshake(&peer, &options, &declared).await.map(|(i, v)| (i, v, None)),
            EraPolicy::Adopt(version) => {
                set_transport_version(&peer, Some(version));
                // Nothing says what the server supports: calls are not checked against it.
                strict_capabilities = false;
                let init =
                    InitializeResult { protocol_version: version.as_str().to_owned(), ..InitializeResult::default() };
                Ok(stateless(init, version))
            }
            EraPolicy::Auto => match discover(&peer, &options, &declared).await {
                Ok(Some((init, version))) => Ok(stateless(init, version)),
                Ok(None) => match fall_back(&peer, &options, &declared).await {
                    // `initialize` refused as an unsupported version is a modern server after
                    // all (a probe that timed out on a slow start settled it): probe once more.
                    Err(e) if e.rpc_error().is_some_and(|e| e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) => {
                        match peer.set_mode(Mode::Stateless).map(|()| discover(&peer, &options, &declared)) {
                            Ok(probe) => match probe.await {
                                Ok(Some((init, version))) => Ok(stateless(init, version)),
                                _ => Err(e),
                            },
                            Err(_) => Err(e),
                        }
                    }
                    other => other.map(|(i, v)| (i, v, None)),
                },
                Err(e) => Err(e),
            },
        };
        let inputs = InputAnswerers {
            sampling: options.sampling.clone(),
            elicitation: options.elicitation.clone(),
            roots: roots.clone(),
            roots_handler: options.roots_handler.clone(),
        };
        guard.disarm();
        match connected {
            Ok((init, version, session_meta)) => Ok(Client {
                inner: Arc::new(Inner {
                    peer,
                    init,
                    version,
                    request_timeout: options.request_timeout,
                    max_pages: options.max_pages,
                    closed_by_us: AtomicBool::new(false),
                    declared,
                    roots,
                    strict_capabilities,
                    next_progress_token: AtomicU64::new(1),
                    session_meta: session_meta.map(RwLock::new),
                    inputs,
                    max_input_rounds: options.max_input_rounds,
                    cache,
                    acks,
                }),
            }),
            Err(e) => {
                let _ = peer.close().await;
                Err(e)
            }
        }
    }
}
/// `initialize` and `notifications/initialized`, through the session's handshake gate.
pub(super) async fn handshake<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Result<(InitializeResult, ProtocolVersion), ClientError> {
    let params = InitializeRequestParams {
        protocol_version: options.offered_version_str().to_owned(),
        capabilities: declared.clone(),
        client_info: options.client_info.clone(),
        ..InitializeRequestParams::default()
    };
    let request_options = RequestOptions { timeout: options.request_timeout, ..RequestOptions::default() };
    let init = request::<T, Initialize>(peer, params, request_options, None).await?;
    let version =
        ProtocolVersion::client_accepts(&init.protocol_version, &options.supported_versions).map_err(|_| {
            ClientError::UnsupportedVersion {
                offered: options.protocol_version,
                answered: init.protocol_version.clone(),
            }
        })?;
    // Stdio's decoder must know (batches are legal only in 2025-03-26), and so may a user's.
    peer.transport().set_protocol_version(Some(version));
    peer.initialized().await.map_err(|e| error_for(Initialize::NAME, e))?;
    Ok((init, version))
}

/// The fallback of `auto`: the session's handshake gate back, the transport's stateless
/// version dropped, then the handshake.
pub(super) async fn fall_back<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Result<(InitializeResult, ProtocolVersion), ClientError> {
    peer.set_mode(Mode::Handshake).map_err(ClientError::Session)?;
    set_transport_version(peer, None);
    handshake(peer, options, declared).await
}

/// Tells the transport which version the next messages speak ([`Transport::set_protocol_version`]:
/// stdio's decoder for batches, the HTTP client, whose POSTs are stateless under 2026-07-28, a
/// user's own transport); `None`: back to learning the version from `initialize`.
pub(super) fn set_transport_version<T: Transport>(peer: &Peer<T>, version: Option<ProtocolVersion>) {
    peer.transport().set_protocol_version(version);
}

/// The `server/discover` probe: `Some` with a stateless session's server description when the
/// server answers with a discovery result naming a stateless version of ours; `None` when
/// `initialize` should follow (any error but a usable `UnsupportedProtocolVersion`, an HTTP
/// 4xx, no answer within the probe timeout, a result that does not decode or names no version
/// we take). An `UnsupportedProtocolVersion` naming a stateless version of ours gets one more
/// probe at it; one naming only stateless versions we lack ends the connection.
pub(super) async fn discover<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Result<Option<(InitializeResult, ProtocolVersion)>, ClientError> {
    let ours = |v: &&ProtocolVersion| !v.has_initialize_handshake();
    let Some(mut version) = options.supported_versions.iter().filter(ours).copied().max() else {
        return Ok(None);
    };
    let timeout = match options.request_timeout {
        Some(t) => t.min(options.discover_timeout),
        None => options.discover_timeout,
    };
    let invalid = |source| ClientError::InvalidResult { method: Discover::NAME.to_owned(), source };
    for attempt in 0..2 {
        set_transport_version(peer, Some(version));
        let mut params = serde_json::json!({});
        PerRequestMeta::new(version, &options.client_info, declared).write_into(&mut params).map_err(invalid)?;
        let body = Body::serialized(&params).map_err(invalid)?;
        let request_options = RequestOptions { timeout: Some(timeout), ..RequestOptions::default() };
        let result = match peer.request_static(Discover::NAME, Some(body), request_options, None).await {
            Ok(body) => match body.into_decoded::<crate::proto::mcp_types::DiscoverResult>() {
                Ok(result) => result,
                Err(_) => return Ok(None),
            },
            Err(RequestError::Rpc(e)) if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
                let supported =
                    e.data.as_ref().and_then(|d| serde_json::from_str::<UnsupportedProtocolVersionData>(d.get()).ok());
                let Some(supported) = supported else { return Ok(None) };
                let known: Vec<ProtocolVersion> = supported.supported.iter().filter_map(|v| v.parse().ok()).collect();
                let mutual =
                    options.supported_versions.iter().filter(ours).copied().filter(|v| known.contains(v)).max();
                match mutual {
                    Some(v) if attempt == 0 => {
                        version = v;
                        continue;
                    }
                    _ if known.iter().any(|v| v.has_initialize_handshake()) || supported.supported.is_empty() => {
                        return Ok(None)
                    }
                    _ => {
                        return Err(ClientError::UnsupportedVersion {
                            offered: version,
                            answered: supported.supported.join(", "),
                        })
                    }
                }
            }
            Err(RequestError::Rpc(_) | RequestError::Timeout { .. }) => return Ok(None),
            Err(RequestError::Transport(TransportError::Http { status, .. })) if (400..500).contains(&status) => {
                return Ok(None)
            }
            Err(e) => return Err(decode_named::<T, Value>(peer, Discover::NAME, Err(e), None).await.unwrap_err()),
        };
        let chosen = options
            .supported_versions
            .iter()
            .filter(ours)
            .copied()
            .filter(|v| result.supported_versions.iter().any(|s| s == v.as_str()))
            .max();
        let Some(chosen) = chosen else {
            return Ok(None);
        };
        if chosen != version {
            set_transport_version(peer, Some(chosen));
        }
        let server_info = result.meta.as_ref().and_then(|m| m.server_info.clone()).or_else(|| {
            // Some servers put it beside the result's members, as `initialize` did.
            result.extra.get("serverInfo").and_then(|v| serde_json::from_value(v.clone()).ok())
        });
        let init = InitializeResult {
            protocol_version: chosen.as_str().to_owned(),
            capabilities: result.capabilities,
            server_info: server_info.unwrap_or_default(),
            instructions: result.instructions,
            ..InitializeResult::default()
        };
        return Ok(Some((init, chosen)));
    }
    Ok(None)
}

/// Closes a connection whose handshake was abandoned (its future dropped); disarmed once the
/// handshake settles.
pub(super) struct CloseOnDrop<T: Transport>(Option<Peer<T>>);

impl<T: Transport> CloseOnDrop<T> {
    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl<T: Transport> Drop for CloseOnDrop<T> {
    fn drop(&mut self) {
        let Some(peer) = self.0.take() else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.close().await;
            });
        }
    }
}

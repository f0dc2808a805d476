//! A server's life in the set: its start (with retries), the connection installed, its loss and
//! the reconnection with backoff, the refresh of its listing when it says its lists changed.
//! Not here: reloading the configuration (`reload`), the connection itself (`slot`).

use super::events::ServerState;
use super::events::SetEvent;
use super::lease;
use super::lease::Held;
use super::slot::Conn;
use super::slot::ConnKind;
use super::slot::Listing;
use super::slot::Slot;
use super::Shared;
use crate::client::config::Readiness;
use crate::client::config::ServerConfig;
use crate::client::config::TransportConfig;
use crate::client::ClientError;
use crate::client::ClientOptions;
use crate::client::Listening;
use crate::client::EXIT_GRACE;
use crate::proto::jsonrpc::Notification;
use crate::proto::mcp_types::ListPrompts;
use crate::proto::mcp_types::ListPromptsRequestParams;
use crate::proto::mcp_types::ListResourceTemplates;
use crate::proto::mcp_types::ListResourceTemplatesRequestParams;
use crate::proto::mcp_types::ListResources;
use crate::proto::mcp_types::ListResourcesRequestParams;
use crate::proto::session::RequestOptions;
#[cfg(feature = "http")]
use crate::transport::sse_http::HttpClientConfig;
#[cfg(feature = "http")]
use crate::transport::sse_http::HttpClientTransport;
use crate::transport::stdio::ChildCommand;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Weak;
use std::time::Duration;
use std::time::Instant;
/// How one server's start ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StartEnd {
    /// Ready or failed.
    Settled,
    /// Startup was cancelled ([`ConnectionSet::cancel_startup`], shutdown).
    Cancelled,
    /// A reload changed or removed the server meanwhile: this start gave up, leaving the
    /// slot's state to the reload.
    Superseded,
}

/// Starts one server from its current configuration; `announce`: emit its
/// [`SetEvent::Starting`] (else the caller did).
pub(super) async fn start_one(shared: &Arc<Shared>, slot: &Arc<Slot>, announce: bool) -> StartEnd {
    let name = slot.name.clone();
    let config = slot.config();
    let epoch = {
        let mut s = slot.lock();
        s.state = ServerState::Starting;
        *slot.epoch.borrow()
    };
    if announce {
        shared.emit(SetEvent::Starting { server: name.clone() });
    }
    let started = Instant::now();
    let mut cancel = shared.cancel.subscribe();
    let mut superseded = slot.epoch.subscribe();
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(config.startup_timeout, connect(shared, slot, &config)) => Ok(outcome),
        _ = cancel.wait_for(|c| *c) => Err(StartEnd::Cancelled),
        _ = superseded.wait_for(|e| *e != epoch) => Err(StartEnd::Superseded),
    };
    let elapsed = started.elapsed();
    let end = match outcome {
        Err(end) => end,
        Ok(Ok(Ok((conn, listing, listening)))) => {
            let version = conn.protocol_version();
            let tools = listing.tools.len();
            if install(shared, slot, Some(epoch), None, conn, listing, listening, elapsed) {
                shared.emit(SetEvent::Ready { server: name, protocol_version: version, tools, elapsed });
                return StartEnd::Settled;
            }
            StartEnd::Superseded
        }
        Ok(outcome) => {
            let reason = match outcome {
                Ok(Err(reason)) => reason,
                _ => format!("did not start within {} ms", config.startup_timeout.as_millis()),
            };
            let mut s = slot.lock();
            if *slot.epoch.borrow() != epoch {
                return StartEnd::Superseded;
            }
            s.state = ServerState::Failed;
            s.elapsed = elapsed;
            s.error = Some(reason.clone());
            s.failed_attempts = s.failed_attempts.saturating_add(1);
            drop(s);
            shared.emit(SetEvent::Failed { server: name, required: config.required, reason });
            return StartEnd::Settled;
        }
    };
    if end == StartEnd::Cancelled {
        let mut s = slot.lock();
        if *slot.epoch.borrow() == epoch {
            s.state = ServerState::Cancelled;
            s.elapsed = elapsed;
            s.error = Some("startup cancelled".to_owned());
        }
    }
    shared.emit(SetEvent::Cancelled { server: name });
    end
}

/// Tries `slot` again in the background when it failed at start, is not `required`, and
/// [`SetOptions::startup_retries`] allows (the policy of [`ConnectionSet::start`]); it is
/// [`ServerState::Retrying`] meanwhile.
pub(super) fn retry_failed_start(shared: &Arc<Shared>, slot: &Arc<Slot>) {
    let attempts = shared.options.startup_retries;
    let config = slot.config();
    if attempts == 0 || config.required || shared.shut_down.load(Ordering::Acquire) {
        return;
    }
    // A server our environment rule refuses would be refused by every try.
    if let TransportConfig::Stdio { env_vars, .. } = &config.transport {
        if shared.options.child_env.refusal(env_vars).is_some() {
            return;
        }
    }
    {
        let mut s = slot.lock();
        if s.state != ServerState::Failed {
            return;
        }
        s.state = ServerState::Retrying;
    }
    let (task_shared, slot) = (shared.clone(), slot.clone());
    let handle = crate::transport::task::spawn(async move { reconnect(&task_shared, &slot, attempts).await });
    shared.track(handle.abort_handle());
}

/// Makes `conn` the slot's connection and watches it, and its listen stream when it has one:
/// the stream ending while the connection lasts is the connection's end too (a 2026-07-28
/// server over HTTP has no session whose end would otherwise tell), so the server is
/// reconnected, listed and listened to again.
///
/// `epoch`: the slot's epoch when the start began; a start that a reload superseded since (or
/// one of a retired slot, or after shutdown) installs nothing: its connection is closed and
/// `false` returned. `config`: the configuration the connection was made from, when it
/// replaces the slot's (a reload's restart). A connection the slot held before is retired:
/// it finishes the calls in flight on it (and serves the leases on it) before it is closed.
#[allow(clippy::too_many_arguments)]
pub(super) fn install(
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    epoch: Option<u64>,
    config: Option<Arc<ServerConfig>>,
    conn: Conn,
    listing: Listing,
    listening: Option<Listening>,
    elapsed: Duration,
) -> bool {
    let mut s = slot.lock();
    let superseded = epoch.is_some_and(|epoch| *slot.epoch.borrow() != epoch);
    if shared.shut_down.load(Ordering::Acquire) || slot.is_retired() || superseded {
        drop(s);
        crate::transport::task::spawn(async move { conn.close().await });
        return false;
    }
    if let Some(config) = config {
        *slot.config.write().expect("config lock") = config;
    }
    s.generation += 1;
    let generation = s.generation;
    s.state = ServerState::Ready;
    s.error = None;
    s.failed_attempts = 0;
    s.elapsed = elapsed;
    s.protocol_version = Some(conn.protocol_version());
    s.server_info = Some(conn.server_info().clone());
    s.listing = listing;
    if let Some(old) = s.watcher.take() {
        old.abort();
    }
    let watched = conn.clone();
    // Roots replaced while this connection was being made: tell it.
    let roots = shared.roots.read().expect("roots lock").clone();
    if let (Some(roots), Some(offered)) = (roots, conn.roots()) {
        if roots != offered {
            let conn = conn.clone();
            crate::transport::task::spawn(async move {
                let _ = conn.set_roots(roots).await;
            });
        }
    }
    if let Some(old) = s.conn.replace(Held::new(conn)) {
        crate::transport::task::spawn(lease::retire(old));
    }
    let weak = Arc::downgrade(shared);
    let slot_ref = slot.clone();
    s.watcher = Some(
        crate::transport::task::spawn(async move {
            // Aborting this task drops the listen stream, which cancels it upstream.
            let stream_ended = async move {
                match listening {
                    Some(listening) => Some(listening.ended().await),
                    None => std::future::pending().await,
                }
            };
            let stream_end = tokio::select! {
                biased;
                () = watched.closed() => None,
                Some(end) = stream_ended => Some(end),
            };
            let reason = match stream_end {
                Some(Ok(_)) => "the server ended the subscriptions/listen stream".to_owned(),
                // The stream ended because the connection did (a stdio child that exited):
                // say why the connection did.
                Some(Err(e))
                    if !(e.is_disconnected() && tokio::time::timeout(EXIT_GRACE, watched.closed()).await.is_ok()) =>
                {
                    format!("the subscriptions/listen stream ended: {e}")
                }
                _ => {
                    watched.wait_for_exit(EXIT_GRACE).await;
                    watched.end_reason()
                }
            };
            if let Some(shared) = weak.upgrade() {
                connection_lost(&shared, &slot_ref, generation, reason);
            }
        })
        .abort_handle(),
    );
    let list_now = s.listing.pending;
    drop(s);
    if list_now {
        schedule_refresh(shared, slot, Duration::ZERO);
    }
    true
}

/// The connection of generation `generation` ended: fail it, and restart the server.
pub(super) fn connection_lost(shared: &Arc<Shared>, slot: &Arc<Slot>, generation: u64, reason: String) {
    if shared.shut_down.load(Ordering::Acquire) {
        return;
    }
    let mut s = slot.lock();
    if s.generation != generation || s.state != ServerState::Ready {
        return;
    }
    let old = s.conn.take();
    s.state = if shared.options.reconnect { ServerState::Reconnecting } else { ServerState::Failed };
    s.error = Some(reason.clone());
    if let Some(watcher) = s.watcher.take() {
        watcher.abort();
    }
    drop(s);
    if let Some(old) = old {
        // An expired HTTP session or a half-dead child: make sure it is gone. A connection that
        // already ended is closed a little later, so that the calls that were in flight on it
        // can still tell a server exit from a close of ours.
        crate::transport::task::spawn(async move {
            if old.is_closed() {
                tokio::time::sleep(EXIT_GRACE * 2).await;
            }
            old.close().await
        });
    }
    let name = slot.name.clone();
    shared.emit(SetEvent::Disconnected { server: name.clone(), reason });
    if !shared.options.reconnect {
        shared.rebuild_catalog();
        shared.emit(SetEvent::CatalogChanged { server: name });
        return;
    }
    let task_shared = shared.clone();
    let slot = slot.clone();
    let attempts = shared.options.max_reconnect_attempts;
    let handle = crate::transport::task::spawn(async move { reconnect(&task_shared, &slot, attempts).await });
    shared.track(handle.abort_handle());
}

/// Tries to start the server again, up to `attempts` times (`u32::MAX`: until it starts) with
/// exponential backoff: after its connection ended, or after it failed at startup
/// ([`SetOptions::startup_retries`]).
pub(super) async fn reconnect(shared: &Arc<Shared>, slot: &Arc<Slot>, attempts: u32) {
    let name = slot.name.clone();
    let options = &shared.options;
    let mut delay = options.initial_backoff;
    let mut last = String::new();
    // A reload that changes or removes the server ends these tries.
    let epoch = *slot.epoch.borrow();
    let superseded = || slot.is_retired() || *slot.epoch.borrow() != epoch;
    for attempt in 1..=attempts {
        shared.emit(SetEvent::Reconnecting { server: name.clone(), attempt, delay });
        tokio::time::sleep(delay).await;
        if shared.shut_down.load(Ordering::Acquire) || superseded() {
            return;
        }
        let started = Instant::now();
        let config = slot.config();
        match tokio::time::timeout(config.startup_timeout, connect(shared, slot, &config)).await {
            Ok(Ok((conn, listing, listening))) => {
                if !install(shared, slot, Some(epoch), None, conn, listing, listening, started.elapsed()) {
                    return;
                }
                shared.rebuild_catalog();
                shared.save_cache();
                shared.emit(SetEvent::Reconnected { server: name.clone() });
                shared.emit(SetEvent::CatalogChanged { server: name });
                return;
            }
            Ok(Err(reason)) => last = reason,
            Err(_) => last = format!("did not start within {} ms", config.startup_timeout.as_millis()),
        }
        {
            // The last try's reason is the server's error while the tries go on.
            let mut s = slot.lock();
            if superseded() {
                return;
            }
            s.error = Some(last.clone());
            s.failed_attempts = s.failed_attempts.saturating_add(1);
        }
        delay = (delay * 2).min(options.max_backoff);
    }
    let reason = format!("gave up restarting after {attempts} attempts: {last}");
    {
        let mut s = slot.lock();
        if superseded() {
            return;
        }
        s.state = ServerState::Failed;
        s.error = Some(reason.clone());
    }
    shared.rebuild_catalog();
    shared.emit(SetEvent::Failed { server: name.clone(), required: slot.config().required, reason });
    shared.emit(SetEvent::CatalogChanged { server: name });
}

pub(super) const LIST_CHANGED: [&str; 3] =
    ["notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"];

pub(super) fn client_options(shared: &Arc<Shared>, slot: &Arc<Slot>, config: &ServerConfig) -> ClientOptions {
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let slot_weak = Arc::downgrade(slot);
    let name = slot.name.clone();
    let mut options = shared.options.client.clone().with_era(config.era);
    if let Some(handler) = &shared.options.sampling {
        let (handler, name) = (handler.clone(), name.clone());
        options = options.with_sampling(move |params| handler.create_message(&name, params));
    }
    if let Some((handler, modes)) = &shared.options.elicitation {
        let (handler, name) = (handler.clone(), name.clone());
        options = options.with_elicitation_modes(move |params| handler.elicit(&name, params), *modes);
    }
    if let Some(handler) = &shared.options.roots_handler {
        let (handler, name) = (handler.clone(), name.clone());
        options = options.with_roots_handler(move || handler.list_roots(&name));
    } else if let Some(roots) = shared.roots.read().expect("roots lock").clone() {
        options = options.with_roots(roots);
    }
    options.with_handler(move |notification: Notification| {
        let Some(shared) = weak.upgrade() else { return };
        if LIST_CHANGED.contains(&notification.method.as_str()) {
            if let Some(slot) = slot_weak.upgrade() {
                schedule_refresh(&shared, &slot, shared.options.refresh_debounce);
            }
        }
        shared.emit(SetEvent::Notification { server: name.clone(), notification });
    })
}

/// Re-lists the server after `delay` (list changes arriving meanwhile are folded in).
pub(super) fn schedule_refresh(shared: &Arc<Shared>, slot: &Arc<Slot>, delay: Duration) {
    if slot.refresh_scheduled.swap(true, Ordering::AcqRel) {
        return;
    }
    let task_shared = shared.clone();
    let slot = slot.clone();
    let handle = crate::transport::task::spawn(async move {
        let shared = task_shared;
        tokio::time::sleep(delay).await;
        slot.refresh_scheduled.store(false, Ordering::Release);
        let (conn, generation) = {
            let s = slot.lock();
            match (&s.conn, s.state) {
                (Some(conn), ServerState::Ready) => (conn.clone(), s.generation),
                // Not ready yet: its start (or restart) lists it anyway.
                _ => return,
            }
        };
        let timeout = slot.config().startup_timeout.max(Duration::from_secs(1));
        let mut listing = match tokio::time::timeout(timeout, list_all(&conn)).await {
            Ok(Ok(listing)) => listing,
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {} ms", timeout.as_millis()),
                };
                let message = format!("re-listing after a list change failed, the previous catalog stays: {why}");
                shared.emit(SetEvent::Warning { server: Some(slot.name.clone()), message });
                return;
            }
        };
        cap_listing(&shared, &slot.name, &mut listing);
        {
            let mut s = slot.lock();
            if s.generation != generation {
                return;
            }
            s.listing = listing;
        }
        shared.rebuild_catalog();
        shared.save_cache();
        shared.emit(SetEvent::CatalogChanged { server: slot.name.clone() });
    });
    shared.track(handle.abort_handle());
}

/// Starts the server from its recipe: spawn or connect, `initialize` (or discovery), then in
/// the 2026-07-28 era the listen stream, acknowledged before the listing so that no change
/// falls between the two; then list. A server that refuses the stream (-32601) is used without
/// it: its catalog is then refreshed only when it reconnects.
pub(super) async fn connect(
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    config: &ServerConfig,
) -> Result<(Conn, Listing, Option<Listening>), String> {
    let options = client_options(shared, slot, config);
    let conn = match &config.transport {
        TransportConfig::Stdio { command, args, env, env_vars, cwd, inherit_env } => {
            let child = ChildCommand::new(command).args(args).stderr(shared.options.stderr.for_server(&slot.name));
            let mut child = shared.options.child_env.apply(child, *inherit_env, env_vars, env)?;
            if let Some(cwd) = cwd {
                child = child.current_dir(cwd);
            }
            let transport = child.spawn().map_err(|e| ClientError::from(e).to_string())?;
            Conn::connect(transport, ConnKind::Stdio, options).await?
        }
        #[cfg(feature = "http")]
        TransportConfig::Http { url, bearer_token_env_var, http_headers, env_http_headers, legacy_sse } => {
            let mut http = HttpClientConfig::new(url).connect_timeout(config.startup_timeout).legacy(*legacy_sse);
            for (k, v) in http_headers {
                http = http.header(k, v);
            }
            for (header, var) in env_http_headers {
                let value = std::env::var(var)
                    .map_err(|_| format!("env_http_headers.{header}: environment variable {var} is not set"))?;
                http = http.header(header, value);
            }
            if let Some(var) = bearer_token_env_var {
                http = http
                    .bearer_token_env(var)
                    .map_err(|_| format!("bearer_token_env_var: environment variable {var} is not set"))?;
            }
            #[cfg(feature = "oauth")]
            if let Some(authorizer) =
                shared.options.logins.as_ref().map(|l| l.authorizer(config)).transpose()?.flatten()
            {
                http = http.authorizer(authorizer);
            }
            let transport = HttpClientTransport::new(http).map_err(|e| e.to_string())?;
            Conn::connect(transport, ConnKind::Http, options).await?
        }
        #[cfg(not(feature = "http"))]
        TransportConfig::Http { .. } => return Err("this build has no HTTP transport (feature http)".to_owned()),
        TransportConfig::InProcess(connector) => {
            Conn::connect(connector.connect(), ConnKind::InProcess, options).await?
        }
    };
    let listening = match conn.listen_for_list_changes().await {
        Some(Ok(listening)) => Some(listening),
        Some(Err(e)) if e.is_disconnected() => {
            conn.close().await;
            return Err(e.to_string());
        }
        Some(Err(_)) | None => None,
    };
    if config.readiness == Readiness::Connected {
        return Ok((conn, Listing { pending: true, ..Listing::default() }, listening));
    }
    match list_all(&conn).await {
        Ok(mut listing) => {
            cap_listing(shared, &slot.name, &mut listing);
            Ok((conn, listing, listening))
        }
        Err(e) => {
            conn.close().await;
            Err(e.to_string())
        }
    }
}

/// Leaves out what `server` lists beyond [`SetOptions::max_items_per_server`] of each kind,
/// with a warning.
pub(super) fn cap_listing(shared: &Shared, server: &str, listing: &mut Listing) {
    let max = shared.options.max_items_per_server;
    let mut over = Vec::new();
    let mut cap = |kind: &str, len: usize| {
        if len > max {
            over.push(format!("{len} {kind}"));
        }
        len.min(max)
    };
    let tools = cap("tools", listing.tools.len());
    let resources = cap("resources", listing.resources.len());
    let templates = cap("resource templates", listing.templates.len());
    let prompts = cap("prompts", listing.prompts.len());
    listing.tools.truncate(tools);
    listing.resources.truncate(resources);
    listing.templates.truncate(templates);
    listing.prompts.truncate(prompts);
    if !over.is_empty() {
        let message = format!("lists {}; only the first {max} of each are offered", over.join(", "));
        shared.emit(SetEvent::Warning { server: Some(server.to_owned()), message });
    }
}

macro_rules! list_pages {
    ($conn:expr, $method:ty, $params:ident, $field:ident) => {{
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = None;
        loop {
            let params = $params { cursor: cursor.take(), ..$params::default() };
            let page = $conn.request::<$method>(params, RequestOptions::default()).await?;
            items.extend(page.$field);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) && seen.len() < 1000 => cursor = Some(next),
                _ => break,
            }
        }
        items
    }};
}

/// Lists what the server advertises: tools (always asked for when advertised), resources and
/// templates, prompts.
pub(super) async fn list_all(conn: &Conn) -> Result<Listing, ClientError> {
    let caps = conn.capabilities().clone();
    let mut listing = Listing::default();
    if caps.tools.is_some() {
        listing.tools = conn.list_tools().await?;
    }
    if caps.resources.is_some() {
        listing.resources = list_pages!(conn, ListResources, ListResourcesRequestParams, resources);
        // Templates are optional even for servers with resources.
        listing.templates = match async {
            Ok::<_, ClientError>(list_pages!(
                conn,
                ListResourceTemplates,
                ListResourceTemplatesRequestParams,
                resource_templates
            ))
        }
        .await
        {
            Ok(templates) => templates,
            Err(e) if e.rpc_error().is_some() => Vec::new(),
            Err(e) => return Err(e),
        };
    }
    if caps.prompts.is_some() {
        listing.prompts = list_pages!(conn, ListPrompts, ListPromptsRequestParams, prompts);
    }
    Ok(listing)
}

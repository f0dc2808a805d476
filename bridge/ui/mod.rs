//! The console of `mcp-bridge serve`: a page at `/ui` on the HTTP listener that shows the
//! upstreams and the merged catalog and tries tools, prompts and resources.
//!
//! The page is plain HTML, CSS and JavaScript embedded in the binary (`include_str!`: no
//! build step, nothing fetched from elsewhere), served with a strict Content-Security-Policy
//! (`default-src 'self'`, no inline script or style). The assets (`/ui`, `/ui/app.js`,
//! `/ui/app.css`) are public; the JSON they read (`/ui/api/upstreams`, `/ui/api/catalog`: see
//! [`Gateway::console_upstreams`], [`Gateway::console_catalog`]) is behind the listener's bearer
//! token or OAuth, as `/mcp` is: the page takes the token in a field and sends it. The page
//! speaks MCP to the endpoint as any client does (a session of its own, JSON or SSE answers).
//! The listener's Host and Origin checks apply to every path: a page of another origin is
//! refused.
//!
//! `/ui/api/traffic` (guarded like the other JSON) streams the gateway's calls as they end, as
//! server-sent events: one `data:` line of JSON per [`Item`] ([`Item::to_json`]: who called
//! which tool of which server, how it ended, in how long; never a token or an argument), a
//! comment every 15 s so that a client that went away is noticed.
//!
//! Recording (see [`recordings`]): `/ui/api/sessions` lists the live downstream sessions and the
//! recordings made; `POST /ui/api/recording` (`{"session": N, "action": "start" | "stop"}`,
//! JSON only) starts or stops a session's recording; `GET /ui/api/recording?number=N`
//! downloads one. All three guarded like the other JSON.
//!
//! Not here: the JSON documents themselves (`mcpwire::gateway::console`), the listener (serve.rs).

pub(crate) mod recordings;

use std::sync::Arc;

use std::time::Duration;

use mcpwire::gateway::console::StderrTails;
use mcpwire::gateway::live::{Item, Listener};
use mcpwire::gateway::Gateway;
use mcpwire::transport::sse_http::{HttpServerConfig, RouteRequest, RouteResponse};
use recordings::Sessions;
use serde_json::{json, Value};

const INDEX_HTML: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

/// The page's Content-Security-Policy: its own scripts, styles and fetches only; images and
/// audio of tool results as `data:` URLs; no plugin, no frame, no form target, no base.
pub(crate) const CSP: &str = "default-src 'self'; img-src 'self' data:; media-src 'self' data:; object-src 'none'; \
                              base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `response` with the headers every console answer carries.
fn hardened(response: RouteResponse) -> RouteResponse {
    response
        .header("Content-Security-Policy", CSP)
        .header("X-Content-Type-Options", "nosniff")
        .header("Referrer-Policy", "no-referrer")
        .header("Cache-Control", "no-store")
}

/// Escapes `text` for an HTML attribute value.
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;").replace('\'', "&#39;")
}

/// The console's routes on `http`, whose MCP endpoint is at `mcp_path` and whose sessions
/// are `sessions`.
pub(crate) fn routes(
    http: HttpServerConfig,
    gateway: &Arc<Gateway>,
    tails: Arc<StderrTails>,
    sessions: Arc<Sessions>,
    mcp_path: &str,
) -> HttpServerConfig {
    let (listed, switched, downloaded) = (sessions.clone(), sessions.clone(), sessions);
    let index = INDEX_HTML.replace("{{MCP_PATH}}", &attribute(mcp_path));
    let (upstreams, catalog, traffic) = (gateway.clone(), gateway.clone(), gateway.clone());
    http.route_public("/ui", move || {
        let page = index.clone();
        async move { hardened(RouteResponse::new(200, "text/html; charset=utf-8", page)) }
    })
    .route_public("/ui/app.js", || async {
        hardened(RouteResponse::new(200, "text/javascript; charset=utf-8", APP_JS))
    })
    .route_public("/ui/app.css", || async { hardened(RouteResponse::new(200, "text/css; charset=utf-8", APP_CSS)) })
    .route("/ui/api/upstreams", move || {
        let body = upstreams.console_upstreams(Some(&tails)).to_string();
        async move { hardened(RouteResponse::new(200, "application/json", body)) }
    })
    .route("/ui/api/catalog", move || {
        let body = catalog.console_catalog().to_string();
        async move { hardened(RouteResponse::new(200, "application/json", body)) }
    })
    .route("/ui/api/traffic", move || {
        // Listening starts here, before the answer's head goes out: a client that has the
        // head misses no call made after it.
        let listener = traffic.live();
        async move {
            let (events, stream) = tokio::sync::mpsc::channel(64);
            tokio::spawn(relay_traffic(listener, events));
            hardened(RouteResponse::streaming("text/event-stream", stream))
        }
    })
    .route("/ui/api/sessions", move || {
        let body = listed.to_json().to_string();
        async move { hardened(RouteResponse::new(200, "application/json", body)) }
    })
    .route_with_request("/ui/api/recording", move |request: RouteRequest| {
        let answer = match request.method.as_str() {
            "POST" => switch_recording(&switched, &request.body),
            _ => download(&downloaded, &request),
        };
        async move { hardened(answer) }
    })
}

/// A JSON answer `{"error": message}` of `status`.
fn refused(status: u16, message: &str) -> RouteResponse {
    RouteResponse::new(status, "application/json", json!({ "error": message }).to_string())
}

/// `POST /ui/api/recording`: `{"session": N, "action": "start" | "stop"}`, answered with the
/// recording's number (`null`: none was under way to stop).
fn switch_recording(sessions: &Sessions, body: &[u8]) -> RouteResponse {
    let Ok(asked) = serde_json::from_slice::<Value>(body) else { return refused(400, "the body is not JSON") };
    let Some(session) = asked["session"].as_u64() else { return refused(400, "no session number") };
    let done = match asked["action"].as_str() {
        Some("start") => sessions.start(session).map(Some),
        Some("stop") => sessions.stop(session),
        _ => return refused(400, "the action is start or stop"),
    };
    match done {
        Ok(recording) => RouteResponse::new(200, "application/json", json!({ "recording": recording }).to_string()),
        Err(e) => refused(404, &e),
    }
}

/// `GET /ui/api/recording?number=N`: the recording's file, as an attachment.
fn download(sessions: &Sessions, request: &RouteRequest) -> RouteResponse {
    let Some(number) = request.query_value("number").and_then(|n| n.parse().ok()) else {
        return refused(400, "no recording number");
    };
    let Some((path, name)) = sessions.recording(number) else { return refused(404, "no such recording") };
    match std::fs::read(&path) {
        // The name is the recorder's own (session-STAMP-NNNN.jsonl): nothing to quote in it.
        Ok(bytes) => RouteResponse::new(200, "application/x-ndjson", bytes)
            .header("Content-Disposition", format!("attachment; filename=\"{name}\"")),
        Err(e) => refused(404, &format!("the recording cannot be read: {e}")),
    }
}

/// Sends each item of `listener` to `events` as a server-sent event, and a comment every 15 s,
/// until the client goes (`events` closed) or the gateway does.
async fn relay_traffic<B: From<String>>(mut listener: Listener, events: tokio::sync::mpsc::Sender<B>) {
    let mut keepalive = tokio::time::interval(Duration::from_secs(15));
    loop {
        let event = tokio::select! {
            item = listener.next() => match item {
                Some(item) => event(&item),
                None => break,
            },
            _ = keepalive.tick() => ": keepalive\n\n".to_owned(),
            () = events.closed() => break,
        };
        if events.send(event.into()).await.is_err() {
            break;
        }
    }
}

/// `item` as one server-sent event.
fn event(item: &Item) -> String {
    format!("data: {}\n\n", item.to_json())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_has_no_inline_script_or_style_and_loads_only_its_own_assets() {
        let page = super::INDEX_HTML;
        assert!(page.contains(r#"<script src="/ui/app.js" defer></script>"#));
        assert_eq!(page.matches("<script").count(), 1, "one script, by src");
        assert!(!page.contains("<style") && !page.contains(" style="), "no inline style");
        let handler = page.split(" on").skip(1).find(|rest| {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert_eq!(handler, None, "no inline event handler");
        assert!(!page.contains("http://") && !page.contains("https://"), "nothing from elsewhere");
        assert!(!super::APP_JS.contains("http://") && !super::APP_JS.contains("https://"));
        assert!(!super::APP_JS.contains("innerHTML") && !super::APP_JS.contains("eval("));
    }

    #[test]
    fn the_endpoint_path_is_escaped_into_the_page() {
        assert_eq!(super::attribute(r#"/m"c<p>&'"#), "/m&quot;c&lt;p&gt;&amp;&#39;");
    }
}

//! Serving an extra route ([`routes`](crate::transport::sse_http::routes)): GET and HEAD (and
//! a JSON POST for a route that reads its request), a streamed body that ends at shutdown, a
//! panicking handler answered 500.
//!
//! Not here: declaring routes (`routes.rs`).

use bytes::Bytes;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::{mpsc, watch};

use crate::transport::sse_http::routes::{Route, RouteRequest, RouteResponse};
use crate::transport::sse_http::service::RequestBody;

use super::registry::Shared;
use super::reply::{plain, read_body};
use crate::transport::sse_http::{empty, full, ChannelBody, HttpBody};

/// An extra route: GET calls the handler, HEAD too but sends no body, POST too for a route
/// that reads its request (a JSON body, read up to the cap), other methods get 405; a handler
/// that panics is answered 500. A streamed body ends when `ended` turns true (the server shuts
/// down).
pub(super) async fn serve_route(
    shared: &Shared,
    route: &Route,
    req: Request<RequestBody>,
    ended: watch::Receiver<bool>,
) -> Response<HttpBody> {
    let method = req.method().clone();
    let head = method == Method::HEAD;
    let post = method == Method::POST && route.accepts_post;
    if method != Method::GET && !head && !post {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        let allow = if route.accepts_post { "GET, HEAD, POST" } else { "GET, HEAD" };
        response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
        return response;
    }
    let mut request = RouteRequest {
        method: method.as_str().to_owned(),
        query: req.uri().query().map(str::to_owned),
        body: Bytes::new(),
    };
    if post {
        let json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|t| t.to_str().ok())
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type: send application/json");
        }
        request.body = match read_body(&shared.config, req.into_body()).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
    }
    // In a task of its own, so that a panicking handler is a 500, not a dropped connection.
    let answer = tokio::spawn((route.handler)(request))
        .await
        .unwrap_or_else(|_| RouteResponse::text(500, "Internal Server Error: the route's handler failed\n"));
    let length = answer.body.len();
    let stream = answer.stream.as_ref().and_then(|s| s.take()).filter(|_| !head);
    let body = match stream {
        Some(chunks) => streamed_route_body(answer.body.clone(), chunks, ended),
        None if head => empty(),
        None => full(answer.body.clone()),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let content_type = HeaderValue::from_str(&answer.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    for (name, value) in &answer.headers {
        if let (Ok(name), Ok(value)) =
            (hyper::header::HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value))
        {
            response.headers_mut().append(name, value);
        }
    }
    if head && answer.stream.is_none() {
        response.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    response
}

/// `first`, then the chunks of `chunks` as they come, until it closes, the client goes (the
/// body is dropped) or `ended` turns true.
pub(super) fn streamed_route_body(
    first: Bytes,
    mut chunks: mpsc::Receiver<Bytes>,
    mut ended: watch::Receiver<bool>,
) -> HttpBody {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        if !first.is_empty() && tx.send(first).await.is_err() {
            return;
        }
        loop {
            let pass_one = async {
                let chunk = chunks.recv().await?;
                tx.send(chunk).await.ok()
            };
            tokio::select! {
                passed = pass_one => {
                    if passed.is_none() {
                        break;
                    }
                }
                _ = ended.wait_for(|ended| *ended) => break,
                () = tx.closed() => break,
            }
        }
    });
    ChannelBody::boxed(rx)
}

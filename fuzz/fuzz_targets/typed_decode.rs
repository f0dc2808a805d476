//! The one-pass typed decode (our JSON reader, `proto/json_read.rs`) against the plain decode
//! (serde_json) as the oracle: the same bytes are accepted or refused by both, and what both
//! accept is the same message. Server side: `tools/call` params; client side: the result of an
//! answer to `tools/call`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpwire::proto::jsonrpc::{decode, decode_answer, decode_typed, Payload};
use mcpwire::proto::mcp_types::{ClientTypedResults, ServerTypedParams};
use serde_json::Value;

/// Each message as a JSON value, or as its bytes when serde_json's `Value` cannot hold it (a raw
/// payload may carry a lone surrogate escape, which the JSON grammar allows and `Value` refuses).
fn as_json(payload: &Payload) -> Vec<Result<Value, Vec<u8>>> {
    let messages = match payload {
        Payload::Single(m) => std::slice::from_ref(m),
        Payload::Batch(ms) => ms.as_slice(),
    };
    messages
        .iter()
        .map(|m| {
            let bytes = m.to_vec();
            serde_json::from_slice(&bytes).map_err(|_| bytes)
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let plain = decode(data, None);
    let typed = decode_typed::<ServerTypedParams>(data, None);
    let answer = decode_answer::<ClientTypedResults>(data, None, "tools/call");
    match (&plain, &typed, &answer) {
        (Ok(p), Ok(t), Ok(a)) => {
            assert_eq!(as_json(p), as_json(t), "typed params");
            assert_eq!(as_json(p), as_json(a), "typed result");
        }
        (Err(p), Err(t), Err(a)) => {
            assert_eq!(p.to_string(), t.to_string());
            assert_eq!(p.to_string(), a.to_string());
        }
        _ => panic!(
            "accepted by one decoder only: plain {:?}, typed {:?}, answer {:?}",
            plain.is_ok(),
            typed.is_ok(),
            answer.is_ok()
        ),
    }
});

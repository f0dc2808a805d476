//! The JSON-RPC envelope of every era, batches included: any bytes decode or are refused without
//! a panic, and what decodes encodes to a message that decodes to the same encoding. (The first
//! input byte picks the session's revision, or none.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpwire::proto::jsonrpc::{decode, Message, Payload};
use mcpwire::proto::version::ProtocolVersion;

fn again(message: &Message) {
    let text = message.to_vec();
    let back = Message::from_slice(&text)
        .unwrap_or_else(|e| panic!("{} does not decode again: {e}", String::from_utf8_lossy(&text)));
    assert_eq!(back.to_vec(), text);
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, input)) = data.split_first() else { return };
    let versions = ProtocolVersion::ALL;
    let version = versions.get(usize::from(knob) % (versions.len() + 1)).copied();
    match decode(input, version) {
        Ok(Payload::Single(message)) => again(&message),
        Ok(Payload::Batch(messages)) => {
            assert_eq!(version, Some(ProtocolVersion::V2025_03_26), "batches only in a 2025-03-26 session");
            messages.iter().for_each(again);
        }
        Err(_) => {}
    }
});

//! The recording reader: any text is read or refused without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpwire::recording::Recording;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = Recording::parse(std::path::Path::new("fuzz.jsonl"), text);
});

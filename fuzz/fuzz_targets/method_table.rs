//! Every method's typed params and result (the run-time method table): any JSON value is taken
//! or refused without a panic, and what is taken encodes to a value that decodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpwire::proto::mcp_types::{all_methods, RoundTrip};
use serde_json::value::RawValue;

fn stable(round_trip: RoundTrip, raw: &RawValue) {
    let Ok(once) = round_trip(raw) else { return };
    let text = serde_json::to_string(&once).expect("a Value encodes");
    let again = RawValue::from_string(text).expect("encoded JSON is JSON");
    let twice = round_trip(&again).unwrap_or_else(|e| panic!("{once} was produced but not taken again: {e}"));
    assert_eq!(once, twice);
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else { return };
    for info in all_methods() {
        stable(info.params, raw);
        if let Some(result) = info.result {
            stable(result, raw);
        }
    }
});

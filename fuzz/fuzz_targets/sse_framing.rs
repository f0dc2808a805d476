//! SSE framing: any bytes, fed in any pieces, give the same events as fed whole, and no event's
//! data is over the cap. (The first input byte picks the cap and the piece size.)
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcpwire::proto::framing::SseDecoder;

fn events(input: &[u8], max: usize, piece: usize) -> Vec<String> {
    let mut decoder = SseDecoder::with_max_event_bytes(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in input.chunks(piece.max(1)) {
        buf.extend_from_slice(chunk);
        while let Some(item) = decoder.decode(&mut buf) {
            out.push(describe(item, max));
        }
    }
    while let Some(item) = decoder.decode_eof(&mut buf) {
        out.push(describe(item, max));
    }
    out.push(format!("last id {:?}, retry {:?}", decoder.last_event_id(), decoder.retry()));
    out
}

fn describe(
    item: Result<mcpwire::proto::framing::SseEvent, mcpwire::proto::framing::FrameError>,
    max: usize,
) -> String {
    match item {
        Ok(event) => {
            assert!(event.data.len() <= max, "an event of {} bytes passed a cap of {max}", event.data.len());
            format!("event {event:?}")
        }
        // How much of an oversized frame had been seen when it was refused depends on the
        // reads; that it was refused, and against which cap, does not.
        Err(mcpwire::proto::framing::FrameError::TooLarge { max, .. }) => format!("too large for {max}"),
        Err(e) => format!("error {e:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, input)) = data.split_first() else { return };
    let max = 1 + usize::from(knob & 0x3f) * 4;
    let piece = 1 + usize::from(knob >> 6) * 5;
    assert_eq!(events(input, max, input.len().max(1)), events(input, max, piece));
});

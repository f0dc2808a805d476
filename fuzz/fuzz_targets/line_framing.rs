//! Line framing: any bytes, fed in any pieces, give the same frames as fed whole; no frame is
//! over the cap, and every frame is UTF-8 without a newline. (The first input byte picks the
//! cap and the piece size.)
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcpwire::proto::framing::LineDecoder;

fn frames(input: &[u8], max: usize, piece: usize) -> Vec<String> {
    let mut decoder = LineDecoder::with_max_frame_bytes(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in input.chunks(piece.max(1)) {
        buf.extend_from_slice(chunk);
        while let Some(item) = decoder.decode(&mut buf) {
            out.push(describe(item, max));
        }
        assert!(buf.len() <= max + 2 + piece, "the buffer grew past the cap plus one read: {}", buf.len());
    }
    while let Some(item) = decoder.decode_eof(&mut buf) {
        out.push(describe(item, max));
    }
    out
}

fn describe(item: Result<mcpwire::proto::framing::Frame, mcpwire::proto::framing::FrameError>, max: usize) -> String {
    match item {
        Ok(frame) => {
            assert!(frame.len() <= max, "a frame of {} bytes passed a cap of {max}", frame.len());
            assert!(!frame.as_str().contains('\n'));
            format!("frame {:?}", frame.as_str())
        }
        // How much of an oversized frame had been seen when it was refused depends on the
        // reads; that it was refused, and against which cap, does not.
        Err(mcpwire::proto::framing::FrameError::TooLarge { max, .. }) => format!("too large for {max}"),
        Err(e) => format!("error {e:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, input)) = data.split_first() else { return };
    let max = 1 + usize::from(knob & 0x3f);
    let piece = 1 + usize::from(knob >> 6) * 7;
    assert_eq!(frames(input, max, input.len().max(1)), frames(input, max, piece));
});

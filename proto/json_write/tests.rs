use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::*;

fn ours<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    to_writer(&mut out, value).unwrap();
    String::from_utf8(out).unwrap()
}

fn theirs<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

#[track_caller]
fn same<T: Serialize + ?Sized>(value: &T) {
    assert_eq!(ours(value), theirs(value));
}

#[test]
fn both_scans_find_the_same_first_escape() {
    // The SSE2 scan (on x86_64: 64-byte steps, then 16) and the portable word scan, for every
    // byte value at every offset of a 100-byte text, with a second special byte after it, from
    // starts in every lane and step; and whether what they passed is ASCII.
    const LEN: usize = 100;
    for special in 0u8..=255 {
        for at in 0..LEN {
            let mut bytes = vec![b'a'; LEN];
            bytes[at] = special;
            bytes[(at + 7) % LEN] = b'"';
            for from in [0, 1, 15, 16, 17, 31, 47, 63, 64, 65, at.saturating_sub(1), at, at + 1] {
                let expected = (from..LEN).find(|&i| is_escaped(bytes[i])).unwrap_or(LEN);
                let ascii = bytes[from.min(expected)..expected].is_ascii();
                let case = format!("byte {special:#x} at {at} from {from}");
                assert_eq!(next_escape(&bytes, from), expected, "{case}");
                assert_eq!(next_escape_by_words(&bytes, from), expected, "{case}");
                assert_eq!(next_escape_ascii(&bytes, from), (expected, ascii), "{case}");
                assert_eq!(scan_by_words::<true>(&bytes, from), (expected, ascii), "{case}");
            }
        }
    }
}

#[test]
fn every_byte_at_every_offset_escapes_as_serde_json_does() {
    // Each ASCII byte (controls, quote, backslash, DEL) and some multi-byte characters, at every
    // position of a 40-byte string, so that each lands in every lane of the 16-byte scan and in
    // the byte-wise tail.
    let specials: Vec<String> =
        (0u8..0x80).map(|b| char::from(b).to_string()).chain(["é", "€", "😀", "\u{2028}"].map(String::from)).collect();
    for special in &specials {
        for at in 0..40 {
            let mut text = "x".repeat(at);
            text.push_str(special);
            text.push_str(&"y".repeat(39 - at));
            same(&text);
            same(&Value::String(text));
        }
    }
    same("");
    same("\"\\\n\u{1f}");
    let long: String =
        (0..70_000).map(|i| if i % 997 == 0 { '\n' } else { char::from(b'a' + (i % 26) as u8) }).collect();
    same(&long);
    let mut out = Vec::new();
    write_str(&mut out, "a\"b").unwrap();
    assert_eq!(out, br#""a\"b""#);
}

#[test]
fn values_numbers_and_raw_json_are_written_as_serde_json_writes_them() {
    same(&json!({
        "null": null, "t": true, "f": false,
        "ints": [0, -1, 1, i64::MIN, i64::MAX, u64::MAX],
        "floats": [0.0, -0.0, 1.5, 1e300, 2.5e-8, 100.0],
        "nested": {"a": [[], {}, [{"b": "c"}]], "": ""},
    }));
    same(&(1u8, -2i16, 3u32, -4i128, u128::MAX, 0.1f32, f64::NAN, f64::INFINITY, 'q', '"'));
    same(&Some(3));
    same(&None::<u8>);
    same(&());
    let raw = RawValue::from_string(r#"{"kept" : [1, 2] }"#.to_owned()).unwrap();
    same(&raw);
    same(&json!([1, raw, 2]));
    same(&serde_bytes_like(b"\x00\xff"));
}

fn serde_bytes_like(bytes: &[u8]) -> impl Serialize + '_ {
    struct Bytes<'a>(&'a [u8]);
    impl Serialize for Bytes<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    Bytes(bytes)
}

#[derive(Serialize)]
enum Shape {
    Unit,
    Newtype(u8),
    Tuple(u8, String),
    Struct {
        a: u8,
        #[serde(skip_serializing_if = "Option::is_none")]
        b: Option<u8>,
    },
}

#[derive(Serialize)]
struct Unit;

#[derive(Serialize)]
struct Wrapper(String);

#[derive(Serialize)]
struct Pair(u8, u8);

#[test]
fn enums_structs_and_map_keys_follow_serde_json() {
    same(&[Shape::Unit, Shape::Newtype(1), Shape::Tuple(2, "x".into()), Shape::Struct { a: 3, b: None }]);
    same(&Shape::Struct { a: 3, b: Some(4) });
    same(&(Unit, Wrapper("w\n".into()), Pair(1, 2)));
    same(&BTreeMap::from([(1i32, "one"), (-2, "minus two")]));
    same(&BTreeMap::from([(true, 1), (false, 0)]));
    same(&BTreeMap::from([('k', 1)]));
    same(&BTreeMap::from([("quote\"key", 1)]));
    same(&BTreeMap::<String, u8>::new());
    // serde_json quotes float keys; this writer refuses them instead of writing them wrongly.
    struct FloatKey;
    impl Serialize for FloatKey {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry(&1.5f64, &1)?;
            map.end()
        }
    }
    assert!(to_writer(&mut Vec::new(), &FloatKey).is_err());
    assert!(to_writer(&mut Vec::new(), &std::collections::HashMap::from([((), 1)])).is_err());
}

#[test]
fn every_bundled_recording_writes_as_serde_json_writes_it() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/conformance/recordings");
    let (mut lines, mut typed) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            same(&value);
            // The size estimate is near the real length (escapes and number widths aside).
            let (estimate, actual) = (estimated_len(&value), ours(&value).len());
            assert!(estimate * 5 >= actual * 4 && estimate * 4 <= actual * 5 + 256, "{estimate} for {actual}: {line}");
            if let Some(message) = value.get("msg") {
                // Typed, when the message is a request or result of a known shape.
                if let Ok(params) =
                    serde_json::from_value::<crate::proto::mcp_types::CallToolRequestParams>(message["params"].clone())
                {
                    same(&params);
                    typed += 1;
                }
                if let Ok(result) =
                    serde_json::from_value::<crate::proto::mcp_types::CallToolResult>(message["result"].clone())
                {
                    same(&result);
                    typed += 1;
                }
            }
            lines += 1;
        }
    }
    assert!(lines > 500 && typed > 50, "read {lines} recorded lines, {typed} typed");
}

#[test]
fn a_failing_writer_is_an_error() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::StorageFull.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    assert!(to_writer(&mut Full, &json!({"a": "b"})).is_err());
}

#[test]
fn the_size_estimate_is_exact_but_for_one_comma_per_container() {
    // Without escapes or floats, the estimate counts a comma before every element, the first
    // too: one byte over per non-empty container.
    let cases = [
        (json!(null), 0),
        (json!({"a": 1, "bb": [true, false, -12], "c": {"d": "text", "e": null}}), 3),
        (json!([]), 0),
        (json!({}), 0),
        (json!(vec!["x"; 40]), 1),
        (json!(u64::MAX), 0),
        (json!(i64::MIN), 0),
    ];
    for (value, over) in cases {
        assert_eq!(estimated_len(&value), ours(&value).len() + over, "{value}");
    }
    // A raw value counts its text (and two quotes).
    let raw = RawValue::from_string(r#"{"k":[1,2]}"#.to_owned()).unwrap();
    assert_eq!(estimated_len(&raw), raw.get().len() + 2);
    // A long string is counted by its length, not read.
    let value = json!({"text": "y".repeat(65_536)});
    assert_eq!(estimated_len(&value), ours(&value).len() + 1);
}

//! The reader against serde_json: whatever the reader accepts, serde_json accepts and reads to
//! the same value; what must be accepted is.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::*;

/// Reads one whole text with the reader.
fn read<T: Deserialize<'static>>(text: &'static [u8]) -> Result<T, Error> {
    let mut reader = Reader::new(text);
    let value = T::deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// Reads `text` as a `Value` both ways. Whatever the reader accepts, serde_json accepts and reads
/// to the same value, written the same (so `-0.0` and `0` differ, and floats compare by bits).
/// Returns whether the reader accepted it.
#[track_caller]
fn agrees(text: &[u8]) -> bool {
    let text: &'static [u8] = Box::leak(text.to_vec().into_boxed_slice());
    let ours = read::<Value>(text);
    let theirs = serde_json::from_slice::<Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{}", String::from_utf8_lossy(text));
            true
        }
        (Ok(a), Err(e)) => panic!("accepted what serde_json refuses ({e}): {} -> {a}", String::from_utf8_lossy(text)),
        (Err(_), _) => false,
    }
}

#[track_caller]
fn accepted_alike(text: &str) {
    assert!(agrees(text.as_bytes()), "refused: {text}");
}

#[track_caller]
fn refused(text: &[u8]) {
    assert!(!agrees(text), "accepted: {}", String::from_utf8_lossy(text));
}

#[test]
fn values_read_as_serde_json_reads_them() {
    for text in [
        "null",
        "true",
        "false",
        "0",
        "-0",
        "1",
        "-1",
        "7.5",
        "-0.0",
        "1e5",
        "1E+5",
        "1e-5",
        "2.5E-3",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "2.2250738585072011e-308",
        "0.1",
        "1.7976931348623157e308",
        "3.141592653589793238462643383279",
        "1e-400",
        r#""""#,
        r#""plain""#,
        r#""\"\\\/\b\f\n\r\t""#,
        r#""\u00e9\u00E9 é ✓ 😀""#,
        r#""\ud83d\ude00""#,
        "\"\u{7f}\"",
        r#""a\u0000b""#,
        "[]",
        "[1]",
        "[1,2,[3,[4]]]",
        " [ 1 , 2 ] ",
        "{}",
        r#"{"a":1}"#,
        r#"{ "a" : [ {} , { "b" : null } ] }"#,
        r#"{"a":1,"a":2}"#,
        r#"{"\u0061":"key with an escape"}"#,
        "\t\r\n 5 \t\r\n",
    ] {
        accepted_alike(text);
    }
}

#[test]
fn what_serde_json_refuses_is_refused() {
    for text in [
        "",
        " ",
        "nul",
        "nulls",
        "tru",
        "True",
        "01",
        "-01",
        "1.",
        ".1",
        "-",
        "+1",
        "1e",
        "1e+",
        "1.5e",
        "0x10",
        "NaN",
        "Infinity",
        "1e400",
        "-1e400",
        "\"",
        "\"abc",
        "\"\\\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        r#""\ud83d""#,
        r#""\ud83dx""#,
        r#""\ude00""#,
        r#""\ud83d\u0041""#,
        "\"a\nb\"",
        "\"\t\"",
        "\"\u{1f}\"",
        "[",
        "[1",
        "[1,]",
        "[,1]",
        "[1 2]",
        "]",
        "{",
        r#"{"a"}"#,
        r#"{"a":}"#,
        r#"{"a":1,}"#,
        r#"{,"a":1}"#,
        r#"{a:1}"#,
        r#"{1:1}"#,
        r#"{"a":1 "b":2}"#,
        "[1] 2",
        "{} x",
        "[1]]",
    ] {
        refused(text.as_bytes());
    }
    refused(b"\"\xff\"");
    refused(b"\"\xc3\"");
    refused(b"[\"ok\", \"\xed\xa0\x80\"]");
}

#[test]
fn strings_without_escapes_are_borrowed() {
    #[derive(Deserialize)]
    struct Borrowing<'a> {
        text: &'a str,
    }
    let value: Borrowing<'_> = read(br#"{"text":"no escapes here"}"#).unwrap();
    assert_eq!(value.text, "no escapes here");
    // As with serde_json, a string with an escape cannot be borrowed.
    assert!(read::<Borrowing<'_>>(br#"{"text":"a\nb"}"#).is_err());
    assert!(serde_json::from_slice::<Borrowing<'_>>(br#"{"text":"a\nb"}"#).is_err());
}

/// Reads `text` as `T` both ways: the same outcome, and the same value when both accept.
#[track_caller]
fn typed_alike<T: DeserializeOwned + PartialEq + fmt::Debug>(text: &'static str) {
    let ours = read::<T>(text.as_bytes());
    let theirs = serde_json::from_str::<T>(text);
    match (ours, theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("{text}: {a:?} against {b:?}"),
    }
}

#[test]
fn typed_values_read_alike() {
    #[derive(Debug, PartialEq, Deserialize)]
    enum Shape {
        Dot,
        Circle(f64),
        Box { w: u32, h: u32 },
        Pair(i8, i8),
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct Record {
        name: String,
        #[serde(default)]
        tags: Vec<String>,
        shape: Option<Shape>,
        small: Option<u8>,
        #[serde(default)]
        flag: bool,
        bytes: Option<serde_bytes_like::Bytes>,
        unit: Option<()>,
        key_map: Option<std::collections::BTreeMap<String, i64>>,
        #[serde(rename = "char")]
        one_char: Option<char>,
    }
    /// A byte buffer as serde's `deserialize_byte_buf` reads it.
    mod serde_bytes_like {
        #[derive(Debug, PartialEq)]
        pub(crate) struct Bytes(pub(crate) Vec<u8>);
        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<Bytes, E> {
                        Ok(Bytes(v.to_vec()))
                    }
                    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
                        let mut out = Vec::new();
                        while let Some(b) = seq.next_element()? {
                            out.push(b);
                        }
                        Ok(Bytes(out))
                    }
                }
                d.deserialize_byte_buf(V)
            }
        }
    }
    for text in [
        r#"{"name":"a","shape":"Dot"}"#,
        r#"{"name":"a","shape":{"Circle":2.5}}"#,
        r#"{"name":"a","shape":{"Box":{"w":1,"h":2}}}"#,
        r#"{"name":"a","shape":{"Pair":[1,-2]}}"#,
        r#"{"name":"a","shape":{"Dot":null}}"#,
        r#"{"name":"a","shape":{"Dot":1}}"#,
        r#"{"name":"a","shape":"Circle"}"#,
        r#"{"name":"a","shape":"Nope"}"#,
        r#"{"name":"a","shape":{"Box":{"w":1,"h":2},"x":1}}"#,
        r#"{"name":"a","shape":7}"#,
        r#"{"name":"a","small":255}"#,
        r#"{"name":"a","small":256}"#,
        r#"{"name":"a","small":-1}"#,
        r#"{"name":"a","small":1.5}"#,
        r#"{"name":"a","flag":true,"tags":["x","y"]}"#,
        r#"{"name":"a","flag":1}"#,
        r#"{"name":5}"#,
        r#"{"name":"a","tags":"x"}"#,
        r#"{"name":"a","bytes":"abc"}"#,
        r#"{"name":"a","bytes":[1,2,255]}"#,
        r#"{"name":"a","unit":null}"#,
        r#"{"name":"a","key_map":{"x":1,"y":-2}}"#,
        r#"{"name":"a","char":"c"}"#,
        r#"{"name":"a","char":"cd"}"#,
        r#"["a",[],null,null,false,null,null,null,null]"#,
        r#"{"tags":[]}"#,
        r#"{"name":"a","unknown":{"deep":[1,{"x":"\u00e9"}]}}"#,
    ] {
        typed_alike::<Record>(text);
    }
}

#[test]
fn nesting_stops_at_the_depth_limit() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    accepted_alike(&nested(MAX_DEPTH as usize));
    // serde_json goes to 128: deeper than our limit is left to it.
    assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH as usize + 1)).is_ok());
    refused(nested(MAX_DEPTH as usize + 1).as_bytes());
    refused(nested(100_000).as_bytes());
}

/// A small deterministic generator (xorshift), so failures repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_string(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &["a", "Z", " ", "é", "✓", "😀", "\n", "\"", "\\", "/", "\u{1}", "\u{7f}", "\u{2028}"];
    (0..rng.below(12)).map(|_| PIECES[rng.below(PIECES.len() as u64) as usize]).collect()
}

fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 4 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => Value::from(rng.next() as i64 >> rng.below(64)),
        3 => Value::from(rng.next() >> rng.below(64)),
        4 => serde_json::Number::from_f64(f64::from_bits(rng.next()) % 1e30).map_or(Value::Null, Value::Number),
        5 => Value::String(random_string(rng)),
        6 => Value::Array((0..rng.below(4)).map(|_| random_value(rng, depth + 1)).collect()),
        _ => Value::Object((0..rng.below(4)).map(|_| (random_string(rng), random_value(rng, depth + 1))).collect()),
    }
}

#[test]
fn random_values_and_their_mutations_read_alike() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut accepted_mutations = 0;
    for _ in 0..3000 {
        let value = random_value(&mut rng, 0);
        let text = if rng.below(2) == 0 {
            serde_json::to_vec(&value).unwrap()
        } else {
            serde_json::to_vec_pretty(&value).unwrap()
        };
        assert!(agrees(&text), "refused: {}", String::from_utf8_lossy(&text));
        // Mutations: whatever of them the reader accepts must read as serde_json reads it.
        for _ in 0..8 {
            let mut mutated = text.clone();
            let at = rng.below(mutated.len() as u64 + 1) as usize;
            const BYTES: &[u8] = b"\"\\{}[],:0-.eE+u \n\x01\xff\xc3\xa9tfnl9";
            let byte = BYTES[rng.below(BYTES.len() as u64) as usize];
            match rng.below(3) {
                0 => mutated.insert(at, byte),
                1 if at < mutated.len() => {
                    mutated.remove(at);
                }
                _ if at < mutated.len() => mutated[at] = byte,
                _ => mutated.push(byte),
            }
            accepted_mutations += usize::from(agrees(&mutated));
        }
    }
    assert!(accepted_mutations > 1000, "{accepted_mutations} mutations accepted");
}

#[test]
fn a_visitor_that_stops_early_leaves_an_error_as_with_serde_json() {
    /// Reads the first member of an object and stops.
    struct First;
    impl<'de> Deserialize<'de> for First {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = First;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<First, A::Error> {
                    map.next_entry::<String, Value>()?;
                    Ok(First)
                }
            }
            d.deserialize_map(V)
        }
    }
    assert!(read::<First>(br#"{"a":1}"#).is_ok());
    assert!(serde_json::from_slice::<First>(br#"{"a":1,"b":2}"#).is_err());
    assert!(read::<First>(br#"{"a":1,"b":2}"#).is_err());
}

#[test]
fn long_strings_are_checked_for_utf8_wherever_the_bad_byte_is() {
    for at in 0..200 {
        let mut text = vec![b'"'];
        text.extend(std::iter::repeat_n(b'a', 200));
        text.push(b'"');
        text[1 + at] = 0xff;
        refused(&text);
        let mut good = String::from("\"");
        good.push_str(&"a".repeat(at));
        good.push('é');
        good.push_str(&"b".repeat(200 - at));
        good.push_str("\\n\"");
        accepted_alike(&good);
    }
}

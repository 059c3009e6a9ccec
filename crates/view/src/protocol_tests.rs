#![allow(clippy::expect_used)]

use std::collections::BTreeMap;

use memviz_core::timeline::Mode;

use super::*;

/// A message's fields as a map, as a JS object holds them.
#[derive(Default)]
struct Map(BTreeMap<&'static str, Value<Vec<u8>>>);

impl Fields for Map {
    type Bytes = Vec<u8>;

    fn text(&self, key: &str) -> Option<String> {
        match self.0.get(key)? {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }

    fn number(&self, key: &str) -> Option<f64> {
        match self.0.get(key)? {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    fn bytes(&self, key: &str) -> Option<Vec<u8>> {
        match self.0.get(key)? {
            Value::Bytes(b) => Some(b.clone()),
            _ => None,
        }
    }
}

fn fields(m: Message<Vec<u8>>) -> Map {
    Map(m.into_fields().into_iter().collect())
}

fn every_message() -> Vec<Message<Vec<u8>>> {
    let mut all: Vec<Message<Vec<u8>>> =
        Phase::ALL.into_iter().map(|phase| Message::Progress { read_bytes: 123_456_789_012, phase }).collect();
    all.extend([
        Message::Part { bytes: vec![1, 2, 3] },
        Message::Head { bytes: vec![9; 40], group: TRACE_GROUP + 7, field: 12 },
        Message::Head { bytes: Vec::new(), group: SNAPSHOT_GROUP, field: 0 },
        Message::ModelEnd,
        Message::Done,
        Message::Profile,
        Message::Error { message: "Could not open x.pickle: it is truncated".into() },
        Message::Unavailable { message: "no WebAssembly module".into() },
        Message::Cancelled,
    ]);
    all
}

#[test]
fn every_message_survives_the_trip_through_its_fields() {
    for m in every_message() {
        let kind = m.kind();
        let map = fields(m.clone());
        assert_eq!(map.text("kind").as_deref(), Some(kind.as_str()));
        assert_eq!(Message::read(&map), Ok(m));
    }
}

#[test]
fn only_bytes_are_transferred() {
    for m in every_message() {
        let has_bytes = matches!(m, Message::Part { .. } | Message::Head { .. });
        assert_eq!(m.transfer().is_some(), has_bytes, "{m:?}");
    }
}

#[test]
fn unknown_and_malformed_messages_are_errors_that_say_why() {
    assert_eq!(Message::read(&Map::default()), Err(ProtocolError::NoKind));
    let mut odd = Map::default();
    odd.0.insert("kind", Value::Text("progres".into()));
    let e = Message::read(&odd).expect_err("unknown kind");
    assert_eq!(e.to_string(), "a message of unknown kind \"progres\"");
    // The scripts' own messages are not the page's to read.
    odd.0.insert("kind", Value::Text(Kind::SliceBack.as_str().into()));
    assert_eq!(Message::read(&odd), Err(ProtocolError::UnknownKind("slice-back".into())));

    let mut head = fields(Message::Head { bytes: vec![1], group: 0, field: 0 });
    head.0.insert("group", Value::Number(-1.0));
    let e = Message::read(&head).expect_err("negative group");
    assert_eq!(e.to_string(), "a \"head\" message without a valid \"group\"");
    head.0.insert("group", Value::Number(1.5));
    assert!(Message::read(&head).is_err());
    head.0.insert("group", Value::Number(2.0));
    head.0.insert("bytes", Value::Text("not bytes".into()));
    assert_eq!(Message::read(&head), Err(ProtocolError::BadField { kind: Kind::Head, field: "bytes" }));

    let mut progress = fields(Message::Progress { read_bytes: 1, phase: Phase::Reading });
    progress.0.insert("phase", Value::Text("Reading".into()));
    assert_eq!(Message::read(&progress), Err(ProtocolError::BadField { kind: Kind::Progress, field: "phase" }));
    progress.0.insert("phase", Value::Text("reading".into()));
    progress.0.insert("readBytes", Value::Number(f64::NAN));
    assert_eq!(Message::read(&progress), Err(ProtocolError::BadField { kind: Kind::Progress, field: "readBytes" }));

    let error = Map([("kind", Value::Text("error".into()))].into_iter().collect());
    assert_eq!(Message::read(&error), Err(ProtocolError::BadField { kind: Kind::Error, field: "message" }));
}

#[test]
fn kinds_and_phases_parse_back() {
    for k in Kind::ALL {
        assert_eq!(Kind::parse(k.as_str()), Some(k));
    }
    for p in Phase::ALL {
        assert_eq!(Phase::parse(p.as_str()), Some(p));
    }
    assert_eq!(Kind::parse("Head"), None);
    assert_eq!(Phase::parse("Reading"), None);
    assert_eq!(Phase::LayingOut.label(), "Laying out the timeline");
}

/// The `NAME: 'value'` entries of `export const <name> = Object.freeze({ ... });` in a script.
fn frozen_entries(script: &str, name: &str) -> Vec<(String, String)> {
    let start = format!("export const {name} = Object.freeze({{");
    let at = script.find(&start).unwrap_or_else(|| panic!("www/protocol.js has no {start}"));
    let body = &script[at + start.len()..];
    let body = &body[..body.find("});").expect("the object ends")];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with("/**") && !l.starts_with('*'))
        .map(|l| {
            let (key, value) = l.split_once(':').unwrap_or_else(|| panic!("not an entry: {l}"));
            let value = value.trim().trim_end_matches(',');
            let value = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or_else(|| panic!("{l}"));
            (key.trim().to_string(), value.to_string())
        })
        .collect()
}

/// The constant's name in `www/protocol.js`: `model-end` is `MODEL_END`.
fn js_name(s: &str) -> String {
    s.to_uppercase().replace('-', "_")
}

#[test]
fn the_scripts_have_the_same_kinds_and_phases() {
    let script = include_str!("../../../www/protocol.js");
    let mut js = frozen_entries(script, "KIND");
    let mut rust: Vec<(String, String)> =
        Kind::ALL.iter().map(|k| (js_name(k.as_str()), k.as_str().to_string())).collect();
    js.sort();
    rust.sort();
    assert_eq!(js, rust, "www/protocol.js KIND and protocol::Kind");
    let mut js = frozen_entries(script, "PHASE");
    let mut rust: Vec<(String, String)> =
        Phase::ALL.iter().map(|p| (js_name(p.as_str()), p.as_str().to_string())).collect();
    js.sort();
    rust.sort();
    assert_eq!(js, rust, "www/protocol.js PHASE and protocol::Phase");
}

#[test]
fn requests_survive_the_trip_to_the_worker() {
    let r = LoadRequest {
        name: "x.pickle".into(),
        preferred_device: Some(-3),
        options: Options { max_entries: 77, mode: Mode::Segments, hide_freed: true, focus_rows: None },
        summary_only: true,
    };
    assert_eq!(decode_request(&encode_request(&r)).expect("request"), r);
    assert!(decode_request(&[0xff; 3]).is_err());
}

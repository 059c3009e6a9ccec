//! Exports of a live set: CSV (one allocation a row), JSON (the live set with every allocation),
//! and a speedscope profile (`https://www.speedscope.app/file-format-schema.json`, "sampled" type:
//! one sample per stack, outermost frame first, weighted by live bytes).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::live::LiveSet;
use super::{
    cpp_short_name, frame_key, is_source_frame, is_unrecorded, life_site_label, site_label, visible_frames, FrameKey,
    Replay, BEFORE_TRACE_LABEL,
};

const BEFORE_TRACE_KEY: FrameKey = (u32::MAX, i64::MIN, u32::MAX);
use crate::format::addr_label;
use crate::snapshot::Snapshot;
use crate::timeline::Origin;

fn origin_name(o: Origin) -> &'static str {
    match o {
        Origin::Traced => "traced",
        Origin::FreedWithoutAlloc => "freed_without_alloc",
        Origin::Ghost => "before_trace",
    }
}

fn csv_field(s: &str, out: &mut String) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// The stack as one line: visible frames, innermost first, ` <- ` between them.
pub fn stack_one_line(snap: &Snapshot, stack: u32) -> String {
    let v: Vec<String> = visible_frames(snap, stack)
        .map(|f| {
            if is_source_frame(f) {
                format!("{}:{}:{}", snap.strings.get(f.filename), f.line, snap.strings.get(f.name))
            } else {
                cpp_short_name(snap.strings.get(f.name)).to_string()
            }
        })
        .collect();
    v.join(" <- ")
}

/// CSV with a header: element, address, size_bytes, stream, alloc_entry, free_entry, origin,
/// site, stack. Rows largest first.
pub fn live_set_csv(snap: &Snapshot, replay: &Replay, live: &LiveSet) -> String {
    let mut out = String::from("element,address,size_bytes,stream,alloc_entry,free_entry,origin,site,stack\n");
    let mut els = live.elements.clone();
    els.sort_by_key(|&e| (std::cmp::Reverse(replay.lives.get(e as usize).map_or(0, |l| l.size_bytes)), e));
    let mut labels: HashMap<u32, (String, String)> = HashMap::new();
    for e in els {
        let Some(l) = replay.lives.get(e as usize) else { continue };
        let (site, stack) = if is_unrecorded(l) {
            (BEFORE_TRACE_LABEL.to_string(), String::new())
        } else {
            labels.entry(l.stack).or_insert_with(|| (site_label(snap, l.stack), stack_one_line(snap, l.stack))).clone()
        };
        let _ = write!(
            out,
            "{e},0x{:x},{},{},{},{},{},",
            l.addr,
            l.size_bytes,
            l.stream,
            l.alloc_row.map_or(String::new(), |r| r.to_string()),
            l.free_row.map_or(String::new(), |r| r.to_string()),
            origin_name(l.origin)
        );
        csv_field(&site, &mut out);
        out.push(',');
        csv_field(&stack, &mut out);
        out.push('\n');
    }
    out
}

/// The live set as JSON ([`LiveSet::to_json`]) plus every allocation.
pub fn live_set_json(snap: &Snapshot, replay: &Replay, live: &LiveSet) -> Value {
    let mut v = live.to_json(snap, 0);
    let allocations: Vec<Value> = live
        .elements
        .iter()
        .filter_map(|&e| {
            let l = replay.lives.get(e as usize)?;
            Some(json!({
                "element": e,
                "address": l.addr.to_string(),
                "label": addr_label('b', l.addr, 0),
                "size_bytes": l.size_bytes,
                "stream": l.stream,
                "alloc_entry": l.alloc_row,
                "free_entry": l.free_row,
                "origin": origin_name(l.origin),
                "stack": l.stack,
                "site": life_site_label(snap, l),
            }))
        })
        .collect();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("allocations".into(), Value::Array(allocations));
    }
    v
}

/// A speedscope file: bytes by stack as a "sampled" profile, unit bytes.
pub fn speedscope(snap: &Snapshot, live: &LiveSet, name: &str) -> Value {
    let mut frames: Vec<Value> = Vec::new();
    let mut frame_index: HashMap<Option<FrameKey>, usize> = HashMap::new();
    let mut samples: Vec<Value> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    for g in &live.by_stack {
        let mut idx: Vec<usize> = Vec::new();
        let fs: Vec<_> = visible_frames(snap, g.stack).collect();
        if fs.is_empty() {
            let (key, label) = if g.before_trace {
                (Some(BEFORE_TRACE_KEY), BEFORE_TRACE_LABEL)
            } else {
                (None, super::NO_FRAMES_LABEL)
            };
            let i = *frame_index.entry(key).or_insert_with(|| {
                frames.push(json!({ "name": label }));
                frames.len() - 1
            });
            idx.push(i);
        }
        for f in fs.iter().rev() {
            let i = *frame_index.entry(Some(frame_key(f))).or_insert_with(|| {
                let mut o = serde_json::Map::new();
                let nm = snap.strings.get(f.name);
                o.insert("name".into(), Value::from(if is_source_frame(f) { nm } else { cpp_short_name(nm) }));
                let file = snap.strings.get(f.filename);
                if !file.is_empty() && file != "??" {
                    o.insert("file".into(), Value::from(file));
                }
                if f.line > 0 {
                    o.insert("line".into(), Value::from(f.line));
                }
                frames.push(Value::Object(o));
                frames.len() - 1
            });
            idx.push(i);
        }
        samples.push(json!(idx));
        weights.push(g.bytes);
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "exporter": format!("memviz {}", env!("CARGO_PKG_VERSION")),
        "name": name,
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": [{
            "type": "sampled",
            "name": name,
            "unit": "bytes",
            "startValue": 0,
            "endValue": live.total_bytes,
            "samples": samples,
            "weights": weights,
        }],
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::live::live_set;
    use crate::analysis::test_util::fixture;
    use crate::analysis::Moment;

    #[test]
    fn exports_add_up() {
        let snap = fixture("growth_leak.pickle");
        let r = Replay::build(&snap, 0);
        let l = live_set(&snap, &r, Moment::Peak).expect("live");
        let csv = live_set_csv(&snap, &r, &l);
        assert_eq!(csv.lines().count(), l.count + 1);
        let sum: u64 = csv.lines().skip(1).filter_map(|x| x.split(',').nth(2)?.parse::<u64>().ok()).sum();
        assert_eq!(sum, l.total_bytes);
        let ss = speedscope(&snap, &l, "peak");
        let w: u64 = ss["profiles"][0]["weights"].as_array().expect("weights").iter().filter_map(Value::as_u64).sum();
        assert_eq!(w, l.total_bytes);
        assert_eq!(ss["profiles"][0]["samples"].as_array().map(Vec::len), Some(l.by_stack.len()));
        let j = live_set_json(&snap, &r, &l);
        assert_eq!(j["allocations"].as_array().map(Vec::len), Some(l.count));
    }

    #[test]
    fn csv_quotes() {
        let mut s = String::new();
        csv_field("a,\"b\"", &mut s);
        assert_eq!(s, "\"a,\"\"b\"\"\"");
    }
}

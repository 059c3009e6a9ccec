//! JSON snapshots (PyTorch's viewer accepts them): the JSON is re-encoded as pickle opcodes and
//! read by the same reader, so both paths build the same model.

use crate::error::Error;
use crate::pickle;
use crate::snapshot::Snapshot;

/// Loads a JSON snapshot.
pub fn load(bytes: &[u8]) -> Result<Snapshot, Error> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| Error::Json { message: e.to_string() })?;
    let mut out = vec![0x80, 4];
    write(&v, &mut out);
    out.push(b'.');
    drop(v);
    let doc = pickle::parse(&out)?;
    let mut snap = Snapshot::from_document(&doc)?;
    snap.source.json = true;
    snap.source.protocol = 0;
    Ok(snap)
}

/// Writes pickle opcodes for a JSON value. serde_json limits nesting to 128 levels, so the
/// recursion here is bounded.
fn write(v: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value as J;
    match v {
        J::Null => out.push(b'N'),
        J::Bool(true) => out.push(0x88),
        J::Bool(false) => out.push(0x89),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push(0x8a);
                out.push(8);
                out.extend_from_slice(&i.to_le_bytes());
            } else if let Some(u) = n.as_u64() {
                out.push(0x8a);
                out.push(9);
                out.extend_from_slice(&u.to_le_bytes());
                out.push(0);
            } else {
                out.push(b'G');
                out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_be_bytes());
            }
        }
        J::String(s) => {
            out.push(0x8d);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        J::Array(items) => {
            out.push(b']');
            if !items.is_empty() {
                out.push(b'(');
                for x in items {
                    write(x, out);
                }
                out.push(b'e');
            }
        }
        J::Object(map) => {
            out.push(b'}');
            if !map.is_empty() {
                out.push(b'(');
                for (k, x) in map {
                    out.push(0x8d);
                    out.extend_from_slice(&(k.len() as u64).to_le_bytes());
                    out.extend_from_slice(k.as_bytes());
                    write(x, out);
                }
                out.push(b'u');
            }
        }
    }
}

//! The events of a Chrome trace that memviz keeps, read from each element's JSON text: the
//! `[memory]` instant events, `cpu_op` and `python_function` ranges (for attribution), and
//! `user_annotation` ranges (`ProfilerStep#N`, `record_function`). Everything else is skipped
//! after its first fields are read.

use std::borrow::Cow;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::error::Error;
use crate::snapshot::Strings;

/// A number field that is left out (`None`) when it holds anything but a number, so an odd
/// field of an event memviz does not use never stops the reading.
#[derive(Clone, Copy, Debug, Default)]
struct Lenient(Option<f64>);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v)))
            }
            fn visit_str<E>(self, _: &str) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Lenient, D::Error> {
                Lenient::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Lenient, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Lenient, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer field (addresses and byte counts are integers in JSON; exact up to 2^64).
#[derive(Clone, Copy, Debug, Default)]
struct LenientInt(Option<i128>);

impl<'de> Deserialize<'de> for LenientInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LenientInt;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_i64<E>(self, v: i64) -> Result<LenientInt, E> {
                Ok(LenientInt(Some(i128::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<LenientInt, E> {
                Ok(LenientInt(Some(i128::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<LenientInt, E> {
                Ok(LenientInt((v.fract() == 0.0 && v.abs() < 9.0e18).then_some(v as i128)))
            }
            fn visit_str<E>(self, s: &str) -> Result<LenientInt, E> {
                // Thread ids of GPU rows are names ("stream 7"); keep them apart by their text.
                Ok(LenientInt(Some(-(i128::from(fx_hash(s.as_bytes()))) - 1)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<LenientInt, E> {
                Ok(LenientInt(None))
            }
            fn visit_unit<E>(self) -> Result<LenientInt, E> {
                Ok(LenientInt(None))
            }
            fn visit_none<E>(self) -> Result<LenientInt, E> {
                Ok(LenientInt(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LenientInt, D::Error> {
                LenientInt::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<LenientInt, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientInt(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<LenientInt, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LenientInt(None))
            }
        }
        d.deserialize_any(V)
    }
}

fn fx_hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

#[derive(Deserialize, Default)]
struct RawArgs {
    #[serde(default, rename = "Addr")]
    addr: LenientInt,
    #[serde(default, rename = "Bytes")]
    bytes: LenientInt,
    #[serde(default, rename = "Total Allocated")]
    total_allocated: LenientInt,
    #[serde(default, rename = "Total Reserved")]
    total_reserved: LenientInt,
    #[serde(default, rename = "Device Type")]
    device_type: LenientInt,
    #[serde(default, rename = "Device Id")]
    device_id: LenientInt,
    #[serde(default, rename = "Ev Idx")]
    ev_idx: LenientInt,
    #[serde(default, rename = "Input Dims")]
    input_dims: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(default, borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    ts: Lenient,
    #[serde(default)]
    dur: Lenient,
    #[serde(default)]
    pid: LenientInt,
    #[serde(default)]
    tid: LenientInt,
    #[serde(default)]
    args: Option<RawArgs>,
}

/// Whose memory an event counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryDevice {
    /// A CUDA device (`Device Type` 1) and its `Device Id`.
    Cuda(i64),
    /// CPU memory (`Device Type` 0).
    Cpu,
    /// Any other device type (its number), kept apart.
    Other(i64, i64),
}

/// One `[memory]` event: an allocation (`bytes_delta > 0`) or a free (`< 0`).
#[derive(Clone, Copy, Debug)]
pub struct MemoryEvent {
    /// Time, µs in the trace's clock.
    pub ts_us: f64,
    /// The profiler's event index, which orders events of the same time.
    pub ev_idx: i64,
    /// The thread (pid and tid hashed together).
    pub thread: u64,
    /// Whose memory.
    pub device: MemoryDevice,
    /// Address.
    pub addr: u64,
    /// Bytes allocated (positive) or freed (negative).
    pub bytes_delta: i64,
    /// The allocator's `Total Allocated` after this event.
    pub total_allocated_bytes: i64,
    /// The allocator's `Total Reserved` after this event.
    pub total_reserved_bytes: i64,
}

/// A range on a thread: a `cpu_op`, a `python_function` or an annotation.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    /// Start, µs in the trace's clock.
    pub start_us: f64,
    /// End, µs.
    pub end_us: f64,
    /// The thread.
    pub thread: u64,
    /// Name, a string id.
    pub name: u32,
    /// Input shapes of an op as text, a string id (0: none recorded).
    pub shapes: u32,
}

/// Everything kept from a trace.
#[derive(Default)]
pub struct Collected {
    /// Interned names.
    pub strings: Strings,
    /// `[memory]` events in file order.
    pub memory: Vec<MemoryEvent>,
    /// `cpu_op` ranges.
    pub ops: Vec<Range>,
    /// `python_function` ranges.
    pub python: Vec<Range>,
    /// `user_annotation` ranges (`ProfilerStep#N`, `record_function`).
    pub annotations: Vec<Range>,
    /// Elements seen.
    pub events: u64,
    /// `baseTimeNanoseconds`, when the header had it.
    pub base_time_ns: Option<i64>,
}

/// Most events kept (memory events, ops, Python calls and annotations together): ~60 bytes
/// each, so at most ~6 GB; a trace with more is refused with a message rather than run out of
/// memory. In the page the 4 GiB of WebAssembly memory ends the loading worker sooner (a 2 GB
/// trace takes ~740 MB there, `docs/performance.md`), and the page says which commands read it.
pub const MAX_KEPT_EVENTS: usize = 100_000_000;

fn thread_key(pid: Option<i128>, tid: Option<i128>) -> u64 {
    let p = pid.unwrap_or(0) as u64;
    let t = tid.unwrap_or(0) as u64;
    p.rotate_left(32) ^ t
}

/// Input Dims as text: `[2048, 768], [768, 2304]`, scalars and absent inputs left out.
fn shapes_text(v: &serde_json::Value) -> String {
    fn one(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    one(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    if let serde_json::Value::Array(inputs) = v {
        for x in inputs.iter().filter(|x| !matches!(x, serde_json::Value::Array(a) if a.is_empty())) {
            if !out.is_empty() {
                out.push_str(", ");
            }
            one(x, &mut out);
        }
    }
    out
}

impl Collected {
    fn kept(&self) -> usize {
        self.memory.len() + self.ops.len() + self.python.len() + self.annotations.len()
    }

    /// Reads one element of `traceEvents`.
    pub fn add(&mut self, text: &[u8]) -> Result<(), Error> {
        self.events += 1;
        let ev: RawEvent = serde_json::from_slice(text).map_err(|e| Error::Trace {
            reason: format!("event {} of the profiler trace is not valid JSON: {e}", self.events),
        })?;
        let (Some(ph), Some(name)) = (ev.ph.as_deref(), ev.name.as_deref()) else { return Ok(()) };
        let Some(ts_us) = ev.ts.0 else { return Ok(()) };
        let thread = thread_key(ev.pid.0, ev.tid.0);
        let cat = ev.cat.as_deref().unwrap_or("");
        if self.kept() >= MAX_KEPT_EVENTS {
            return Err(Error::Trace {
                reason: format!(
                    "this profiler trace holds over {MAX_KEPT_EVENTS} memory, op and Python events, more than memviz keeps in memory: profile fewer steps (torch.profiler.schedule)"
                ),
            });
        }
        if ph == "i" && name == "[memory]" {
            let args = ev.args.unwrap_or_default();
            let (Some(addr), Some(bytes)) = (args.addr.0, args.bytes.0) else { return Ok(()) };
            let device = match (args.device_type.0, args.device_id.0) {
                (Some(1), id) => MemoryDevice::Cuda(id.unwrap_or(0) as i64),
                (Some(0) | None, _) => MemoryDevice::Cpu,
                (Some(t), id) => MemoryDevice::Other(t as i64, id.unwrap_or(0) as i64),
            };
            self.memory.push(MemoryEvent {
                ts_us,
                ev_idx: args.ev_idx.0.unwrap_or(0) as i64,
                thread,
                device,
                addr: addr as u64,
                bytes_delta: bytes as i64,
                total_allocated_bytes: args.total_allocated.0.unwrap_or(0) as i64,
                total_reserved_bytes: args.total_reserved.0.unwrap_or(0) as i64,
            });
            return Ok(());
        }
        if ph != "X" {
            return Ok(());
        }
        let end_us = ts_us + ev.dur.0.unwrap_or(0.0).max(0.0);
        match cat {
            "cpu_op" => {
                let shapes = match ev.args.as_ref().and_then(|a| a.input_dims.as_ref()).map(shapes_text) {
                    Some(s) if !s.is_empty() => self.strings.intern(&s),
                    _ => 0,
                };
                let name = self.strings.intern(name);
                self.ops.push(Range { start_us: ts_us, end_us, thread, name, shapes });
            }
            "python_function" => {
                let name = self.strings.intern(name);
                self.python.push(Range { start_us: ts_us, end_us, thread, name, shapes: 0 });
            }
            "user_annotation" => {
                let name = self.strings.intern(name);
                self.annotations.push(Range { start_us: ts_us, end_us, thread, name, shapes: 0 });
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_ops_and_python_are_kept() {
        let mut c = Collected::default();
        for e in [
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 5, "args": {"Input Dims": [[2, 3], [], [3, 4]]}}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "a.py(3): f", "pid": 1, "tid": 2, "ts": 1, "dur": 50}"#,
            r#"{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 12, "args": {"Addr": 18446744073709551615, "Bytes": -512, "Total Allocated": 0, "Device Type": 1, "Device Id": 3, "Ev Idx": 7}}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 1, "dur": 2, "args": {"Device Id": "odd"}}"#,
        ] {
            c.add(e.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!((c.ops.len(), c.python.len(), c.memory.len(), c.events), (1, 1, 1, 4));
        assert_eq!(c.strings.get(c.ops[0].shapes), "[2, 3], [3, 4]");
        let m = c.memory[0];
        assert_eq!((m.device, m.addr, m.bytes_delta, m.ev_idx), (MemoryDevice::Cuda(3), u64::MAX, -512, 7));
        assert!(c.add(b"{\"ph\": ").is_err());
    }
}

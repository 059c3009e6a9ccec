//! Profiler traces read as snapshots: the real trace of a small GPT against the figures of
//! `tests/gen/verify_profiler_trace.py`, attribution, annotations, and bad input.

use crate::snapshot::DeviceKind;
use crate::test_fixtures::fixture;

fn gpt_trace() -> (crate::Snapshot, Vec<super::DeviceTotals>) {
    let bytes = std::fs::read(fixture("real", "gpt_profile.trace.json.gz")).unwrap_or_default();
    let (_, plain) = crate::input::unpack(&bytes).unwrap_or_else(|e| panic!("{e}"));
    super::load(&plain).unwrap_or_else(|e| panic!("{e}"))
}

/// Figures from `python3 tests/gen/verify_profiler_trace.py tests/data/real/gpt_profile.trace.json.gz`.
#[test]
fn gpt_trace_peaks_equal_the_profilers_total_allocated() {
    let (snap, totals) = gpt_trace();
    let names: Vec<String> = snap.devices.iter().map(|d| d.name()).collect();
    assert_eq!(names, ["cuda:0", "cpu"]);
    assert_eq!(snap.devices.iter().map(|d| d.trace.len()).collect::<Vec<_>>(), [1596, 81]);
    assert_eq!(snap.devices.get(1).map(|d| d.kind), Some(DeviceKind::Cpu));
    let cuda = totals.iter().find(|t| t.index == 0).map(|t| (t.peak_total_allocated_bytes, t.before_bytes));
    assert_eq!(cuda, Some((653_884_928, 46_491_648)));
    // The model's own replay reaches the same peak, the memory from before the trace included.
    for (pos, want) in [(0usize, 653_884_928u64), (1, 204)] {
        assert_eq!(crate::info::peak_live_bytes(&snap, pos).0, want, "device {pos}");
    }
    let info = crate::info::info(&snap);
    let d0 = info.devices.first().map(|d| (d.peak_allocated_bytes, d.final_allocated_bytes));
    assert_eq!(d0, Some((653_884_928, 273_382_400)));
    // The stacked layout draws the same peak.
    let layout = crate::timeline::Layout::build(&snap, 0, crate::timeline::Options::default());
    assert_eq!(layout.peak_bytes, 653_884_928);
}

#[test]
fn gpt_trace_allocations_carry_their_op_shapes_and_python_stack() {
    let (snap, _) = gpt_trace();
    let dev = snap.devices.first().map(|d| &d.trace);
    let Some(trace) = dev else { panic!("no device") };
    // Every allocation of the forward and backward passes sits inside an op.
    let with_op = (0..trace.len()).filter(|&r| trace.stack.get(r).is_some_and(|&s| s != 0)).count();
    assert_eq!(with_op, trace.len());
    // An addmm's allocation: the op innermost, with its input shapes, then Python frames.
    let row = (0..trace.len())
        .find(|&r| {
            let s = trace.stack.get(r).copied().unwrap_or(0);
            snap.stack_frames(s).next().is_some_and(|f| snap.strings.get(f.name) == "aten::addmm")
        })
        .unwrap_or_else(|| panic!("no aten::addmm allocation"));
    let s = trace.stack.get(row).copied().unwrap_or(0);
    let lines = crate::format::stack_lines(&snap, s);
    assert!(lines.first().is_some_and(|l| l.ends_with("aten::addmm")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("input shapes: [")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("train.py:")), "{lines:?}");
    // Frames of the Python stack are source frames (file, line, function).
    let py = snap.stack_frames(s).find(|f| f.line > 0).map(|f| snap.strings.get(f.filename).to_owned());
    assert!(py.is_some_and(|f| f.ends_with(".py")));
}

#[test]
fn gpt_trace_steps_and_record_function_ranges_are_annotations() {
    let (snap, _) = gpt_trace();
    let names: std::collections::BTreeSet<&str> =
        snap.annotations.iter().filter(|a| a.device == 0 && a.start).map(|a| snap.strings.get(a.name)).collect();
    for want in ["ProfilerStep#1", "## forward ##", "## backward ##", "## optimizer ##"] {
        assert!(names.contains(want), "{want} missing from {names:?}");
    }
    // Times are µs since the epoch, as in snapshots: 2026, from baseTimeNanoseconds.
    let t0 = snap.devices.first().and_then(|d| d.trace.time_us_at(0)).unwrap_or(0);
    assert!((1_700_000_000_000_000..1_900_000_000_000_000).contains(&t0), "{t0}");
}

#[test]
fn bad_traces_say_what_is_wrong() {
    let bytes = std::fs::read(fixture("real", "gpt_profile.trace.json.gz")).unwrap_or_default();
    let (_, plain) = crate::input::unpack(&bytes).unwrap_or_else(|e| panic!("{e}"));
    // Cut in the middle.
    let cut = plain.get(..plain.len() / 2).unwrap_or_default();
    let e = crate::load(cut).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("cut off") && e.contains("complete events"), "{e}");
    // Through the chunked loader too, in small chunks.
    let mut l = crate::PlainLoader::new(None);
    let fed: Result<(), crate::Error> = cut.chunks(4096).try_for_each(|c| l.feed(c));
    let e = fed.and_then(|()| l.finish().map(|_| ())).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("cut off"), "{e}");
    // No memory events: how to record them.
    let none = br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}"#;
    let e = crate::load(none).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("no memory events") && e.contains("profile_memory=True"), "{e}");
    // Wrong shape of traceEvents.
    let e = crate::load(br#"{"schemaVersion": 1, "traceEvents": {"a": 1}}"#).err().map(|e| e.to_string());
    assert!(e.as_deref().is_some_and(|e| e.contains("traceEvents is not a list")), "{e:?}");
}

#[test]
fn chunked_loading_equals_whole_loading() {
    let bytes = std::fs::read(fixture("real", "gpt_profile.trace.json.gz")).unwrap_or_default();
    let mut l = crate::Loader::new(Some(bytes.len() as u64));
    for c in bytes.chunks(1000) {
        l.feed(c).unwrap_or_else(|e| panic!("{e}"));
    }
    let a = l.finish().unwrap_or_else(|e| panic!("{e}"));
    let (b, _) = gpt_trace();
    assert_eq!(a.devices.len(), b.devices.len());
    for (x, y) in a.devices.iter().zip(&b.devices) {
        assert_eq!((&x.trace.addr, &x.trace.stack), (&y.trace.addr, &y.trace.stack));
    }
}

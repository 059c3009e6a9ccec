//! Every format variant of a memory snapshot, each with a small pickle written here (and the
//! synthetic data files where they exist): what the model makes of it, and that it loads at all.

use crate::common::{
    self,
    snap::{block, entry, frame, segment, snapshot},
};
use crate::common::{dict, dumps, i, list, s, shared, to_json, typical, Py};
use memviz_core::info::info;
use memviz_core::snapshot::{Action, BlockState, WarningKind};
use memviz_core::{load, reference, Error, Loader, Snapshot};

fn load_ok(v: &Py, protocol: u8) -> Snapshot {
    let b = dumps(v, protocol);
    load(&b).unwrap_or_else(|e| panic!("protocol {protocol}: {e}"))
}

fn one_trace(entries: Vec<Py>) -> Py {
    snapshot(vec![], vec![entries])
}

/// Stats, trace and summary as one text, for comparing models.
fn fingerprint(snap: &Snapshot) -> String {
    let stats = reference::stats(snap).unwrap_or_else(|e| format!("error: {e}"));
    let trace = reference::trace(snap).unwrap_or_else(|e| format!("error: {e}"));
    let mut i = info(snap);
    i.protocol = 0;
    i.format_notes.retain(|n| *n != "json");
    format!("{stats}\n---\n{trace}\n---\n{i:?}")
}

fn synth(name: &str) -> Vec<u8> {
    common::read(&common::fixture("synth", name))
}

#[test]
fn bare_list_of_segments() {
    let f = list(vec![frame("f", "a.py", 1)]);
    let v = list(vec![
        segment(
            0,
            1 << 30,
            2 << 20,
            vec![block(1 << 20, 1000, "active_allocated", f.clone()), block(1 << 20, 0, "inactive", list(vec![]))],
        ),
        segment(1, 1 << 31, 1 << 20, vec![block(1 << 20, 1 << 20, "active_allocated", f)]),
    ]);
    for p in [2, 4] {
        let snap = load_ok(&v, p);
        assert!(snap.source.bare_segment_list);
        assert_eq!(snap.segments.len(), 2);
        assert_eq!(snap.blocks.len(), 3);
        assert_eq!(snap.blocks[0].requested_size, 1000);
        // Devices come from the segments.
        assert_eq!(snap.devices.iter().map(|d| d.index).collect::<Vec<_>>(), vec![0, 1]);
        let stats = reference::stats(&snap).expect("stats");
        assert!(stats.contains("segments: 2\n"), "{stats}");
        match reference::trace(&snap) {
            Err(Error::NotASnapshot { found }) => assert!(found.contains("bare list"), "{found}"),
            other => panic!("{other:?}"),
        }
        assert!(info(&snap).format_notes.iter().any(|n| n.starts_with("segment list only, no trace")));
    }
    for name in ["bare_list_legacy.pickle", "bare_list_modern.pickle"] {
        {
            let b = synth(name);
            let snap = load(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(snap.source.bare_segment_list, "{name}");
        }
    }
}

#[test]
fn legacy_blocks_with_history() {
    let f = shared(list(vec![frame("old_alloc", "legacy.py", 3)]));
    let legacy_block = |size: i128, real: Option<i128>, state: &str| {
        let mut pairs = vec![("size", i(size)), ("state", s(state))];
        if let Some(r) = real {
            pairs.push((
                "history",
                list(vec![dict(vec![("addr", i(1 << 30)), ("real_size", i(r)), ("frames", f.clone())])]),
            ));
        }
        dict(pairs)
    };
    let v = dict(vec![
        (
            "segments",
            list(vec![segment(
                0,
                1 << 30,
                3 << 20,
                vec![
                    legacy_block(1 << 20, Some(777), "active_allocated"),
                    legacy_block(1 << 20, None, "active_allocated"),
                    legacy_block(1 << 20, None, "inactive"),
                ],
            )]),
        ),
        ("device_traces", list(vec![list(vec![])])),
    ]);
    let snap = load_ok(&v, 4);
    assert!(snap.source.legacy_history);
    let b = &snap.blocks;
    assert_eq!(b.len(), 3);
    assert_eq!(b[0].requested_size, 777, "from the first history entry's real_size");
    assert_ne!(b[0].stack, 0, "stack from the first history entry");
    let names: Vec<&str> = snap.stack_frames(b[0].stack).map(|fr| snap.strings.get(fr.name)).collect();
    assert_eq!(names, ["old_alloc"]);
    assert_eq!(b[1].requested_size, 1 << 20, "no history: the block size");
    assert_eq!(b[1].stack, 0);
    assert_eq!(b[2].state, BlockState::Inactive);
    // Addresses follow the segment start plus earlier block sizes.
    assert_eq!(b[2].address, (1 << 30) + (2 << 20));
    reference::stats(&snap).expect("stats");
    for name in ["legacy_history.pickle", "legacy_no_history.pickle", "legacy_empty_history.pickle"] {
        {
            let b = synth(name);
            let snap = load(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            let _ = reference::stats(&snap);
        }
    }
}

#[test]
fn entries_without_time_us_or_frames() {
    let v = one_trace(vec![
        entry("alloc", 4096, 512, None, None),
        entry("free_requested", 4096, 512, None, None),
        entry("free_completed", 4096, 512, None, None),
    ]);
    for p in 0..=5 {
        let snap = load_ok(&v, p);
        let t = &snap.devices[0].trace;
        assert_eq!(t.len(), 3);
        assert!(!t.has_time(), "protocol {p}");
        assert_eq!(t.time_us_at(0), None);
        assert!(t.stack.iter().all(|&st| st == 0));
        assert!(!info(&snap).recording.has_time);
        assert_eq!(info(&snap).recording.stacks, "none");
    }
    // Mixed: only some entries have a time.
    let v = one_trace(vec![
        entry("alloc", 4096, 512, None, None),
        entry("free_requested", 4096, 512, Some(5), None),
        entry("free_completed", 4096, 512, None, None),
    ]);
    let snap = load_ok(&v, 4);
    let t = &snap.devices[0].trace;
    assert_eq!((t.time_us_at(0), t.time_us_at(1), t.time_us_at(2)), (None, Some(5), None));
    for name in ["no_time_us.pickle", "no_frames.pickle"] {
        {
            let b = synth(name);
            load(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn oom_without_addr_keeps_device_free() {
    let oom = dict(vec![
        ("action", s("oom")),
        ("size", i(1 << 30)),
        ("stream", i(0)),
        ("device_free", i(12_345_678)),
        ("time_us", i(9)),
    ]);
    let v = one_trace(vec![entry("alloc", 4096, 512, Some(1), None), oom]);
    let snap = load_ok(&v, 4);
    let t = &snap.devices[0].trace;
    assert_eq!(t.action[1], Action::Oom);
    assert_eq!(t.addr[1], 0);
    assert_eq!(t.size_bytes[1], 1 << 30);
    assert_eq!(t.device_free_at(1), Some(12_345_678));
    assert_eq!(t.device_free_at(0), None);
    let trace = reference::trace(&snap).expect("trace");
    assert!(trace.contains("raise OutOfMemoryError # 1.0GiB requested, 11.8MiB free in CUDA\n"), "{trace}");
    assert_eq!(info(&snap).devices[0].ooms, 1);
}

#[test]
fn user_defined_and_merged_free_actions() {
    let ud = dict(vec![
        ("action", s("user_defined")),
        ("addr", i(0)),
        ("size", i(0)),
        ("stream", i(0)),
        ("time_us", i(3)),
        ("user_metadata", s("step 1")),
    ]);
    let v = one_trace(vec![entry("alloc", 4096, 512, Some(1), None), ud, entry("free", 4096, 512, Some(4), None)]);
    let snap = load_ok(&v, 4);
    let t = &snap.devices[0].trace;
    assert_eq!(t.action, vec![Action::Alloc, Action::UserDefined, Action::Free]);
    assert!(snap.warnings.is_empty(), "{:?}", snap.warnings);
    // A merged free ends the allocation: nothing is live at the end.
    let d = &info(&snap).devices[0];
    assert_eq!(d.peak_allocated_bytes, 512);
    assert!(d.actions.contains(&("user_defined", 1)) && d.actions.contains(&("free", 1)), "{:?}", d.actions);
    // `trace` prints entries it has no rule for verbatim, like Python's print(dict).
    let trace = reference::trace(&snap).expect("trace");
    assert!(trace.contains("'action': 'user_defined'") && trace.contains("'action': 'free'"), "{trace}");
    for name in ["user_defined.pickle", "historical_free.pickle"] {
        {
            let b = synth(name);
            load(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn segment_map_and_unmap() {
    let mb = 1i128 << 20;
    let v = one_trace(vec![
        entry("segment_map", 1 << 40, 2 * mb, Some(1), None),
        entry("alloc", 1 << 40, 2 * mb, Some(2), None),
        entry("segment_map", (1 << 40) + 2 * mb, 4 * mb, Some(3), None),
        entry("free_completed", 1 << 40, 2 * mb, Some(4), None),
        entry("segment_unmap", 1 << 40, 2 * mb, Some(5), None),
    ]);
    let snap = load_ok(&v, 4);
    let t = &snap.devices[0].trace;
    assert_eq!(t.action[0], Action::SegmentMap);
    assert_eq!(t.action[4], Action::SegmentUnmap);
    let d = &info(&snap).devices[0];
    // No segments at the end: reserved starts at 2 MiB unmapped... the replay starts from
    // final (0) minus the net change (+4 MiB), clamped at 0, and peaks at 6 MiB.
    assert_eq!(d.peak_reserved_bytes, (6 * mb) as u64);
    reference::trace(&snap).expect("trace");
    {
        let b = synth("expandable.pickle");
        let snap = load(&b).expect("expandable.pickle");
        assert!(snap.segments.iter().any(|s| s.is_expandable));
        assert!(snap.devices.iter().any(|d| d.trace.action.contains(&Action::SegmentMap)));
    }
}

#[test]
fn addresses_at_and_above_2_53_and_2_63_are_exact() {
    let addrs: [u64; 6] = [(1 << 53) + 1, (1 << 53) + 3, (1 << 63) - 1, 1 << 63, (1 << 63) + 5, u64::MAX];
    let entries: Vec<Py> = addrs.iter().map(|&a| entry("alloc", i128::from(a), 512, Some(1), None)).collect();
    let segs = vec![segment(
        0,
        i128::from(addrs[4]),
        1 << 20,
        vec![block(1 << 20, 1 << 20, "active_allocated", list(vec![]))],
    )];
    let v = snapshot(segs, vec![entries]);
    for p in 0..=5 {
        let snap = load_ok(&v, p);
        assert_eq!(snap.devices[0].trace.addr, addrs, "protocol {p}");
        assert_eq!(snap.segments[0].address, addrs[4], "protocol {p}");
        assert_eq!(snap.blocks[0].address, addrs[4], "protocol {p}");
    }
    // The same through JSON (floats would lose the low bits).
    let snap = load(to_json(&v).as_bytes()).expect("json");
    assert_eq!(snap.devices[0].trace.addr, addrs);
    // And printed exactly.
    let v = one_trace(vec![entry("segment_alloc", i128::from(addrs[4]), 1 << 20, Some(1), None)]);
    let trace = reference::trace(&load_ok(&v, 4)).expect("trace");
    assert!(trace.contains("a = cudaMalloc(9223372036854775813, 1.0MiB)"), "{trace}");
    for name in ["addr_2_53.pickle", "addr_2_63.pickle"] {
        {
            let b = synth(name);
            load(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn profile_plot_category_column() {
    let cat = |action: &str, addr: i128, c: Option<&str>| {
        let mut pairs = vec![("action", s(action)), ("addr", i(addr)), ("size", i(1024)), ("stream", i(0))];
        if let Some(c) = c {
            pairs.push(("category", s(c)));
        }
        dict(pairs)
    };
    let v = one_trace(vec![
        cat("alloc", 4096, Some("activation")),
        cat("alloc", 8192, None),
        cat("alloc", 16384, Some("parameter")),
    ]);
    let snap = load_ok(&v, 4);
    let t = &snap.devices[0].trace;
    assert!(t.category.is_present());
    let names: Vec<&str> = (0..3).map(|r| snap.strings.get(t.category.get(r).unwrap_or(0))).collect();
    assert_eq!(names, ["activation", "", "parameter"]);
    {
        let b = synth("profile_plot.pickle");
        let snap = load(&b).expect("profile_plot.pickle");
        assert!(snap.devices.iter().any(|d| d.trace.category.is_present()));
    }
}

#[test]
fn several_devices_with_empty_traces() {
    let mk = |n: usize, base: i128| -> Vec<Py> {
        (0..n).map(|k| entry("alloc", base + 4096 * k as i128, 512, Some(1), None)).collect()
    };
    let segs = vec![segment(5, 1 << 40, 1 << 20, vec![block(1 << 20, 0, "inactive", list(vec![]))])];
    let v = snapshot(segs, vec![vec![], mk(3, 1 << 30), mk(5, 1 << 31), vec![]]);
    let snap = load_ok(&v, 4);
    let idx: Vec<i64> = snap.devices.iter().map(|d| d.index).collect();
    assert_eq!(idx, [0, 1, 2, 3, 5], "devices from device_traces plus those with segments only");
    let lens: Vec<usize> = snap.devices.iter().map(|d| d.trace.len()).collect();
    assert_eq!(lens, [0, 3, 5, 0, 0]);
    assert_eq!(snap.default_device(), Some(2), "the longest trace");
    // `trace` skips empty devices.
    let trace = reference::trace(&snap).expect("trace");
    assert!(trace.starts_with("Device 1 ----------------\n3 entries\n"), "{trace}");
    assert!(
        trace.contains("Device 2 ----------------\n5 entries\n")
            && !trace.contains("Device 0")
            && !trace.contains("Device 3")
    );
    // Ties go to the lowest index; all-empty picks the first device.
    let snap = load_ok(&snapshot(vec![], vec![vec![], mk(2, 0), mk(2, 1 << 20)]), 4);
    assert_eq!(snap.default_device(), Some(1));
    let snap = load_ok(&snapshot(vec![], vec![vec![], vec![]]), 4);
    assert_eq!(snap.default_device(), Some(0));
    let snap = load_ok(&snapshot(vec![], vec![]), 4);
    assert_eq!(snap.default_device(), None);
    {
        let b = synth("multi_device.pickle");
        let snap = load(&b).expect("multi_device.pickle");
        assert!(snap.devices.len() >= 2);
    }
}

#[test]
fn json_snapshot_gives_the_same_model_as_its_pickle() {
    let v = typical();
    let from_pickle = load_ok(&v, 4);
    let json = to_json(&v);
    let from_json = load(json.as_bytes()).expect("json");
    assert!(from_json.source.json);
    if let Some(d) = common::first_diff(&fingerprint(&from_pickle), &fingerprint(&from_json)) {
        panic!("JSON and pickle differ: {d}");
    }
    // Fed in chunks.
    let mut l = Loader::new(None);
    json.as_bytes().chunks(5).try_for_each(|c| l.feed(c)).expect("feed");
    let chunked = l.finish().expect("finish");
    assert_eq!(fingerprint(&chunked), fingerprint(&from_json));
    // Leading whitespace is still JSON.
    let padded = format!("\n  \t{json}");
    assert_eq!(fingerprint(&load(padded.as_bytes()).expect("padded json")), fingerprint(&from_json));
    // The generated twins, when present.
    {
        let (j, p) = (synth("json_snapshot.json"), synth("json_snapshot.pickle"));
        let a = load(&j).expect("json_snapshot.json");
        let b = load(&p).expect("json_snapshot.pickle");
        if let Some(d) = common::first_diff(&fingerprint(&b), &fingerprint(&a)) {
            panic!("json_snapshot.json and .pickle differ: {d}");
        }
    }
    // Broken JSON names line and column.
    let msg = load(b"{\"segments\": [1, 2,").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("JSON") && msg.contains("line 1"), "{msg}");
}

#[test]
fn protocols_0_to_5_give_identical_output() {
    let v = typical();
    let expected = fingerprint(&load_ok(&v, 4));
    for p in 0..=5 {
        let snap = load_ok(&v, p);
        assert_eq!(snap.source.protocol, if p >= 2 { p } else { 0 });
        if let Some(d) = common::first_diff(&expected, &fingerprint(&snap)) {
            panic!("protocol {p} differs from protocol 4: {d}");
        }
        assert!(snap.warnings.is_empty(), "protocol {p}: {:?}", snap.warnings);
    }
    // The generated files, one per protocol, hold the same data.
    let files: Vec<Vec<u8>> = (0..=5).map(|p| synth(&format!("typical_p{p}.pickle"))).collect();
    let texts: Vec<String> = files.iter().map(|b| fingerprint(&load(b).expect("typical_pN"))).collect();
    for (p, t) in texts.iter().enumerate().skip(1) {
        if let Some(d) = common::first_diff(&texts[0], t) {
            panic!("typical_p{p} differs from the first: {d}");
        }
    }
}

#[test]
fn typical_snapshot_reads_as_expected() {
    let snap = load_ok(&typical(), 4);
    assert_eq!(snap.devices.len(), 2);
    assert_eq!(snap.annotations.len(), 2);
    assert!(snap.allocator_settings.is_some());
    assert_eq!(snap.streams.len(), 2, "stream 0 and the one odd stream");
    assert_eq!(snap.stream_raw(1), 94_000_000_000_000);
    let i = info(&snap);
    assert_eq!(i.recording.stacks, "all");
    assert_eq!(i.devices[0].ooms, 1);
    let stats = reference::stats(&snap).expect("stats");
    assert!(stats.starts_with("Summary of segments >= 20.0MiB in size\n[a] 20.0MiB allocated"), "{stats}");
    let trace = reference::trace(&snap).expect("trace");
    assert!(trace.contains("b = seg_0[0:195.3KiB]") || trace.contains("b = a[0:195.3KiB]"), "{trace}");
}

#[test]
fn shared_frame_lists_are_interned_once() {
    let frames = shared(list((0..40).map(|k| frame(&format!("fn{k}"), "/home/user/project/deep.py", k)).collect()));
    let entries: Vec<Py> = (0..1000).map(|k| entry("alloc", 4096 * k, 512, Some(k), Some(frames.clone()))).collect();
    let v = one_trace(entries.clone());
    let b = dumps(&v, 4);
    // Sharing in the file: the frames are written once.
    assert!(b.len() < 100_000, "{} bytes", b.len());
    let snap = load(&b).expect("loads");
    assert_eq!(snap.stacks.len(), 2, "the empty stack and the one shared list");
    assert_eq!(snap.frames.len(), 40);
    let t = &snap.devices[0].trace;
    assert!(t.stack.iter().all(|&st| st == t.stack[0] && st != 0));
    // Without sharing (JSON, or a list per entry) frames are still interned by content.
    let snap = load(to_json(&v).as_bytes()).expect("json");
    assert_eq!(snap.stacks.len(), 2);
    assert_eq!(snap.frames.len(), 40);
    // Shared frame dicts in distinct lists of different lengths.
    let fr: Vec<Py> = (0..10).map(|k| shared(frame(&format!("g{k}"), "x.py", k))).collect();
    let entries: Vec<Py> =
        (1..=10).map(|n| entry("alloc", 4096 * n as i128, 512, None, Some(list(fr[..n].to_vec())))).collect();
    let snap = load_ok(&one_trace(entries), 4);
    assert_eq!(snap.frames.len(), 10);
    assert_eq!(snap.stacks.len(), 11);
}

#[test]
fn inconsistent_traces_load_with_warnings() {
    let v = one_trace(vec![
        entry("free_completed", 4096, 512, Some(1), None), // free without alloc
        entry("alloc", 8192, 512, Some(2), None),
        entry("alloc", 8192, 512, Some(3), None), // double alloc
        entry("free_completed", 8192, 512, Some(4), None),
        entry("free_completed", 12288, 512, Some(5), None), // another free without alloc
        entry("teleport", 0, 0, Some(6), None),             // unknown action
        dict(vec![("addr", i(1)), ("size", i(2))]),         // no action at all
    ]);
    let snap = load_ok(&v, 4);
    let w = |k: WarningKind| snap.warnings.iter().find(|w| w.kind == k).map(|w| (w.count, w.example.clone()));
    let (n, ex) = w(WarningKind::FreeWithoutAlloc).expect("free without alloc");
    assert_eq!(n, 2);
    assert!(ex.contains("0x1000"), "{ex}");
    let (n, ex) = w(WarningKind::DoubleAlloc).expect("double alloc");
    assert_eq!(n, 1);
    assert!(ex.contains("0x2000"), "{ex}");
    let (n, ex) = w(WarningKind::UnknownAction).expect("unknown action");
    assert_eq!(n, 2);
    assert!(ex.contains("teleport"), "{ex}");
    assert_eq!(snap.devices[0].trace.len(), 7);
    reference::trace(&snap).expect("trace still prints");
    assert!(!info(&snap).warnings.is_empty());
    // Without the traces' checks: the same model, less their two kinds of warning.
    let mut loader = Loader::new(None);
    loader.feed(&dumps(&v, 4)).expect("feed");
    let skipped = loader.finish_unchecked().expect("unchecked").skip_trace_checks();
    let trace_kinds = [WarningKind::FreeWithoutAlloc, WarningKind::DoubleAlloc];
    let kinds = |s: &Snapshot| s.warnings.iter().map(|w| (w.kind, w.count)).collect::<Vec<_>>();
    let mut expected = kinds(&snap);
    expected.retain(|(k, _)| !trace_kinds.contains(k));
    assert_eq!(kinds(&skipped), expected);
    assert!(expected.iter().any(|(k, _)| *k == WarningKind::UnknownAction));
    assert_eq!(reference::trace(&skipped).ok(), reference::trace(&snap).ok());
    assert_eq!(reference::stats(&skipped).ok(), reference::stats(&snap).ok());
    // Entries that are not dicts are skipped with a warning.
    let v = one_trace(vec![i(5), entry("alloc", 4096, 512, None, None), s("x"), Py::None]);
    let snap = load_ok(&v, 4);
    assert_eq!(snap.devices[0].trace.len(), 1);
    assert!(snap.warnings.iter().any(|w| w.kind == WarningKind::OddField));
    for name in ["inconsistent_free_without_alloc.pickle", "inconsistent_double_alloc.pickle", "unknown_action.pickle"]
    {
        {
            let b = synth(name);
            let snap = load(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!snap.warnings.is_empty(), "{name}: expected warnings");
        }
    }
}

#[test]
fn user_facing_error_messages() {
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl";
    let msg = load(zip).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.starts_with("this is a zip file: probably a checkpoint saved with torch.save"), "{msg}");
    let v = dict(vec![("foo", i(1)), ("bar", list(vec![]))]);
    let msg = load(&dumps(&v, 4)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.starts_with("not a memory snapshot: top-level keys are foo, bar"), "{msg}");
    let msg = load(b"\x80\x04\x8c\x20abc").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("ends at byte 7 inside a string of declared length 32"), "{msg}");
    let msg = load(b"\x1f\x8b\x08\x00").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("gzip"), "{msg}");
    let msg = load(b"<!DOCTYPE html><html>").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("HTML"), "{msg}");
    let msg = load(b"").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("empty"), "{msg}");
    // Many keys: a few are named, the rest counted.
    let many = Py::Dict((0..40).map(|k| (s(&format!("k{k}")), i(k))).collect());
    let msg = load(&dumps(&many, 4)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("k0, k1") && msg.contains("more"), "{msg}");
    assert!(msg.len() < 400, "{msg}");
}

#[test]
fn rare_but_legal_pickle_shapes() {
    // Protocol 0 text opcodes for every scalar, written by hand as Python 2 would.
    let p0 = b"(dp0\nVsegments\np1\n(lp2\nsVdevice_traces\np3\n(lp4\n(lp5\n(dp6\nVaction\np7\nValloc\np8\nsVaddr\np9\nL140000000000000L\nsVsize\np10\nI512\nsVstream\np11\nI0\nsVtime_us\np12\nF1.5\nsag6\naas.";
    let snap = load(p0).expect("protocol 0");
    let t = &snap.devices[0].trace;
    assert_eq!(t.len(), 2, "the same entry twice through the memo");
    assert_eq!(t.addr[0], 140_000_000_000_000);
    // Python 2 STRING / BINSTRING / SHORT_BINSTRING keys read as text.
    let p1 = b"}q\x00(U\x08segmentsq\x01]q\x02T\x0d\x00\x00\x00device_tracesq\x03]q\x04u.";
    let snap = load(p1).expect("binstring keys");
    assert!(snap.devices.is_empty());
    let p0s = b"(dS'segments'\n(lsS'device_traces'\n(ls.";
    load(p0s).expect("STRING keys");
    // Trailing bytes after STOP are ignored with a warning.
    let mut b = dumps(&snapshot(vec![], vec![]), 4);
    b.extend_from_slice(b"garbage");
    let snap = load(&b).expect("trailing bytes");
    assert!(snap.warnings.iter().any(|w| w.kind == WarningKind::Pickle));
    // Top-level dict keys other than the known ones are kept.
    let v =
        dict(vec![("segments", list(vec![])), ("device_traces", list(vec![])), ("host_segments", list(vec![i(1)]))]);
    let snap = load_ok(&v, 4);
    assert_eq!(snap.other_keys.len(), 1);
    assert_eq!(snap.other_keys[0].0, "host_segments");
}

/// A snapshot with the given extra top-level keys after `segments` and `device_traces`.
fn with_keys(base: Py, extra: Vec<(&str, Py)>) -> Py {
    let Py::Dict(mut pairs) = base else { panic!("not a dict") };
    pairs.extend(extra.into_iter().map(|(k, v)| (s(k), v)));
    Py::Dict(pairs)
}

/// Pinned host memory (PyTorch 2.14+): `host_segments` and `host_traces`, as one list or one list
/// per device, become a "pinned host" device that info and the analyses see, while PyTorch's
/// `stats` and `trace` (which ignore host data) print what they print without it.
#[test]
fn pinned_host_memory_is_its_own_device() {
    let fr = list(vec![frame("pin_memory", "torch/utils/data/_utils/pin_memory.py", 18)]);
    let cuda_seg = segment(0, 1 << 40, 2 << 20, vec![block(2 << 20, 1 << 20, "active_allocated", list(vec![]))]);
    let cuda_trace = vec![entry("alloc", 1 << 40, 1 << 20, Some(10), None)];
    let base = snapshot(vec![cuda_seg], vec![cuda_trace]);
    let mut host_seg = segment(-1, 1 << 33, 4096, vec![block(4096, 3000, "active_allocated", fr.clone())]);
    if let Py::Dict(p) = &mut host_seg {
        p.retain(|(k, _)| !matches!(k, Py::Str(x) if x == "segment_pool_id"));
    }
    let host_entries = || {
        vec![
            entry("alloc", 1 << 33, 3000, Some(11), Some(fr.clone())),
            entry("alloc", (1 << 33) + 8192, 500, Some(12), None),
        ]
    };
    let forms =
        [("one list", list(host_entries())), ("one list per device", list(vec![list(vec![]), list(host_entries())]))];
    let plain = load_ok(&base, 4);
    for (form, traces) in forms {
        let v = with_keys(base.clone(), vec![("host_segments", list(vec![host_seg.clone()])), ("host_traces", traces)]);
        let snap = load_ok(&v, 4);
        let names: Vec<String> = snap.devices.iter().map(|d| d.name()).collect();
        assert_eq!(names, ["cuda:0", "pinned host"], "{form}");
        let host = &snap.devices[1];
        assert!(host.is_pinned_host() && host.trace.len() == 2, "{form}");
        assert_eq!(snap.default_device(), Some(0), "{form}: a CUDA device opens first");
        assert_eq!(reference::stats(&snap).ok(), reference::stats(&plain).ok(), "{form}: stats ignores host data");
        assert_eq!(reference::trace(&snap).ok(), reference::trace(&plain).ok(), "{form}: trace ignores host data");
        let inf = info(&snap);
        let hi = inf.devices.iter().find(|d| d.pinned_host).expect("pinned host in info");
        assert_eq!((hi.name.as_str(), hi.segments, hi.final_reserved_bytes), ("pinned host", 1, 4096), "{form}");
        assert_eq!(hi.peak_allocated_bytes, 3500, "{form}");
        assert!(snap.other_keys.iter().all(|(k, _)| !k.starts_with("host_")), "{form}: not kept twice");
    }
    // A malformed host key is dropped with a warning; the CUDA data load as before.
    let v = with_keys(base.clone(), vec![("host_segments", i(3))]);
    let snap = load_ok(&v, 4);
    assert_eq!(snap.devices.len(), 1);
    assert!(snap.warnings.iter().any(|w| w.example.contains("pinned host memory not loaded")));
    assert_eq!(reference::stats(&snap).ok(), reference::stats(&plain).ok());
    // Empty host keys (recording without pinned memory) add no device.
    let v = with_keys(base, vec![("host_segments", list(vec![])), ("host_traces", list(vec![]))]);
    assert_eq!(load_ok(&v, 4).devices.len(), 1);
}

/// Every trace empty: the device holding the most memory opens first (reserved, then allocated).
#[test]
fn all_empty_traces_open_the_device_with_memory() {
    let seg = |dev: i128, total: i128, req: i128| {
        segment(dev, (dev + 1) << 40, total, vec![block(total, req, "active_allocated", list(vec![]))])
    };
    let v = snapshot(vec![seg(1, 2 << 20, 100), seg(2, 2 << 20, 200)], vec![vec![], vec![], vec![]]);
    let snap = load_ok(&v, 4);
    assert_eq!(snap.devices[snap.default_device().expect("a device")].index, 2, "same reserved: more allocated");
    let v = snapshot(vec![seg(1, 4 << 20, 1), seg(2, 2 << 20, 200)], vec![vec![], vec![], vec![]]);
    let snap = load_ok(&v, 4);
    assert_eq!(snap.devices[snap.default_device().expect("a device")].index, 1, "more reserved");
}

/// A trace whose frame dicts are shared by every entry that uses them (as PyTorch writes a
/// snapshot), or with every entry holding its own deep copy of its frame list (as `pickle.dump`
/// writes a snapshot whose frame lists were copied: every frame dict written inline, a dict that
/// appears twice in one list fetched from the memo the second time). Strings are shared either way.
fn frames_trace(inline: bool, entries: usize) -> Py {
    let k_file = shared(s("filename"));
    let k_line = shared(s("line"));
    let k_name = shared(s("name"));
    let files: Vec<Py> = ["model.py", "torch/nn/modules/module.py", "??"].iter().map(|f| shared(s(f))).collect();
    let names: Vec<Py> = (0..7).map(|n| shared(s(&format!("fn_{n}")))).collect();
    let frame = |n: usize| {
        Py::Dict(vec![
            (k_file.clone(), files[n % files.len()].clone()),
            (k_line.clone(), i(10 * n as i128 + 1)),
            (k_name.clone(), names[n].clone()),
        ])
    };
    let frames: Vec<Py> = (0..names.len()).map(|n| shared(frame(n))).collect();
    // Stacks of frames by index; 3 and 5 appear twice in theirs.
    let stacks: [&[usize]; 5] = [&[0, 1, 2], &[0, 1, 3, 3, 4], &[6], &[0, 1, 2, 5, 6, 5], &[2, 1, 0]];
    let mut trace = Vec::new();
    for e in 0..entries {
        let stack = stacks[e % stacks.len()];
        let items: Vec<Py> = if inline {
            let mut copies: Vec<Option<Py>> = vec![None; names.len()];
            stack.iter().map(|&n| copies[n].get_or_insert_with(|| shared(frame(n))).clone()).collect()
        } else {
            stack.iter().map(|&n| frames[n].clone()).collect()
        };
        let addr = (1 << 30) + 512 * (e as i128 / 2);
        let action = if e % 2 == 0 { "alloc" } else { "free_completed" };
        trace.push(entry(action, addr, 512, Some(e as i128), Some(shared(list(items)))));
    }
    one_trace(trace)
}

#[test]
fn inline_frame_dicts_give_the_model_of_shared_ones() {
    for entries in [1, 2, 7, 60] {
        let shared_bytes = dumps(&frames_trace(false, entries), 4);
        let inline_bytes = dumps(&frames_trace(true, entries), 4);
        assert_eq!(shared_bytes == inline_bytes, entries == 1);
        let from_shared = load(&shared_bytes).expect("shared frames");
        let want = fingerprint(&from_shared);
        let got = load(&inline_bytes).expect("inline frames");
        if let Some(d) = common::first_diff(&want, &fingerprint(&got)) {
            panic!("{entries} entries: {d}");
        }
        assert_eq!(got.frames, from_shared.frames);
        assert_eq!(got.stacks.len(), from_shared.stacks.len());
        assert_eq!(got.devices[0].trace.stack, from_shared.devices[0].trace.stack);
        for chunk in [1, 3, 16, 100, 4096] {
            let mut l = Loader::new(Some(inline_bytes.len() as u64));
            inline_bytes.chunks(chunk).try_for_each(|c| l.feed(c)).expect("feeds");
            let chunked = l.finish().expect("finishes");
            assert_eq!(fingerprint(&chunked), want, "{entries} entries in chunks of {chunk}");
        }
    }
}

/// Entries of one shape: with one `user_metadata` and `compile_context` in every row (as real
/// captures write them) every row reads them; with one row's `user_metadata` another, that row
/// reads its own.
#[test]
fn every_row_reads_its_user_metadata_and_compile_context() {
    let rows = |odd_row: Option<usize>| -> Vec<Py> {
        (0..8)
            .map(|r| {
                let meta = if Some(r) == odd_row { "layer 2" } else { "layer 1" };
                dict(vec![
                    ("action", s(if r % 2 == 0 { "alloc" } else { "free_completed" })),
                    ("addr", i(4096 * (r as i128 / 2 + 1))),
                    ("size", i(512)),
                    ("stream", i(0)),
                    ("time_us", i(10 + r as i128)),
                    ("compile_context", s("N/A")),
                    ("user_metadata", s(meta)),
                ])
            })
            .collect()
    };
    for odd_row in [None, Some(3)] {
        for protocol in [2, 4] {
            let snap = load_ok(&one_trace(rows(odd_row)), protocol);
            let t = &snap.devices[0].trace;
            assert_eq!(t.len(), 8);
            let text = |id: Option<u32>| id.map(|id| snap.strings.get(id).to_owned());
            for r in 0..8 {
                let want = if Some(r) == odd_row { "layer 2" } else { "layer 1" };
                assert_eq!(
                    text(t.user_metadata.get(r)).as_deref(),
                    Some(want),
                    "row {r}, {odd_row:?}, protocol {protocol}"
                );
                assert_eq!(text(t.compile_context.get(r)).as_deref(), Some("N/A"), "row {r}");
            }
        }
    }
}

/// Rows of one shape whose stream is one value in every row take that stream's index, whatever
/// index it was given before (a segment's stream 0 first); rows of several streams (a row of
/// another, another device's) take their own.
#[test]
fn every_row_takes_its_own_stream() {
    let rows = |streams: &[i128]| -> Vec<Py> {
        streams
            .iter()
            .enumerate()
            .map(|(r, &stream)| {
                dict(vec![
                    ("action", s(if r % 2 == 0 { "alloc" } else { "free_completed" })),
                    ("addr", i(4096 * (r as i128 / 2 + 1))),
                    ("size", i(512)),
                    ("stream", i(stream)),
                    ("time_us", i(10 + r as i128)),
                    ("compile_context", s("N/A")),
                    ("user_metadata", s("")),
                ])
            })
            .collect()
    };
    let cases: [(bool, &[&[i128]]); 5] = [
        (true, &[&[7; 6]]),
        (false, &[&[7; 6]]),
        (true, &[&[7, 7, 5, 7, 7, 7]]),
        (false, &[&[7; 6], &[9; 6]]),
        (true, &[&[0; 4], &[3; 4], &[0, 3, 0, 3]]),
    ];
    for (with_segment, traces) in cases {
        let segments = if with_segment { vec![segment(0, 1 << 30, 2 << 20, vec![])] } else { vec![] };
        for protocol in [2, 4] {
            let v = snapshot(segments.clone(), traces.iter().map(|t| rows(t)).collect());
            let snap = load_ok(&v, protocol);
            assert_eq!(snap.devices.len(), traces.len());
            for (d, want) in snap.devices.iter().zip(traces) {
                let got: Vec<i128> =
                    d.trace.stream.iter().map(|&k| snap.streams.get(k as usize).copied().unwrap_or(-1)).collect();
                assert_eq!(&got, want, "device {}, protocol {protocol}, segment {with_segment}", d.index);
            }
        }
    }
}

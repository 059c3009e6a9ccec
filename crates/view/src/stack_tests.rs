//! Tests of the stack panel's and the tooltip's texts: frame kinds, short paths and names, and
//! the demo's stacks split into Python and C++ rows.

#![allow(clippy::expect_used)]

use memviz_core::plot::{choose_device, PlotData};
use memviz_core::timeline::{ElementIndex, Options};

use super::*;

static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");

fn demo() -> OpenFile {
    let snap = memviz_core::load(DEMO).expect("the demo loads");
    let device = choose_device(&snap, None);
    let plot = PlotData::build(&snap, device, Options::default());
    OpenFile::new("demo".into(), snap, plot)
}

#[test]
fn frames_are_told_apart_by_their_file() {
    assert_eq!(frame_kind("/home/user/project/model.py"), FrameKind::User);
    assert_eq!(frame_kind("/usr/lib/python3.12/site-packages/torch/nn/modules/module.py"), FrameKind::Library);
    assert_eq!(frame_kind("/usr/lib/python3.12/threading.py"), FrameKind::Library);
    assert_eq!(frame_kind("<frozen runpy>"), FrameKind::Library);
    assert_eq!(frame_kind("<eval_with_key>.3"), FrameKind::User);
    assert_eq!(frame_kind("<string>"), FrameKind::User);
    assert_eq!(frame_kind("CUDACachingAllocator.cpp"), FrameKind::Native);
    assert_eq!(frame_kind("??"), FrameKind::Native);
    assert_eq!(frame_kind(""), FrameKind::Native);
}

#[test]
fn paths_and_cpp_names_are_shortened() {
    assert_eq!(
        short_path("/venv/lib/python3.12/site-packages/torch/nn/modules/module.py"),
        "torch/nn/modules/module.py"
    );
    assert_eq!(short_path("/home/user/project/model.py"), "project/model.py");
    assert_eq!(short_path("model.py"), "model.py");
    assert_eq!(short_path("/model.py"), "/model.py");
    assert_eq!(
        short_cpp_name(
            "at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA_empty(c10::ArrayRef<long>, bool)"
        ),
        "at::wrapper_CUDA_empty"
    );
    assert_eq!(short_cpp_name("(anonymous namespace)::f"), "f");
    assert_eq!(short_cpp_name("__clone"), "__clone");
}

#[test]
fn python_frames_come_first_name_first_and_cpp_frames_fold() {
    let f = demo();
    let mut checked = 0;
    for e in 0..f.plot.layout.elements.len().min(400) {
        let t = stack_text(&f, Target::Element(ElementIndex::new(e as u32)));
        let plain = t.plain(false);
        assert!(plain.starts_with(&t.head), "{plain}");
        assert!(t.python.iter().all(|r| r.kind != FrameKind::Native && r.place.contains(".py:")));
        assert!(t.native.iter().all(|r| r.kind == FrameKind::Native));
        for r in &t.python {
            // `forward  project/model.py:133`: the function, two spaces, the short place.
            assert!(r.line().starts_with(&format!("{}  ", r.name)), "{}", r.line());
            assert!(r.full.ends_with(&format!(":{}", r.name)), "{}", r.full);
        }
        match t.fold_line(false) {
            Some(fold) => {
                assert!(fold.contains(&format!("+{} C++ frame", t.native.iter().map(|r| r.repeats + 1).sum::<usize>())));
                assert!(!plain.contains(&t.native[0].line()), "folded C++ frames are not listed");
                assert!(t.plain(true).contains(&t.native[0].line()), "an open fold lists them");
            }
            None => assert!(t.native.is_empty()),
        }
        if !t.python.is_empty() {
            checked += 1;
            let lines: Vec<&str> = plain.lines().collect();
            let first = t.head.lines().count();
            assert_eq!(lines.get(first).copied(), Some(t.python[0].line().lines().next().unwrap_or("")));
        }
    }
    assert!(checked > 0, "the demo has allocations with Python frames");
}

#[test]
fn the_tooltip_says_size_top_user_frame_and_lifetime() {
    let f = demo();
    let e = (0..f.plot.layout.elements.len() as u32)
        .find(|&e| {
            stack_text(&f, Target::Element(ElementIndex::new(e))).python.iter().any(|r| r.kind == FrameKind::User)
        })
        .expect("an allocation made by the user's code");
    let lines = tip_lines(&f, Target::Element(ElementIndex::new(e)));
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].ends_with(" allocation") && lines[0].contains('B'), "{lines:?}");
    let user = stack_text(&f, Target::Element(ElementIndex::new(e)));
    let top = user.python.iter().find(|r| r.kind == FrameKind::User).expect("a user frame");
    assert_eq!(lines[1], top.line_first());
    // The lifetime in trace entries, as the stack panel and History number them.
    let el = &f.plot.layout.elements[e as usize];
    let want = match (el.alloc_row, el.free_row) {
        (Some(a), Some(z)) => format!("entries {a}..{z}"),
        (Some(a), None) => format!("from entry {a}, still allocated at the end"),
        (None, Some(z)) => format!("live before the trace, freed at entry {z}"),
        (None, None) => "live for the whole trace".into(),
    };
    assert_eq!(lines[2], want);
    assert!(!lines.iter().any(|l| l.contains("step")), "{lines:?}");
    assert_eq!(tip_lines(&f, Target::Summarized), ["Small allocations, summarized"]);
    assert!(tip_lines(&f, Target::Element(ElementIndex::new(u32::MAX))).is_empty());
}

#[test]
fn an_empty_stack_says_why() {
    let t = StackText { head: "x\n".into(), no_frames: Some(memviz_core::describe::NO_FRAMES), ..StackText::default() };
    assert!(t.plain(false).starts_with("x\nNo stack trace recorded"));
    assert_eq!(t.fold_line(false), None);
    let only_cpp = StackText {
        native: vec![FrameRow {
            name: "f".into(),
            place: String::new(),
            full: "??:0:f".into(),
            kind: FrameKind::Native,
            repeats: 2,
            notes: vec![],
        }],
        ..StackText::default()
    };
    assert_eq!(only_cpp.fold_line(false).as_deref(), Some("no Python frames · +3 C++ frames"));
    assert_eq!(only_cpp.fold_line(true).as_deref(), Some("no Python frames · hide 3 C++ frames"));
    assert_eq!(only_cpp.native[0].line(), "f  ×3");
}

fn synth(name: &str) -> OpenFile {
    let path = format!("{}/../../tests/data/synth/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let snap = memviz_core::load(&bytes).expect("the snapshot loads");
    let device = choose_device(&snap, None);
    let plot = PlotData::build(&snap, device, Options::default());
    OpenFile::new(name.into(), snap, plot)
}

/// `annotate` entries (PyTorch 2.14+) show on the allocation they name: in the stack panel with
/// their entry, time and frames, and in the tooltip; they are no allocations of their own.
#[test]
fn annotations_show_on_their_allocation() {
    let f = synth("annotate_entries.pickle");
    let els = &f.plot.layout.elements;
    let annotated: Vec<u32> =
        (0..els.len() as u32).filter(|&e| !annotations_of(&f, ElementIndex::new(e)).is_empty()).collect();
    assert_eq!(annotated.len(), 2, "the kv cache and the parameter");
    let kv = annotated
        .iter()
        .copied()
        .find(|&e| annotations_of(&f, ElementIndex::new(e)).len() == 2)
        .expect("two on the kv cache");
    let text = stack_text(&f, Target::Element(ElementIndex::new(kv))).plain(false);
    assert!(text.contains("Annotation (entry "), "{text}");
    assert!(text.contains(": kv-cache layer 3\n") && text.contains("resized for 4096 tokens"), "{text}");
    assert!(text.contains("UTC") || text.contains('Z'), "with its time: {text}");
    assert!(text.contains("build_cache"), "with its frames: {text}");
    let tip = tip_lines(&f, Target::Element(ElementIndex::new(kv))).join("\n");
    assert!(tip.contains("annotated: kv-cache layer 3: resized for 4096 tokens (+1 earlier)"), "{tip}");
    let param = annotated.iter().copied().find(|&e| e != kv).expect("the parameter");
    assert!(els[param as usize].alloc_row.is_none(), "allocated before the trace");
    assert!(stack_text(&f, Target::Element(ElementIndex::new(param))).plain(false).contains("embedding weight"));
    let t = &f.snap.devices[f.plot.device_pos].trace;
    let allocs = t.action.iter().filter(|a| matches!(a, memviz_core::snapshot::Action::Alloc)).count();
    assert_eq!(els.iter().filter(|e| e.alloc_row.is_some()).count(), allocs, "annotations are no allocations");
}

/// Pinned host memory is a device of its own, with its allocations and stacks.
#[test]
fn pinned_host_memory_is_a_device_with_its_stacks() {
    for name in ["pinned_host.pickle", "pinned_host_lists.pickle"] {
        let mut f = synth(name);
        let names: Vec<String> = f.snap.devices.iter().map(|d| d.name()).collect();
        assert_eq!(names, ["cuda:0", "pinned host"], "{name}");
        f.plot = PlotData::build(&f.snap, 1, Options::default());
        assert!(!f.plot.layout.elements.is_empty(), "{name}: host allocations");
        let text = stack_text(&f, Target::Element(ElementIndex::new(0))).plain(false);
        assert!(text.contains("pin_memory"), "{name}: {text}");
    }
}

fn open(bytes: &[u8]) -> OpenFile {
    let snap = memviz_core::load(bytes).expect("the file loads");
    let device = choose_device(&snap, None);
    let plot = PlotData::build(&snap, device, Options::default());
    OpenFile::new("f".into(), snap, plot)
}

#[test]
fn the_tooltip_puts_the_model_line_of_compiled_code_first() {
    let f = open(include_bytes!("../../../tests/data/synth/fx_frames.pickle"));
    let lines = tip_lines(&f, Target::Element(ElementIndex::new(0)));
    assert_eq!(lines[1], "forward  project/model.py:88  (model code)", "{lines:?}");
    assert!(lines[2].starts_with("call  "), "then the generated code: {lines:?}");
}

#[test]
fn the_tooltip_shows_the_user_metadata() {
    let f = open(include_bytes!("../../../tests/data/real/metadata_layers.pickle"));
    let e = (0..f.plot.layout.elements.len() as u32)
        .find(|&e| {
            f.plot.layout.elements[e as usize].alloc_row.is_some_and(|r| {
                annotations::text_of(&f.snap, f.plot.device_pos, r as usize).contains("\"phase\": \"forward\"")
            })
        })
        .expect("a forward allocation");
    let lines = tip_lines(&f, Target::Element(ElementIndex::new(e)));
    assert!(lines.iter().any(|l| l.starts_with("metadata: {\"phase\": \"forward\", \"layer\": ")), "{lines:?}");
}

/// Runs of entries that share a metadata value are spans of the strip's last row, and a span's
/// tooltip names the value and the entries it covers.
#[test]
fn metadata_runs_are_a_row_of_the_strip_with_their_entries() {
    let f = open(include_bytes!("../../../tests/data/real/metadata_layers.pickle"));
    let p = &f.plot;
    let runs: Vec<usize> = (0..p.annotations.len()).filter(|&i| p.annotations[i].metadata_rows.is_some()).collect();
    assert_eq!(runs.len(), 12, "3 iterations of embedding, forward, loss and an optimizer step");
    let last_row = p.annotation_row_count - 1;
    assert!(runs.iter().all(|&i| p.annotation_rows[i] == last_row), "the runs share the last row");
    assert!(p.annotations.iter().zip(&p.annotation_rows).all(|(a, &r)| a.metadata_rows.is_some() || r < last_row));
    let fwd = runs.iter().copied().find(|&i| p.annotations[i].name == "forward").expect("a forward run");
    let a = &p.annotations[fwd];
    assert_eq!(a.metadata_rows, Some((6, 100)));
    assert!(a.start_step < a.end_step && a.start_us <= a.end_us);
    // The run covers the steps of its entries.
    assert_eq!(a.start_step, f64::from(p.layout.step_for_row(6)));
    assert_eq!(a.end_step, f64::from(p.layout.step_for_row(101)));
    let lines = tip_lines(&f, Target::Annotation(fwd));
    assert_eq!(&lines[..2], &["metadata: forward".to_string(), "entries 6..100".to_string()], "{lines:?}");
    assert!(f.target_text(Target::Annotation(fwd)).starts_with("Metadata forward\n"));
}

/// A profiler trace's allocation shows the ops around it (innermost first, with their input
/// shapes) before its Python stack; the memory from before the profiler says so, not how to
/// record a snapshot.
#[test]
fn a_trace_shows_the_op_its_shapes_and_the_python_stack() {
    static TRACE: &[u8] = include_bytes!("../../../tests/data/real/gpt_profile.trace.json.gz");
    let f = open(TRACE);
    let n = f.plot.layout.elements.len() as u32;
    let texts: Vec<StackText> = (0..n).map(|e| stack_text(&f, Target::Element(ElementIndex::new(e)))).collect();
    let with_op = texts
        .iter()
        .find(|t| {
            t.python.first().is_some_and(|r| r.kind == FrameKind::Op)
                && t.python.iter().any(|r| r.name == "aten::layer_norm" && !r.notes.is_empty())
                && t.python.iter().any(|r| r.kind == FrameKind::User)
        })
        .expect("an allocation inside an op with shapes, under the user's code");
    let op = with_op.python.iter().find(|r| r.name == "aten::layer_norm").expect("the op");
    assert!(op.kind == FrameKind::Op && op.place.is_empty(), "{op:?}");
    // Its input (batch 8 x 256 tokens x 384 features), the normalized shape's weight and bias,
    // as the trace's `Input Dims` of that op say.
    assert_eq!(op.notes, vec!["    input shapes: [8, 256, 384], [384], [384]".to_string()]);
    assert!(with_op.plain(false).contains("train.py:"), "{}", with_op.plain(false));
    let before = texts.iter().find(|t| t.head.contains("allocated before the profiler started")).expect("one");
    assert_eq!(before.no_frames, Some(memviz_core::describe::NO_FRAMES_IN_TRACE));
    assert!(!before.plain(false).contains("_record_memory_history"));
}

//! What the stack panel and the tooltip at the pointer say about a [`Target`].
//!
//! The panel's text is [`StackText`]: the lines about the target, then its frames as
//! [`FrameRow`]s — Python frames first, each with its function first and a shortened path
//! (`forward  project/model.py:133`), the user's code told apart from libraries'; the C++ frames
//! after them, counted, for the page to fold. The tooltip is [`tip_lines`]: size, the model's
//! line an FX-augmented frame records (compiled code), the innermost frame of the user's code,
//! the user metadata, the allocation's `annotate` entries, and the lifetime. The panel
//! lists each annotation with its entry, time and frames. The recorded text of every frame stays in
//! [`FrameRow::full`].

use memviz_core::analysis::annotations::{self, AllocAnnotation};
use memviz_core::describe::{self, Described};
use memviz_core::format::{frame_visible, human_size, size_with_bytes};
use memviz_core::snapshot::{Frame, Snapshot};
use memviz_core::timeline::{ElementIndex, Mode};
use memviz_core::tree::Tree;

use crate::state::{OpenFile, Target};

/// Where a frame's code comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// Python outside any installed package: the user's code.
    User,
    /// Python of an installed package or of the standard library (`site-packages/`, `<frozen …>`).
    Library,
    /// C++ (or anything that is not Python).
    Native,
    /// An operator a profiler trace recorded around the allocation (`aten::mm`), with its
    /// input shapes where recorded.
    Op,
}

/// One frame of a stack as the panel shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameRow {
    /// The function (for C++, without its argument list).
    pub name: String,
    /// Shortened file and line: `project/model.py:133` (C++ frames: the file's base name).
    pub place: String,
    /// The frame as recorded: `filename:line:name`.
    pub full: String,
    /// Where its code comes from.
    pub kind: FrameKind,
    /// How many times more it follows itself (recursion); 0: once.
    pub repeats: usize,
    /// Lines under the frame (FX node and original model code).
    pub notes: Vec<String>,
}

/// The stack panel's text for one target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackText {
    /// Lines about the target before its frames (each ending in `\n`).
    pub head: String,
    /// Its Python frames (and a profiler trace's ops), innermost first.
    pub python: Vec<FrameRow>,
    /// Its other frames, innermost first.
    pub native: Vec<FrameRow>,
    /// The target has a stack, but no frame of it was recorded: why, in words.
    pub no_frames: Option<&'static str>,
    /// Lines after the frames (each ending in `\n`).
    pub tail: String,
}

impl StackText {
    /// One line per frame, Python first, the C++ frames as one line `+N C++ frames` unless
    /// `native_open`: the text the panel shows.
    pub fn plain(&self, native_open: bool) -> String {
        let mut out = self.head.clone();
        if let Some(why) = self.no_frames {
            out.push_str(why);
            out.push('\n');
        }
        for r in &self.python {
            out.push_str(&r.line());
            out.push('\n');
        }
        if let Some(fold) = self.fold_line(native_open) {
            out.push_str(&fold);
            out.push('\n');
        }
        if native_open {
            for r in &self.native {
                out.push_str(&r.line());
                out.push('\n');
            }
        }
        out.push_str(&self.tail);
        out
    }

    /// The line that folds the C++ frames (`+28 C++ frames`, `hide 28 C++ frames`), if any.
    pub fn fold_line(&self, native_open: bool) -> Option<String> {
        let n = self.native.iter().map(|r| r.repeats + 1).sum::<usize>();
        if n == 0 {
            return None;
        }
        let noun = if n == 1 { "C++ frame" } else { "C++ frames" };
        let none = if self.python.is_empty() { "no Python frames · " } else { "" };
        Some(if native_open { format!("{none}hide {n} {noun}") } else { format!("{none}+{n} {noun}") })
    }

    /// The innermost frame of the user's code, else of any Python, else of anything.
    pub fn top_frame(&self) -> Option<&FrameRow> {
        self.python
            .iter()
            .find(|r| r.kind == FrameKind::User)
            .or_else(|| self.python.first())
            .or_else(|| self.native.first())
    }
}

impl FrameRow {
    /// `name  place`, with `×N` for a frame repeated.
    pub fn line(&self) -> String {
        let mut s = if self.place.is_empty() { self.name.clone() } else { format!("{}  {}", self.name, self.place) };
        if self.repeats > 0 {
            s.push_str(&format!("  ×{}", self.repeats + 1));
        }
        for n in &self.notes {
            s.push('\n');
            s.push_str(n);
        }
        s
    }
}

/// The panel's text for `target` of the file `f`.
pub fn stack_text(f: &OpenFile, target: Target) -> StackText {
    let p = &f.plot;
    let parts = match target {
        Target::Element(e) => describe::element_parts(&f.snap, p.device_pos, &p.layout, e).map(|mut d| {
            d.tail.push_str(&annotations_text(f, e));
            d
        }),
        Target::Oom(i) => p.ooms.get(i).and_then(|o| describe::oom_parts(&f.snap, p.device_pos, o.row as usize)),
        Target::Summarized | Target::Annotation(_) => {
            return StackText { head: f.target_text(target), ..StackText::default() };
        }
    };
    parts.map_or_else(StackText::default, |d| split_stack(&f.snap, &d))
}

/// The `annotate` entries (`torch.cuda.memory._annotate_memory`) of allocation `e`, oldest
/// first; none in the segment views (they name allocations).
pub fn annotations_of(f: &OpenFile, e: ElementIndex) -> Vec<AllocAnnotation> {
    let p = &f.plot;
    match p.layout.element(e) {
        Some(el) if matches!(p.layout.options.mode, Mode::Allocations) => {
            annotations::of_lifetime(&f.snap, p.device_pos, el.addr, el.alloc_row, el.free_row)
        }
        _ => Vec::new(),
    }
}

/// Python frames of an annotation's stack shown under it, at most.
const ANNOTATION_FRAMES: usize = 4;

/// The lines the stack panel adds for the annotations of allocation `e`: each one's text, entry
/// and time, and the innermost Python frames where it was made.
fn annotations_text(f: &OpenFile, e: ElementIndex) -> String {
    let mut out = String::new();
    for a in annotations_of(f, e) {
        let time = a.time_us.map(|t| format!(" at {}", describe::utc_time(t))).unwrap_or_default();
        out.push_str(&format!(
            "Annotation (entry {}{time}): {}
",
            a.row, a.text
        ));
        let d = Described { head: String::new(), stack: a.stack, tail: String::new() };
        let s = split_stack(&f.snap, &d);
        for r in s.python.iter().take(ANNOTATION_FRAMES) {
            out.push_str(&format!("    {}\n", r.line_first()));
        }
    }
    out
}

/// `d`'s frames sorted into Python and C++ rows.
pub fn split_stack(snap: &Snapshot, d: &Described) -> StackText {
    let mut python: Vec<FrameRow> = Vec::new();
    let mut native: Vec<FrameRow> = Vec::new();
    for fr in snap.stack_frames(d.stack) {
        let name = snap.strings.get(fr.name);
        let file = snap.strings.get(fr.filename);
        if !frame_visible(name, file) {
            continue;
        }
        let row = frame_row(snap, fr);
        let rows = if row.kind == FrameKind::Native { &mut native } else { &mut python };
        match rows.last_mut() {
            Some(last) if last.full == row.full && last.notes == row.notes => last.repeats += 1,
            _ => rows.push(row),
        }
    }
    let no_frames = (python.is_empty() && native.is_empty()).then(|| describe::no_frames_text(snap));
    StackText { head: d.head.clone(), python, native, no_frames, tail: d.tail.clone() }
}

fn frame_row(snap: &Snapshot, f: &Frame) -> FrameRow {
    let name = snap.strings.get(f.name);
    let file = snap.strings.get(f.filename);
    let full = format!("{file}:{}:{name}", f.line);
    // A profiler trace's ops are frames with no file or line.
    let op = snap.source.profiler_trace && file.is_empty() && f.line == 0;
    let kind = if op { FrameKind::Op } else { frame_kind(file) };
    let (name, place) = if op {
        (name.to_string(), String::new())
    } else if kind == FrameKind::Native {
        let base = file.rsplit('/').next().unwrap_or(file);
        let place = if base.is_empty() || base == "??" { String::new() } else { base.to_string() };
        (short_cpp_name(name), place)
    } else {
        (name.to_string(), format!("{}:{}", short_path(file), f.line))
    };
    let mut notes = Vec::new();
    if let Some(extra) = &f.extra {
        let field = |k: &str| match extra.dict.get(k) {
            Some(Tree::Str(s)) => Some(s.clone()),
            _ => None,
        };
        if let (Some(node), Some(op), Some(target)) =
            (field("fx_node_name"), field("fx_node_op"), field("fx_node_target"))
        {
            notes.push(format!("    >> FX: node={node}, op={op}, target={target}"));
        }
        if let Some(orig) = field("fx_original_trace") {
            notes.push("    >> Original Model Code:".into());
            notes.extend(orig.lines().map(|l| format!("      {l}")));
        }
        if let Some(shapes) = field(memviz_core::chrome_trace::INPUT_SHAPES_KEY) {
            notes.push(format!("    input shapes: {shapes}"));
        }
    }
    FrameRow { name, place, full, kind, repeats: 0, notes }
}

/// Whether a frame of `filename` is Python, and whose.
pub fn frame_kind(filename: &str) -> FrameKind {
    // `<frozen runpy>`, `<string>`, `<eval_with_key>.3` (code that FX generated) are Python too.
    if !(filename.ends_with(".py") || filename.starts_with('<')) {
        return FrameKind::Native;
    }
    const LIBRARY: [&str; 4] = ["site-packages/", "dist-packages/", "/lib/python", "<frozen "];
    if LIBRARY.iter().any(|l| filename.contains(l)) {
        FrameKind::Library
    } else {
        FrameKind::User
    }
}

pub use crate::names::short_path;

/// A C++ function without its argument list and anonymous namespaces:
/// `at::native::empty_cuda(c10::ArrayRef<long>, …)` → `at::native::empty_cuda`.
pub fn short_cpp_name(name: &str) -> String {
    let s = name.replace("(anonymous namespace)::", "");
    match s.find('(') {
        Some(i) if i > 0 => s[..i].to_string(),
        _ => s,
    }
}

/// The tooltip's lines for `target`: what it is and how large, where the user's code made it,
/// and how long it lived.
pub fn tip_lines(f: &OpenFile, target: Target) -> Vec<String> {
    let p = &f.plot;
    match target {
        Target::Element(i) => {
            let Some(e) = p.layout.element(i) else { return Vec::new() };
            let what = if matches!(p.layout.options.mode, Mode::Allocations) { "allocation" } else { "segment" };
            let mut lines = vec![format!("{} {what}", human_size(e.size_bytes as f64))];
            let text = stack_text(f, target);
            // The model's own line first where Inductor's generated code allocated.
            if let Some(model) = fx_original_line(&f.snap, e.stack) {
                lines.push(format!("{model}  (model code)"));
            }
            lines.push(text.top_frame().map_or_else(|| "no stack recorded".to_string(), |r| r.line_first()));
            if let Some(r) = e.alloc_row.or(e.free_row) {
                let meta = annotations::text_of(&f.snap, p.device_pos, r as usize);
                if !meta.is_empty() {
                    lines.push(format!("metadata: {meta}"));
                }
            }
            let notes = annotations_of(f, i);
            if let Some(last) = notes.last() {
                let more = if notes.len() > 1 { format!(" (+{} earlier)", notes.len() - 1) } else { String::new() };
                lines.push(format!("annotated: {}{more}", last.text));
            }
            lines.push(match (e.alloc_row, e.free_row) {
                (Some(a), Some(z)) => format!("entries {a}..{z}"),
                (Some(a), None) => format!("from entry {a}, still allocated at the end"),
                (None, Some(z)) => format!("live before the trace, freed at entry {z}"),
                (None, None) => "live for the whole trace".to_string(),
            });
            lines
        }
        Target::Summarized => vec!["Small allocations, summarized".to_string()],
        Target::Oom(i) => p.ooms.get(i).map_or_else(Vec::new, |o| {
            let t = f.snap.devices.get(p.device_pos).map(|d| &d.trace);
            let size = t.and_then(|t| t.size_bytes.get(o.row as usize).copied()).unwrap_or(0);
            vec![format!("Out of memory: requested {}", size_with_bytes(size)), format!("at entry {}", o.row)]
        }),
        Target::Annotation(i) => p.annotations.get(i).map_or_else(Vec::new, |a| {
            let ms = format!("{:.3} ms", (a.end_us - a.start_us) as f64 / 1000.0);
            match a.metadata_rows {
                Some((first, last)) => vec![format!("metadata: {}", a.name), format!("entries {first}..{last}"), ms],
                None => vec![a.name.clone(), ms],
            }
        }),
    }
}

/// The user's model line that an FX-augmented frame (Inductor's generated code) records in its
/// `fx_original_trace`, innermost first: `forward  project/model.py:88`.
pub fn fx_original_line(snap: &Snapshot, stack: u32) -> Option<String> {
    for fr in snap.stack_frames(stack) {
        let Some(Tree::Str(orig)) = fr.extra.as_ref().and_then(|x| x.dict.get("fx_original_trace")) else { continue };
        // `  File "PATH", line N, in FUNC` lines, outermost first as Python prints them.
        let mut found = None;
        for l in orig.lines() {
            let Some(rest) = l.trim_start().strip_prefix("File \"") else { continue };
            let Some((path, rest)) = rest.split_once("\", line ") else { continue };
            let (line, func) = rest.split_once(", in ").unwrap_or((rest, ""));
            if frame_kind(path) == FrameKind::User {
                found = Some(format!("{}  {}:{}", func.trim(), short_path(path), line.trim()));
            }
        }
        if found.is_some() {
            return found;
        }
    }
    None
}

impl FrameRow {
    /// The first line of [`FrameRow::line`] (without the notes).
    pub fn line_first(&self) -> String {
        let mut r = self.clone();
        r.notes.clear();
        r.line()
    }
}

impl OpenFile {
    /// Text for the stack panel's head (what a target is, when, which entries).
    pub fn target_text(&self, target: Target) -> String {
        let p = &self.plot;
        match target {
            Target::Element(e) => describe::element_text(&self.snap, p.device_pos, &p.layout, e),
            Target::Summarized => describe::SUMMARIZED.to_string(),
            Target::Oom(i) => {
                p.ooms.get(i).map_or_else(String::new, |o| describe::oom_text(&self.snap, p.device_pos, o.row as usize))
            }
            Target::Annotation(i) => p.annotations.get(i).map_or_else(String::new, |a| {
                let entry = |step: f64| crate::entries::entry_at_step(&p.layout, step).unwrap_or(0);
                if let Some((first, last)) = a.metadata_rows {
                    return format!(
                        "Metadata {}\n{} to {}\nentries {first}..{last}\n",
                        a.name,
                        describe::utc_time(a.start_us),
                        describe::utc_time(a.end_us)
                    );
                }
                format!(
                    "Annotation {}\n{} to {} ({:.3} ms)\nentries {}..{}\n",
                    a.name,
                    describe::utc_time(a.start_us),
                    describe::utc_time(a.end_us),
                    (a.end_us - a.start_us) as f64 / 1000.0,
                    entry(a.start_step),
                    entry(a.end_step)
                )
            }),
        }
    }
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;

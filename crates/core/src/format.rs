//! Text formats shared by the page and the command line: sizes, address labels, frames, and
//! Python's `repr` (which PyTorch's CLI prints for some trace entries).

use std::fmt::Write as _;

use crate::snapshot::{Frame, Snapshot};
use crate::tree::Tree;

const UNITS: [&str; 8] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"];

/// PyTorch CLI's `_format_size`: `f"{num:3.1f}{unit}B"` in steps of 1024, e.g. `20.0MiB`, `512.0B`.
pub fn py_size(num: i128) -> String {
    py_size_f64(num as f64)
}

/// [`py_size`] of a value already converted to float (Python converts ints the same way).
pub fn py_size_f64(num: f64) -> String {
    let mut x = num;
    for unit in UNITS {
        if x.abs() < 1024.0 {
            return format!("{x:3.1}{unit}B");
        }
        x /= 1024.0;
    }
    format!("{x:.1}YiB")
}

/// A count and its noun, with an `s` unless it is one: `1 note`, `3 problems`, `0 tensors`.
pub fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Text made safe for HTML, in an element or a quoted attribute: `&`, `<`, `>`, `"` and `'` as
/// entities.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's size text, also used in summaries: a binary unit after a space, one decimal with a
/// trailing `.0` left out (`1.5 GiB`, `400 MiB`, `512 B`, `0 B`).
pub fn human_size(bytes: f64) -> String {
    let mut x = bytes;
    for unit in UNITS {
        if x.abs() < 1024.0 {
            return if unit.is_empty() { format!("{x:.0} B") } else { format!("{} {unit}B", one_decimal(x)) };
        }
        x /= 1024.0;
    }
    format!("{} YiB", one_decimal(x))
}

/// `x` with one decimal, without a trailing `.0` (`1.5`, `400`).
pub fn one_decimal(x: f64) -> String {
    let s = format!("{x:.1}");
    match s.strip_suffix(".0") {
        Some(whole) if whole != "-0" => whole.to_string(),
        Some(_) => "0".to_string(),
        None => s,
    }
}

/// The page's size text with the exact count: `1.5 GiB (1610612736 bytes)`; under 1 KiB just
/// `512 B`.
pub fn size_with_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    format!("{} ({bytes} bytes)", human_size(bytes as f64))
}

/// PyTorch's per-lifetime address label: `b7f064c000000_3` (`prefix` is `b` for blocks, `s` for segments).
pub fn addr_label(prefix: char, addr: u64, version: u32) -> String {
    format!("{prefix}{addr:x}_{version}")
}

/// Whether a frame is shown (PyTorch's `_frame_filter`: interpreter and dispatcher noise is hidden).
pub fn frame_visible(name: &str, filename: &str) -> bool {
    const OMIT_FUNCTIONS: [&str; 8] = [
        "unwind::unwind",
        "CapturedTraceback::gather",
        "gather_with_cpp",
        "_start",
        "__libc_start_main",
        "PyEval_",
        "PyObject_",
        "PyFunction_",
    ];
    const OMIT_FILENAMES: [&str; 10] = [
        "core/boxing",
        "/Register",
        "/Redispatch",
        "pythonrun.c",
        "Modules/main.c",
        "Objects/call.c",
        "Objects/methodobject.c",
        "pycore_ceval.h",
        "ceval.c",
        "cpython/abstract.h",
    ];
    !OMIT_FUNCTIONS.iter().any(|o| name.contains(o)) && !OMIT_FILENAMES.iter().any(|o| filename.contains(o))
}

/// `filename:line:name`, with the full path or just the base name.
pub fn frame_text(snap: &Snapshot, f: &Frame, full_filename: bool) -> String {
    let file = snap.strings.get(f.filename);
    let file = if full_filename { file } else { file.rsplit('/').next().unwrap_or(file) };
    format!("{file}:{}:{}", f.line, snap.strings.get(f.name))
}

/// The visible frames of a stack, one line each, innermost first, with runs of three or more
/// identical lines collapsed to the line and `<repeats N times>`, and FX fields appended.
pub fn stack_lines(snap: &Snapshot, stack: u32) -> Vec<String> {
    stack_lines_with(snap, stack, |path| path)
}

/// [`stack_lines`] with each file's path as `shorten` gives it (the page shortens them as its
/// tooltip does).
pub fn stack_lines_with(snap: &Snapshot, stack: u32, shorten: impl Fn(&str) -> &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for f in snap.stack_frames(stack) {
        let name = snap.strings.get(f.name);
        let file = snap.strings.get(f.filename);
        if !frame_visible(name, file) {
            continue;
        }
        // A profiler trace's ops are frames with no file: the op's name says it all.
        if file.is_empty() && f.line == 0 {
            lines.push(name.to_owned());
        } else {
            lines.push(format!("{}:{}:{name}", shorten(file), f.line));
        }
        if let Some(extra) = &f.extra {
            let field = |k: &str| match extra.dict.get(k) {
                Some(Tree::Str(s)) => Some(s.clone()),
                _ => None,
            };
            if let (Some(node), Some(op), Some(target)) =
                (field("fx_node_name"), field("fx_node_op"), field("fx_node_target"))
            {
                lines.push(format!("    >> FX: node={node}, op={op}, target={target}"));
            }
            if let Some(shapes) = field(crate::chrome_trace::INPUT_SHAPES_KEY) {
                lines.push(format!("    >> input shapes: {shapes}"));
            }
            if let Some(orig) = field("fx_original_trace") {
                lines.push("    >> Original Model Code:".into());
                for l in orig.lines() {
                    lines.push(format!("      {l}"));
                }
            }
        }
    }
    collapse_repeats(lines)
}

fn collapse_repeats(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && lines[j] == lines[i] {
            j += 1;
        }
        let run = j - i;
        if run >= 3 {
            out.push(lines[i].clone());
            out.push(format!("<repeats {} times>", run - 1));
        } else {
            out.extend(lines[i..j].iter().cloned());
        }
        i = j;
    }
    out
}

/// Python's `repr` of a float.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Shortest round-trip digits from Rust, laid out by Python's rules.
    let e = format!("{x:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        s.push_str(first);
        if !rest.is_empty() {
            s.push('.');
            s.push_str(rest);
        }
        let _ = write!(s, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if exp < 0 {
        s.push_str("0.");
        for _ in 0..(-exp - 1) {
            s.push('0');
        }
        s.push_str(&digits);
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            s.push_str(&digits);
            for _ in digits.len()..point {
                s.push('0');
            }
            s.push_str(".0");
        } else {
            s.push_str(&digits[..point]);
            s.push('.');
            s.push_str(&digits[point..]);
        }
    }
    s
}

/// Whether Python's `str.isprintable()` holds for a character (close approximation without
/// Unicode tables: control, format, separator and private-use characters are not printable).
fn py_printable(c: char) -> bool {
    let u = c as u32;
    if u < 0x20 || (0x7f..=0xa0).contains(&u) || u == 0xad {
        return false;
    }
    !matches!(u,
        0x0600..=0x0605 | 0x061c | 0x06dd | 0x070f | 0x1680 | 0x180e | 0x2000..=0x200f | 0x2028..=0x202f
        | 0x205f..=0x2064 | 0x2066..=0x206f | 0x3000 | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb
        | 0xe0001 | 0xe0020..=0xe007f | 0xf0000..=0x10ffff)
}

/// Python's `repr` of a str.
pub fn py_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (crate::pickle::SURROGATE_BASE..=crate::pickle::SURROGATE_BASE + 0x7ff).contains(&(c as u32)) => {
                let _ = write!(out, "\\u{:04x}", c as u32 - crate::pickle::SURROGATE_BASE + 0xd800);
            }
            c if py_printable(c) => out.push(c),
            c => {
                let u = c as u32;
                if u < 0x100 {
                    let _ = write!(out, "\\x{u:02x}");
                } else if u < 0x10000 {
                    let _ = write!(out, "\\u{u:04x}");
                } else {
                    let _ = write!(out, "\\U{u:08x}");
                }
            }
        }
    }
    out.push(quote);
}

fn py_bytes(b: &[u8], out: &mut String) {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') { '"' } else { '\'' };
    out.push('b');
    out.push(quote);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c if char::from(c) == quote => {
                out.push('\\');
                out.push(char::from(c));
            }
            0x20..=0x7e => out.push(char::from(c)),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(quote);
}

/// Most characters one `repr` may produce; longer output ends in `...`.
pub const MAX_REPR_CHARS: usize = 4 << 20;

/// Python's `repr` of a tree (stacks expand to lists of frame dicts).
pub fn py_repr(snap: &Snapshot, t: &Tree) -> String {
    let mut out = String::new();
    repr_into(snap, t, &mut out, 0);
    out
}

fn repr_seq<'a>(
    snap: &Snapshot,
    items: impl Iterator<Item = &'a Tree>,
    open: &str,
    close: &str,
    out: &mut String,
    depth: usize,
) {
    out.push_str(open);
    for (i, x) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        repr_into(snap, x, out, depth + 1);
    }
    out.push_str(close);
}

fn repr_frame(snap: &Snapshot, f: &Frame, out: &mut String, depth: usize) {
    if let Some(extra) = &f.extra {
        repr_into(snap, &extra.dict, out, depth + 1);
        return;
    }
    let mut file = String::new();
    py_str(snap.strings.get(f.filename), &mut file);
    let mut name = String::new();
    py_str(snap.strings.get(f.name), &mut name);
    if f.name_first {
        let _ = write!(out, "{{'name': {name}, 'filename': {file}, 'line': {}}}", f.line);
    } else {
        let _ = write!(out, "{{'filename': {file}, 'line': {}, 'name': {name}}}", f.line);
    }
}

fn repr_into(snap: &Snapshot, t: &Tree, out: &mut String, depth: usize) {
    if out.len() > MAX_REPR_CHARS {
        return;
    }
    match t {
        Tree::None => out.push_str("None"),
        Tree::Bool(true) => out.push_str("True"),
        Tree::Bool(false) => out.push_str("False"),
        Tree::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Tree::BigInt(s) => out.push_str(s),
        Tree::Float(f) => out.push_str(&py_float(*f)),
        Tree::Str(s) => py_str(s, out),
        Tree::Bytes(b) => py_bytes(b, out),
        Tree::List(v) => repr_seq(snap, v.iter(), "[", "]", out, depth),
        Tree::Tuple(v) => {
            if v.len() == 1 {
                out.push('(');
                repr_into(snap, &v[0], out, depth + 1);
                out.push_str(",)");
            } else {
                repr_seq(snap, v.iter(), "(", ")", out, depth);
            }
        }
        Tree::Set(v) => {
            if v.is_empty() {
                out.push_str("set()");
            } else {
                repr_seq(snap, v.iter(), "{", "}", out, depth);
            }
        }
        Tree::FrozenSet(v) => {
            if v.is_empty() {
                out.push_str("frozenset()");
            } else {
                repr_seq(snap, v.iter(), "frozenset({", "})", out, depth);
            }
        }
        Tree::Dict(items) => {
            out.push('{');
            for (i, (k, v)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(snap, k, out, depth + 1);
                out.push_str(": ");
                repr_into(snap, v, out, depth + 1);
            }
            out.push('}');
        }
        Tree::Stack(id) => {
            out.push('[');
            for (i, f) in snap.stack_frames(*id).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_frame(snap, f, out, depth);
            }
            out.push(']');
        }
        Tree::Elided => out.push_str("..."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real FX-augmented snapshot (tests/data/real/fx_augmented.pickle): the stacks of the
    /// compiled graph's allocations carry their FX node.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn fx_fields_of_a_real_snapshot_are_shown_under_their_frame() {
        let path = crate::test_fixtures::fixture("real", "fx_augmented.pickle");
        let snap = crate::load(&std::fs::read(path).unwrap()).unwrap();
        let lines: Vec<String> = (0..snap.stacks.len() as u32).flat_map(|s| stack_lines(&snap, s)).collect();
        let fx: Vec<&String> = lines.iter().filter(|l| l.starts_with("    >> FX: ")).collect();
        assert!(fx.len() >= 3, "{lines:#?}");
        assert!(
            lines.iter().any(|l| l == "    >> FX: node=addmm, op=call_function, target=aten.addmm.default"),
            "{fx:#?}"
        );
    }

    #[test]
    fn counts_name_their_noun() {
        assert_eq!(plural(1, "note"), "1 note");
        assert_eq!(plural(0, "tensor"), "0 tensors");
        assert_eq!(plural(3, "problem"), "3 problems");
    }

    #[test]
    fn html_escapes_text_and_attributes() {
        assert_eq!(
            escape_html(r#"<a href="x">Tom & Jerry's</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;"
        );
        assert_eq!(escape_html("plain"), "plain");
    }

    #[test]
    fn page_sizes_have_one_rule() {
        assert_eq!(human_size(0.0), "0 B");
        assert_eq!(human_size(512.0), "512 B");
        assert_eq!(human_size(400.0 * 1048576.0), "400 MiB");
        assert_eq!(human_size(3.6 * 1073741824.0), "3.6 GiB");
        assert_eq!(human_size(1023.97 * 1024.0), "1024 KiB");
        assert_eq!(human_size(-0.01 * 1024.0 * 1024.0), "-10.2 KiB");
        assert_eq!(one_decimal(-0.04), "0");
        assert_eq!(size_with_bytes(0), "0 B");
        assert_eq!(size_with_bytes(1023), "1023 B");
        assert_eq!(size_with_bytes(524_288_000), "500 MiB (524288000 bytes)");
        assert_eq!(size_with_bytes(1_610_612_736), "1.5 GiB (1610612736 bytes)");
    }

    #[test]
    fn sizes_like_python() {
        assert_eq!(py_size(0), "0.0B");
        assert_eq!(py_size(512), "512.0B");
        assert_eq!(py_size(20 * 1024 * 1024), "20.0MiB");
        assert_eq!(py_size(1280), "1.2KiB"); // Python rounds half to even on the exact value
        assert_eq!(py_size(-1395864371), "-1.3GiB");
        assert_eq!(py_size(1 << 80), "1.0YiB");
    }

    #[test]
    fn floats_like_python() {
        assert_eq!(py_float(0.1), "0.1");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(1.5e-5), "1.5e-05");
        assert_eq!(py_float(123456789012345.6), "123456789012345.6");
        assert_eq!(py_float(2.0), "2.0");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(-0.0), "-0.0");
        assert_eq!(py_float(1e22), "1e+22");
        assert_eq!(py_float(1.7976931348623157e308), "1.7976931348623157e+308");
    }

    #[test]
    fn strings_like_python() {
        let r = |s: &str| {
            let mut o = String::new();
            py_str(s, &mut o);
            o
        };
        assert_eq!(r("abc"), "'abc'");
        assert_eq!(r("it's"), "\"it's\"");
        assert_eq!(r("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(r("tab\there\n"), "'tab\\there\\n'");
        assert_eq!(r("é中😀"), "'é中😀'");
        assert_eq!(r("\u{1}\u{7f}\u{a0}"), "'\\x01\\x7f\\xa0'");
        assert_eq!(r("\\"), "'\\\\'");
    }

    #[test]
    fn repeats_collapse() {
        let v: Vec<String> = ["a", "b", "b", "b", "c", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(collapse_repeats(v), vec!["a", "b", "<repeats 2 times>", "c", "c"]);
    }
}

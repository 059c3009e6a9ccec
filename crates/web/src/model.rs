//! Loading a snapshot from chunks of bytes, and what one plot of it needs. Nothing here touches
//! the DOM: the same code runs in the page and in the loading Web Worker ([`crate::worker`]),
//! which hands the model and plot over as bytes ([`memviz_core::wire`]).

use memviz_core::snapshot::{Action, Snapshot};
use memviz_core::timeline::{self, Layout, Options};
use memviz_core::{Error, Loader};

use crate::xmap::TimeMap;

/// Bytes read from a file at a time: big enough that reading an 85 MiB file in slices costs
/// little more than reading it whole (measured in Chromium: 4 MiB slices took about twice as
/// long), small enough to update the progress bar several times a second.
pub const CHUNK_BYTES: usize = 8 << 20;

/// Feeds a snapshot's bytes chunk by chunk and builds the model at the end.
pub struct ModelLoader {
    loader: Loader,
    total_bytes: u64,
    fed_bytes: u64,
}

impl ModelLoader {
    /// A loader for a file of `total_bytes`.
    pub fn new(total_bytes: u64) -> ModelLoader {
        ModelLoader {
            loader: Loader::new(Some(total_bytes)),
            total_bytes,
            fed_bytes: 0,
        }
    }

    /// Feeds the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.fed_bytes += chunk.len() as u64;
        self.loader.feed(chunk)
    }

    /// Share of the file fed so far, 0 to 1.
    pub fn fraction(&self) -> f64 {
        if self.total_bytes == 0 {
            1.0
        } else {
            (self.fed_bytes as f64 / self.total_bytes as f64).min(1.0)
        }
    }

    /// Ends the input and builds the model.
    pub fn finish(self) -> Result<Snapshot, Error> {
        self.loader.finish()
    }
}

/// The device a new file shows first: `preferred` when the file has it, else the first device
/// with a trace.
pub fn choose_device(snap: &Snapshot, preferred: Option<i64>) -> usize {
    preferred
        .and_then(|index| snap.devices.iter().position(|d| d.index == index))
        .or_else(|| snap.default_device())
        .unwrap_or(0)
}

/// Loads a snapshot from chunks in one go.
pub fn load_chunks<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    total_bytes: u64,
) -> Result<Snapshot, Error> {
    let mut l = ModelLoader::new(total_bytes);
    for c in chunks {
        l.feed(c)?;
    }
    l.finish()
}

/// Decodes standard base64 (with or without padding; whitespace ignored); `None` if malformed.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut padding = false;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padding = true;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if padding {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// An `oom` entry placed on the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OomMark {
    /// Trace row of the entry.
    pub row: u32,
    /// Step it is drawn at.
    pub step: f64,
}

/// A `record_function` region from `external_annotations`, START to END.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotationSpan {
    /// Region name.
    pub name: String,
    /// Step of the START (the event nearest in time).
    pub start_step: f64,
    /// Step of the END.
    pub end_step: f64,
    /// Time of the START, µs since the epoch.
    pub start_us: i64,
    /// Time of the END, µs since the epoch (the last event's time for a region never ended).
    pub end_us: i64,
}

/// Everything one plot of one device needs.
pub struct PlotData {
    /// Index into the snapshot's devices.
    pub device_pos: usize,
    /// The layout.
    pub layout: Layout,
    /// Step → time map, when the trace has times.
    pub time: Option<TimeMap>,
    /// OOM entries.
    pub ooms: Vec<OomMark>,
    /// Annotated regions of this device, in start order.
    pub annotations: Vec<AnnotationSpan>,
    /// Row of each annotation in the strip above the plot (nested regions get lower rows).
    pub annotation_rows: Vec<usize>,
    /// Rows the strip needs.
    pub annotation_row_count: usize,
}

memviz_core::wire_struct!(OomMark { row, step });
memviz_core::wire_struct!(AnnotationSpan { name, start_step, end_step, start_us, end_us });
memviz_core::wire_struct!(PlotData {
    device_pos,
    layout,
    time,
    ooms,
    annotations,
    annotation_rows,
    annotation_row_count,
});

/// Most rows the annotation strip gets; deeper nesting shares the last row.
pub const MAX_ANNOTATION_ROWS: usize = 3;

/// Assigns each span (sorted by start) the first row free at its start.
pub fn assign_rows(spans: &[(f64, f64)], max_rows: usize) -> (Vec<usize>, usize) {
    let mut row_end: Vec<f64> = Vec::new();
    let mut rows = Vec::with_capacity(spans.len());
    for &(a, b) in spans {
        let r = match row_end.iter().position(|&e| e <= a) {
            Some(r) => r,
            None if row_end.len() < max_rows.max(1) => {
                row_end.push(f64::NEG_INFINITY);
                row_end.len() - 1
            }
            None => row_end.len() - 1,
        };
        row_end[r] = row_end[r].max(b);
        rows.push(r);
    }
    (rows, row_end.len())
}

impl PlotData {
    /// Lays out one device.
    pub fn build(snap: &Snapshot, device_pos: usize, options: Options) -> PlotData {
        let layout = Layout::build(snap, device_pos, options);
        let Some(dev) = snap.devices.get(device_pos) else {
            return PlotData {
                device_pos,
                layout,
                time: None,
                ooms: Vec::new(),
                annotations: Vec::new(),
                annotation_rows: Vec::new(),
                annotation_row_count: 0,
            };
        };
        let t = &dev.trace;
        let time = TimeMap::build(&layout, t);
        let ooms = t
            .action
            .iter()
            .enumerate()
            .filter(|(_, &a)| a == Action::Oom)
            .map(|(row, _)| OomMark {
                row: row as u32,
                step: f64::from(layout.step_for_row(row as u32)),
            })
            .collect();
        let mut annotations = Vec::new();
        if let Some(tm) = &time {
            let end_us = tm.t0_us + tm.end_us() as i64;
            let mut open: Vec<(u32, i64)> = Vec::new();
            let step_of = |tu: i64| timeline::step_at_time(&layout, t, tu).unwrap_or(0.0);
            let push = |name: u32, a: i64, b: i64, out: &mut Vec<AnnotationSpan>| {
                out.push(AnnotationSpan {
                    name: snap.strings.get(name).to_string(),
                    start_step: step_of(a),
                    end_step: step_of(b),
                    start_us: a,
                    end_us: b,
                });
            };
            for a in snap.annotations.iter().filter(|a| a.device == dev.index) {
                let Some(tu) = a.time_us else { continue };
                if a.start {
                    open.push((a.name, tu));
                } else if let Some(i) = open.iter().rposition(|&(n, _)| n == a.name) {
                    let (n, s) = open.remove(i);
                    push(n, s, tu, &mut annotations);
                } else {
                    push(a.name, tm.t0_us, tu, &mut annotations);
                }
            }
            for (n, s) in open {
                push(n, s, end_us.max(s), &mut annotations);
            }
            annotations.sort_by(|a, b| a.start_us.cmp(&b.start_us).then(b.end_us.cmp(&a.end_us)));
        }
        let spans: Vec<(f64, f64)> = annotations
            .iter()
            .map(|a| (a.start_us as f64, a.end_us as f64))
            .collect();
        let (annotation_rows, annotation_row_count) = assign_rows(&spans, MAX_ANNOTATION_ROWS);
        PlotData {
            device_pos,
            layout,
            time,
            ooms,
            annotations,
            annotation_rows,
            annotation_row_count,
        }
    }

    /// Number of allocations the layout knows (drawn or summarized).
    pub fn element_count(&self) -> usize {
        self.layout.elements.len()
    }
}

pub use memviz_core::timeline::ColumnEnvelope;

/// Envelopes of the drawn stack and of the total over columns; `bounds` are the columns' step
/// boundaries (`bounds.len() - 1` columns, non-decreasing).
pub fn column_envelopes(layout: &Layout, bounds: &[f64]) -> Vec<ColumnEnvelope> {
    layout.column_envelopes(bounds)
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    use crate::app::DEMO_SNAPSHOT;

    fn demo() -> Snapshot {
        load_chunks(
            DEMO_SNAPSHOT.chunks(CHUNK_BYTES),
            DEMO_SNAPSHOT.len() as u64,
        )
        .expect("demo loads")
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn small_chunks_give_the_same_model() {
        let whole = memviz_core::load(DEMO_SNAPSHOT).expect("load");
        let mut l = ModelLoader::new(DEMO_SNAPSHOT.len() as u64);
        for c in DEMO_SNAPSHOT.chunks(7 * 1024 + 3) {
            l.feed(c).expect("feed");
            assert!(l.fraction() <= 1.0);
        }
        assert_eq!(l.fraction(), 1.0);
        let chunked = l.finish().expect("finish");
        assert_eq!(chunked.devices.len(), whole.devices.len());
        assert_eq!(chunked.devices[0].trace.len(), whole.devices[0].trace.len());
        assert_eq!(chunked.annotations, whole.annotations);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn bad_bytes_give_errors_a_user_can_act_on() {
        let zip = load_chunks([&b"PK\x03\x04rest of a checkpoint"[..]], 22).expect_err("zip");
        assert!(zip.to_string().contains("torch.save"), "{zip}");
        let empty = load_chunks(std::iter::empty(), 0).expect_err("empty");
        assert!(empty.to_string().contains("empty"), "{empty}");
        let cut = load_chunks([&DEMO_SNAPSHOT[..1000]], 1000).expect_err("truncated");
        assert!(cut.to_string().contains("truncated"), "{cut}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_demo_has_timed_annotations_in_rows() {
        let snap = demo();
        let p = PlotData::build(
            &snap,
            snap.default_device().unwrap_or(0),
            Options::default(),
        );
        assert!(p.time.is_some());
        assert!(
            p.annotations.len() >= 10,
            "{} annotations",
            p.annotations.len()
        );
        assert!(p.annotation_row_count >= 2 && p.annotation_row_count <= MAX_ANNOTATION_ROWS);
        for (a, &row) in p.annotations.iter().zip(&p.annotation_rows) {
            assert!(
                a.start_us <= a.end_us && a.start_step <= a.end_step,
                "{a:?}"
            );
            assert!(row < p.annotation_row_count);
            assert!(a.end_step <= f64::from(p.layout.steps));
        }
        assert!(p.annotations.iter().any(|a| a.name == "## forward ##"));
        assert!(p.ooms.is_empty());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_model_and_plot_survive_the_hand_over_from_the_worker() {
        use memviz_core::wire::{decode, encode, encode_with_part_min, PartList};
        let snap = demo();
        let p = PlotData::build(&snap, choose_device(&snap, None), Options::default());
        // Every column as a part, as large files send them.
        let (snap_head, mut parts) = encode_with_part_min(&snap, 1);
        let (plot_head, plot_parts) = encode_with_part_min(&p, 1);
        assert!(!plot_parts.is_empty(), "the demo's layout has large columns");
        parts.extend(plot_parts);
        let mut src = PartList::new(parts.clone());
        let snap2: Snapshot = decode(&snap_head, &mut src).expect("snapshot");
        let p2: PlotData = decode(&plot_head, &mut src).expect("plot");
        assert_eq!(p2.annotations, p.annotations);
        assert_eq!(p2.annotation_rows, p.annotation_rows);
        assert_eq!(p2.ooms, p.ooms);
        assert_eq!(p2.time, p.time);
        assert_eq!(p2.layout.elements, p.layout.elements);
        assert_eq!(p2.layout.event_drawn_bytes, p.layout.event_drawn_bytes);
        assert_eq!(encode(&p2), encode(&p));
        assert_eq!(snap2.devices[0].trace.addr, snap.devices[0].trace.addr);
        assert_eq!(encode(&snap2), encode(&snap));
        // A part that went missing is an error, not a panic.
        let mut short = PartList::new(parts[..parts.len().saturating_sub(1)].to_vec());
        let _: Snapshot = decode(&snap_head, &mut short).expect("snapshot");
        assert!(decode::<PlotData>(&plot_head, &mut short).is_err());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn base64_decodes() {
        assert_eq!(base64_decode("").as_deref(), Some(&b""[..]));
        assert_eq!(base64_decode("Zg==").as_deref(), Some(&b"f"[..]));
        assert_eq!(base64_decode("Zm8=").as_deref(), Some(&b"fo"[..]));
        assert_eq!(base64_decode("Zm9v").as_deref(), Some(&b"foo"[..]));
        assert_eq!(base64_decode("Zm9vYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(
            base64_decode("gAT/\n+w==").as_deref(),
            Some(&[0x80, 0x04, 0xff, 0xfb][..])
        );
        assert_eq!(base64_decode("Zm9v!"), None);
        assert_eq!(base64_decode("Zg==Zg"), None);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn rows_keep_overlapping_spans_apart() {
        let (rows, n) = assign_rows(
            &[
                (0.0, 10.0),
                (1.0, 3.0),
                (2.0, 2.5),
                (3.0, 5.0),
                (11.0, 12.0),
            ],
            3,
        );
        assert_eq!(rows, vec![0, 1, 2, 1, 0]);
        assert_eq!(n, 3);
        let (rows, n) = assign_rows(&[(0.0, 10.0), (1.0, 9.0), (2.0, 8.0), (3.0, 7.0)], 2);
        assert_eq!(rows, vec![0, 1, 1, 1]);
        assert_eq!(n, 2);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn column_envelopes_cover_the_live_bytes() {
        let snap = demo();
        for max_entries in [timeline::DEFAULT_MAX_ENTRIES, 50] {
            let l = Layout::build(
                &snap,
                0,
                Options {
                    max_entries,
                    ..Options::default()
                },
            );
            let cols = 300;
            let bounds: Vec<f64> = (0..=cols)
                .map(|c| f64::from(l.steps) * c as f64 / cols as f64)
                .collect();
            let envs = column_envelopes(&l, &bounds);
            assert_eq!(envs.len(), cols);
            for (w, e) in bounds.windows(2).zip(&envs) {
                let (a, b) = (w[0], w[1]);
                // Every event in the column is under the envelope.
                for (i, &s) in l.event_step.iter().enumerate() {
                    let s = f64::from(s);
                    if s >= a && s < b {
                        let total = (l.event_drawn_bytes[i] + l.event_summarized_bytes[i]) as f64;
                        assert!(
                            total <= e.total_max_bytes,
                            "column {a}..{b}: {total} > {}",
                            e.total_max_bytes
                        );
                        assert!(l.event_drawn_bytes[i] as f64 <= e.drawn_max_bytes);
                    }
                }
                // And the envelope is no higher than the true maximum.
                assert!(
                    e.total_max_bytes <= l.max_live_between(a, b) as f64,
                    "column {a}..{b}"
                );
                assert!(e.drawn_at_peak_bytes <= e.total_max_bytes);
            }
        }
    }
}

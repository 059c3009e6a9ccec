//! Loading a snapshot from chunks of bytes. Nothing here touches the DOM: the same code runs in
//! the page and in its loading Web Worker, which hands the model and plot over as bytes
//! ([`memviz_core::wire`]). What a plot needs is [`memviz_core::plot`],
//! re-exported here.

use memviz_core::snapshot::Snapshot;
use memviz_core::timeline::Layout;
use memviz_core::{Error, Loader};

pub use memviz_core::plot::{
    assign_rows, choose_device, AnnotationSpan, OomMark, PlotData, TimeMap, MAX_ANNOTATION_ROWS,
};

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
        ModelLoader { loader: Loader::new(Some(total_bytes)), total_bytes, fed_bytes: 0 }
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

    /// Ends the input and builds the model but for the checks of its traces, which
    /// [`memviz_core::snapshot::Unchecked::check`] runs (the page skips them:
    /// [`memviz_core::snapshot::Unchecked::skip_trace_checks`]).
    pub fn finish_unchecked(self) -> Result<memviz_core::snapshot::Unchecked, Error> {
        self.loader.finish_unchecked()
    }
}

/// Loads a snapshot from chunks in one go.
pub fn load_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>, total_bytes: u64) -> Result<Snapshot, Error> {
    let mut l = ModelLoader::new(total_bytes);
    for c in chunks {
        l.feed(c)?;
    }
    l.finish()
}

/// Decodes standard base64 (with or without padding; whitespace ignored); `None` if malformed.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine as _;
    const ENGINE: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    ENGINE.decode(compact).ok()
}

/// The snapshot behind "Try a demo": a short GPT training run with AMP and annotated steps,
/// xz-compressed (29 KB instead of 44 KB of the page's gzipped weight); it opens through the same
/// decoder as any compressed file.
pub static DEMO_SNAPSHOT: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle.xz");

/// File name shown for the demo.
pub const DEMO_NAME: &str = "gpt_amp_annotated.pickle (demo)";

/// Where the time of one load went (ms).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// When the file was chosen (`performance.now()`).
    pub started_ms: f64,
    /// Waiting for file slices.
    pub read_ms: f64,
    /// Decoding the pickle.
    pub parse_ms: f64,
    /// Building the model.
    pub model_ms: f64,
    /// Laying out the timeline.
    pub layout_ms: f64,
    /// Giving the page a chance to repaint between steps.
    pub wait_ms: f64,
    /// Handing the model from the loading worker to the page (encoding there, decoding here).
    pub transfer_ms: f64,
    /// The part of `transfer_ms` spent on the page's main thread (copying the model in).
    pub decode_ms: f64,
    /// When the model and layout were ready (`performance.now()`).
    pub laid_out_ms: f64,
}

pub use memviz_core::timeline::ColumnEnvelope;

/// Envelopes of the drawn stack and of the total over columns; `bounds` are the columns' step
/// boundaries (`bounds.len() - 1` columns, non-decreasing).
pub fn column_envelopes(layout: &Layout, bounds: &[f64]) -> Vec<ColumnEnvelope> {
    layout.column_envelopes(bounds)
}

/// The PNG of a page the profiler's `export_memory_timeline("x.html")` wrote (its
/// `<img src='data:image/png;base64,...'>`), to show the picture it is; `None` for any other
/// page or a picture that does not decode as base64 of a PNG.
pub fn picture_of_page(page: &[u8]) -> Option<Vec<u8>> {
    const DATA_URL: &[u8] = b"data:image/png;base64,";
    const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";
    let start = page.windows(DATA_URL.len()).position(|w| w == DATA_URL)? + DATA_URL.len();
    let rest = page.get(start..)?;
    let end = rest.iter().position(|&b| matches!(b, b'\'' | b'"' | b')' | b'<'))?;
    let png = base64_decode(std::str::from_utf8(rest.get(..end)?).ok()?)?;
    png.starts_with(PNG_MAGIC).then_some(png)
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use memviz_core::timeline::{self, Options};

    fn demo() -> Snapshot {
        load_chunks(DEMO_SNAPSHOT.chunks(CHUNK_BYTES), DEMO_SNAPSHOT.len() as u64).expect("demo loads")
    }

    #[test]
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

    #[test]
    fn bad_bytes_give_errors_a_user_can_act_on() {
        let zip = load_chunks([&b"PK\x03\x04rest of a checkpoint"[..]], 22).expect_err("zip");
        assert!(zip.to_string().contains("torch.save"), "{zip}");
        let empty = load_chunks(std::iter::empty(), 0).expect_err("empty");
        assert!(empty.to_string().contains("empty"), "{empty}");
        let cut = load_chunks([&DEMO_SNAPSHOT[..1000]], 1000).expect_err("truncated");
        assert!(cut.to_string().contains("truncated"), "{cut}");
    }

    #[test]
    fn the_demo_has_timed_annotations_in_rows() {
        let snap = demo();
        let p = PlotData::build(&snap, snap.default_device().unwrap_or(0), Options::default());
        // Placed in time without the step -> time map, which the time axis builds.
        assert!(p.has_time && p.time.is_none());
        assert!(p.annotations.len() >= 10, "{} annotations", p.annotations.len());
        assert!(p.annotation_row_count >= 2 && p.annotation_row_count <= MAX_ANNOTATION_ROWS);
        for (a, &row) in p.annotations.iter().zip(&p.annotation_rows) {
            assert!(a.start_us <= a.end_us && a.start_step <= a.end_step, "{a:?}");
            assert!(row < p.annotation_row_count);
            assert!(a.end_step <= f64::from(p.layout.steps));
        }
        assert!(p.annotations.iter().any(|a| a.name == "## forward ##"));
        assert!(p.ooms.is_empty());
    }

    #[test]
    fn the_model_and_plot_survive_the_hand_over_from_the_worker() {
        use memviz_core::wire::{decode, encode, encode_with_part_min, PartList};
        let snap = demo();
        let mut p = PlotData::build(&snap, choose_device(&snap, None), Options::default());
        p.build_time_map(&snap);
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
        assert!(p.time.is_some());
        assert_eq!((p2.has_time, &p2.time), (p.has_time, &p.time));
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

    #[test]
    fn the_profilers_picture_page_gives_its_png_and_no_other_page_does() {
        let png = b"\x89PNG\r\n\x1a\n rest of a picture";
        let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, png);
        let page = format!("<html>\n<head><meta charset=\"utf-8\" /><title>GPU Memory Timeline HTML</title></head>\n<body>\n  <img src='data:image/png;base64,{b64}'>\n</body>\n</html>");
        assert_eq!(picture_of_page(page.as_bytes()).as_deref(), Some(&png[..]));
        assert_eq!(picture_of_page(page.replace('\'', "\"").as_bytes()).as_deref(), Some(&png[..]));
        assert_eq!(picture_of_page(b"<html><body>no picture</body></html>"), None);
        let not_png = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, b"GIF89a");
        assert_eq!(picture_of_page(format!("<img src='data:image/png;base64,{not_png}'>").as_bytes()), None);
        assert_eq!(picture_of_page(b"<img src='data:image/png;base64,!!!'>"), None, "not base64");
        assert_eq!(picture_of_page(b"<img src='data:image/png;base64,iVBO"), None, "cut off");
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(base64_decode("").as_deref(), Some(&b""[..]));
        assert_eq!(base64_decode("Zg==").as_deref(), Some(&b"f"[..]));
        assert_eq!(base64_decode("Zm8=").as_deref(), Some(&b"fo"[..]));
        assert_eq!(base64_decode("Zm9v").as_deref(), Some(&b"foo"[..]));
        assert_eq!(base64_decode("Zm9vYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(base64_decode("gAT/\n+w==").as_deref(), Some(&[0x80, 0x04, 0xff, 0xfb][..]));
        assert_eq!(base64_decode("Zm9v!"), None);
        assert_eq!(base64_decode("Zg==Zg"), None);
    }

    #[test]
    fn column_envelopes_cover_the_live_bytes() {
        let snap = demo();
        for max_entries in [timeline::DEFAULT_MAX_ENTRIES, 50] {
            let l = Layout::build(&snap, 0, Options { max_entries, ..Options::default() });
            let cols = 300;
            let bounds: Vec<f64> = (0..=cols).map(|c| f64::from(l.steps) * c as f64 / cols as f64).collect();
            let envs = column_envelopes(&l, &bounds);
            assert_eq!(envs.len(), cols);
            for (w, e) in bounds.windows(2).zip(&envs) {
                let (a, b) = (w[0], w[1]);
                // Every event in the column is under the envelope.
                for (i, &s) in l.event_step.iter().enumerate() {
                    let s = f64::from(s);
                    if s >= a && s < b {
                        let total = (l.event_drawn_bytes[i] + l.event_summarized_bytes[i]) as f64;
                        assert!(total <= e.total_max_bytes, "column {a}..{b}: {total} > {}", e.total_max_bytes);
                        assert!(l.event_drawn_bytes[i] as f64 <= e.drawn_max_bytes);
                    }
                }
                // And the envelope is no higher than the true maximum.
                assert!(e.total_max_bytes <= l.max_live_between(a, b) as f64, "column {a}..{b}");
                assert!(e.drawn_at_peak_bytes <= e.total_max_bytes);
            }
        }
    }
}

#![allow(clippy::expect_used)]

use std::future::Future;
use std::task::{Context, Poll, Waker};

use super::*;

static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");

/// Runs a future that never waits on anything outside it (the test slices and host do not).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// A clock that moves `step_ms` each time it is read; records progress and turns of the event
/// loop, and stops after `stop_after` slices.
struct TestHost {
    clock_ms: std::cell::Cell<f64>,
    step_ms: f64,
    progress: Vec<u64>,
    turns: usize,
    stop_after: Option<usize>,
}

impl TestHost {
    fn new(step_ms: f64) -> TestHost {
        TestHost { clock_ms: std::cell::Cell::new(0.0), step_ms, progress: Vec::new(), turns: 0, stop_after: None }
    }
}

impl Host for TestHost {
    fn now_ms(&self) -> f64 {
        let t = self.clock_ms.get();
        self.clock_ms.set(t + self.step_ms);
        t
    }

    async fn take_events(&mut self) {
        self.turns += 1;
    }

    fn progress(&mut self, read_bytes: u64) -> bool {
        self.progress.push(read_bytes);
        self.stop_after.is_none_or(|n| self.progress.len() < n)
    }
}

fn feed(name: &str, total_bytes: u64, slice_bytes: u64, on_profile: OnProfile) -> Feed<'_> {
    Feed { name, total_bytes, slice_bytes, yield_every_ms: 4.0, on_profile }
}

#[test]
fn a_file_fed_in_slices_gives_the_same_model() {
    let whole = memviz_core::load(DEMO).expect("load");
    let total = DEMO.len() as u64;
    let slice_bytes = total / 5 + 1;
    let mut host = TestHost::new(0.5);
    let (fed, timings) =
        block_on(feed("demo", total, slice_bytes, OnProfile::Keep).run(&mut MemorySlices(DEMO), &mut host))
            .expect("fed");
    let Fed::Decoded(loader) = fed else { panic!("not decoded") };
    assert_eq!(loader.fraction(), 1.0);
    let snap = loader.finish().expect("model");
    assert_eq!(snap.devices.len(), whole.devices.len());
    assert_eq!(snap.devices[0].trace.len(), whole.devices[0].trace.len());
    // Progress after each slice, ending at the size.
    assert_eq!(host.progress.len(), 5);
    assert!(host.progress.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(host.progress.last(), Some(&total));
    // The clock moved: decoding took events in between, and the time is all accounted for.
    assert!(host.turns > 0);
    assert!(timings.parse_ms > 0.0 && timings.read_ms > 0.0 && timings.wait_ms > 0.0, "{timings:?}");
}

#[test]
fn a_quick_host_is_not_asked_to_take_events() {
    let mut host = TestHost::new(0.0);
    let total = DEMO.len() as u64;
    let (fed, timings) =
        block_on(feed("demo", total, total / 3 + 1, OnProfile::Stop).run(&mut MemorySlices(DEMO), &mut host))
            .expect("fed");
    assert!(matches!(fed, Fed::Decoded(_)));
    assert_eq!(host.turns, 0);
    assert_eq!(timings, FeedTimings::default());
}

#[test]
fn the_host_can_stop_the_load() {
    let mut host = TestHost { stop_after: Some(2), ..TestHost::new(0.1) };
    let total = DEMO.len() as u64;
    let (fed, _) =
        block_on(feed("demo", total, total / 4 + 1, OnProfile::Keep).run(&mut MemorySlices(DEMO), &mut host))
            .expect("stopped");
    assert!(matches!(fed, Fed::Stopped));
    assert_eq!(host.progress.len(), 2);
}

/// Slices of the lengths a reader chose, whatever was asked for (the page reads a file's first
/// MiBs in pieces of its own): the next one starts where the last one ended.
struct Pieces<'a> {
    bytes: &'a [u8],
    lengths: Vec<usize>,
    asked: Vec<u64>,
}

impl Slices for Pieces<'_> {
    async fn slice(&mut self, offset: u64, _end: u64) -> Result<&[u8], String> {
        self.asked.push(offset);
        let at = offset as usize;
        let len = self.lengths.get(self.asked.len() - 1).copied().unwrap_or(usize::MAX);
        Ok(&self.bytes[at..at.saturating_add(len).min(self.bytes.len())])
    }
}

#[test]
fn slices_of_any_length_give_the_same_model() {
    let whole = memviz_core::load(DEMO).expect("load");
    let total = DEMO.len() as u64;
    let mut pieces = Pieces { bytes: DEMO, lengths: vec![1, 7, 100, 4096], asked: Vec::new() };
    let mut host = TestHost::new(0.5);
    let (fed, _) =
        block_on(feed("demo", total, total / 3 + 1, OnProfile::Keep).run(&mut pieces, &mut host)).expect("fed");
    let Fed::Decoded(loader) = fed else { panic!("not decoded") };
    let snap = loader.finish().expect("model");
    assert_eq!(snap.devices[0].trace.len(), whole.devices[0].trace.len());
    assert_eq!(format!("{:?}", snap.devices[0].trace), format!("{:?}", whole.devices[0].trace));
    assert_eq!(&pieces.asked[..5], &[0, 1, 8, 108, 4204]);
    assert_eq!(host.progress.last(), Some(&total));
    // An empty slice before the end is an error, not a loop.
    let mut empty = Pieces { bytes: DEMO, lengths: vec![10, 0], asked: Vec::new() };
    let e = block_on(feed("e.pickle", total, 64, OnProfile::Keep).run(&mut empty, &mut host)).err().expect("empty");
    assert!(e.starts_with("Could not read e.pickle: a slice came back with the wrong length"), "{e}");
}

#[test]
fn errors_name_the_file_and_say_what_to_do() {
    struct Broken;
    impl Slices for Broken {
        async fn slice(&mut self, _: u64, _: u64) -> Result<&[u8], String> {
            Err("the browser refused to read it".into())
        }
    }
    let mut host = TestHost::new(0.0);
    let e = block_on(feed("x.pickle", 10, 4, OnProfile::Keep).run(&mut Broken, &mut host)).err().expect("unread");
    assert_eq!(e, "Could not read x.pickle: the browser refused to read it. Is the file still there and readable?");
    // A file shorter than it said.
    let e = block_on(feed("y.pickle", 10, 4, OnProfile::Keep).run(&mut MemorySlices(b"abc"), &mut host))
        .err()
        .expect("short");
    assert!(e.starts_with("Could not read y.pickle: "), "{e}");
    // Bytes that are no snapshot: found out while they are fed or when the model is built.
    let zip = b"PK\x03\x04rest of a checkpoint";
    let e = match block_on(feed("z.pt", zip.len() as u64, 8, OnProfile::Keep).run(&mut MemorySlices(zip), &mut host)) {
        Err(e) => e,
        Ok((Fed::Decoded(loader), _)) => open_error("z.pt", &loader.finish().expect_err("not a snapshot")),
        Ok(_) => panic!("neither decoded nor an error"),
    };
    assert!(e.starts_with("Could not open z.pt: ") && e.contains("torch.save"), "{e}");
}

#[test]
fn profiler_timelines_are_kept_whole_or_left_at_once() {
    let json = b"  [[0.0, 1.0], [[1, 2]]]";
    let total = json.len() as u64;
    let mut host = TestHost::new(0.0);
    let (fed, _) =
        block_on(feed("t.json", total, 5, OnProfile::Keep).run(&mut MemorySlices(json), &mut host)).expect("kept");
    let Fed::Profile { bytes, .. } = fed else { panic!("not a profile") };
    assert_eq!(bytes, json);
    let mut host = TestHost::new(0.0);
    let (fed, _) =
        block_on(feed("t.json", total, 5, OnProfile::Stop).run(&mut MemorySlices(json), &mut host)).expect("left");
    assert!(matches!(fed, Fed::Profile { ref bytes, .. } if bytes.is_empty()));
    assert!(host.progress.is_empty());
    assert!(maybe_profile(b"\n [1]") && !maybe_profile(b"{\"segments\": []}") && !maybe_profile(DEMO));
}

/// A JSON list that is no memory timeline memviz reads says why as a timeline, not "this is a
/// memory timeline" (which the snapshot reader says of any list of lists).
#[test]
fn a_timeline_of_the_wrong_shape_says_why() {
    use memviz_core::analysis::categories::read_profiler_timeline;
    for bad in [&b"[[1,2,3],[4,5]]"[..], b"[[1, 2, 3, 99]]", b"[[1,2],[[0,1]]]"] {
        let timeline = read_profiler_timeline(bad).expect_err("not a timeline");
        let snapshot = memviz_core::load(bad).expect_err("not a snapshot");
        let text = super::profile_error("t.json", &timeline, &snapshot);
        assert!(text.starts_with("Could not open t.json: not a profiler memory timeline: "), "{text}");
    }
}

/// Pickles up to the page's limit load on the page; compressed ones up to 512 MiB, JSON files
/// (profiler traces) up to 128 MiB.
#[test]
fn json_files_take_the_worker_sooner_than_pickles() {
    use super::{on_page_max_bytes_for, COMPRESSED_ON_PAGE_MAX_BYTES, JSON_ON_PAGE_MAX_BYTES};
    let limit = 1 << 30;
    assert_eq!(on_page_max_bytes_for("rank0.pickle", limit), limit);
    assert_eq!(on_page_max_bytes_for("snapshot", limit), limit);
    for name in ["x.pickle.gz", "X.PICKLE.ZST", "run.xz"] {
        assert_eq!(on_page_max_bytes_for(name, limit), COMPRESSED_ON_PAGE_MAX_BYTES, "{name}");
        assert_eq!(on_page_max_bytes_for(name, 4 << 20), 4 << 20, "{name}");
    }
    for name in ["w.pt.trace.json", "trace.JSON.GZ", "snapshot.json"] {
        assert_eq!(on_page_max_bytes_for(name, limit), JSON_ON_PAGE_MAX_BYTES, "{name}");
    }
    // A lower limit (the tests of the worker's path set one) holds for every file.
    assert_eq!(on_page_max_bytes_for("t.json", 4 << 20), 4 << 20);
}

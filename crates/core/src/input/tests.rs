#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use super::*;
use crate::reference;

/// A small snapshot pickle (protocol 2), made by hand.
fn tiny_pickle() -> Vec<u8> {
    // {"segments": [], "device_traces": [[]]}
    let mut p = vec![0x80, 2, b'}', b'q', 0, b'('];
    let s = |p: &mut Vec<u8>, t: &str| {
        p.push(b'X');
        p.extend_from_slice(&(t.len() as u32).to_le_bytes());
        p.extend_from_slice(t.as_bytes());
    };
    s(&mut p, "segments");
    p.push(b']');
    s(&mut p, "device_traces");
    p.extend_from_slice(b"](]e");
    p.extend_from_slice(b"u.");
    p
}

/// A file of `tests/data/real`; panics with its path when it is missing.
fn fixture(name: &str) -> Vec<u8> {
    let p = crate::test_fixtures::fixture("real", name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(crate) fn xz(data: &[u8]) -> Vec<u8> {
    let mut w = lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

pub(crate) fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

/// A page in the shape PyTorch's `_memory_viz._format_viz` writes.
pub(crate) fn pytorch_page(pickle: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let mut buf = pickle.to_vec();
    buf.extend(std::iter::repeat_n(0u8, 3 - pickle.len() % 3));
    let b64 = base64::engine::general_purpose::STANDARD.encode(&buf);
    format!(
        "\n<!DOCTYPE html>\n<html>\n<head>\n</head>\n<body>\n<script type=\"module\">\nimport {{add_local_files}} from \"https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js\"\nconst local_files = [{{\"name\": \"snapshot.pickle\", \"base64\": \"{b64}\"}}]\nadd_local_files(local_files, 'Active Memory Timeline')\n</script>\n</body>\n"
    )
    .into_bytes()
}

fn load_in_chunks(bytes: &[u8], chunk: usize) -> Result<Snapshot, Error> {
    let mut l = Loader::new(Some(bytes.len() as u64));
    for c in bytes.chunks(chunk.max(1)) {
        l.feed(c)?;
    }
    l.finish()
}

fn unpacked(bytes: &[u8], chunk: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut u = Unpacker::new();
    let mut sink = |_: Container, b: &[u8]| {
        assert!(b.len() <= OUT_BYTES.max(chunk));
        out.extend_from_slice(b);
        Ok(())
    };
    for c in bytes.chunks(chunk.max(1)) {
        u.feed(c, &mut sink)?;
    }
    u.finish(&mut sink)?;
    Ok(out)
}

#[test]
fn sniffs_by_magic_bytes() {
    assert_eq!(sniff(&gzip(b"x")), Container::Gzip);
    assert_eq!(sniff(&xz(b"x")), Container::Xz);
    assert_eq!(sniff(&zstd(b"x")), Container::Zstd);
    assert_eq!(sniff(&pytorch_page(b"x")), Container::Html);
    assert_eq!(sniff(b"\xef\xbb\xbf  <html><body>"), Container::Html);
    assert_eq!(sniff(&tiny_pickle()), Container::Plain);
    assert_eq!(sniff(b"{\"segments\": []}"), Container::Plain);
    assert_eq!(sniff(b""), Container::Plain);
}

#[test]
fn every_container_unpacks_to_the_same_bytes_in_any_chunks() {
    let plain: Vec<u8> = (0..3_000_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    let mut page_input = b"\x80\x04".to_vec();
    page_input.extend_from_slice(&plain[..100_000]);
    page_input.push(b'.');
    for (name, packed, want) in [
        ("gzip", gzip(&plain), plain.clone()),
        ("xz", xz(&plain), plain.clone()),
        ("zstd", zstd(&plain), plain.clone()),
        ("html", pytorch_page(&page_input), page_input.clone()),
        ("gzip in html", pytorch_page(&gzip(&page_input)), page_input.clone()),
    ] {
        for chunk in [1usize, 7, 4096, 1 << 20, usize::MAX] {
            if chunk == 1 && packed.len() > 200_000 {
                continue;
            }
            let got = unpacked(&packed, chunk.min(packed.len()))
                .unwrap_or_else(|e| panic!("{name} in chunks of {chunk}: {e}"));
            assert!(got == want, "{name} in chunks of {chunk}: {} bytes, want {}", got.len(), want.len());
        }
    }
}

#[test]
fn one_byte_at_a_time_works_for_small_files() {
    let p = tiny_pickle();
    for packed in [gzip(&p), xz(&p), zstd(&p), pytorch_page(&p)] {
        assert_eq!(unpacked(&packed, 1).unwrap(), p);
        load_in_chunks(&packed, 1).unwrap();
        load(&packed).unwrap();
    }
}

#[test]
fn concatenated_members_and_frames() {
    let p = tiny_pickle();
    let (a, b) = p.split_at(10);
    for f in [gzip, zstd, xz] {
        let mut two = f(a);
        two.extend_from_slice(&f(b));
        assert_eq!(unpacked(&two, 3).unwrap(), p);
    }
    // A skippable zstd frame first.
    let mut skip = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
    skip.extend_from_slice(&zstd(&p));
    assert_eq!(sniff(&skip), Container::Zstd);
    assert_eq!(unpacked(&skip, 2).unwrap(), p);
}

#[test]
fn fixtures_give_the_reference_text_through_every_container() {
    for name in ["oom", "resnet50_fixed", "state_only"] {
        let plain = fixture(&format!("{name}.pickle"));
        let want_stats = String::from_utf8(fixture(&format!("{name}.ref.stats.txt"))).unwrap();
        let want_trace = String::from_utf8(fixture(&format!("{name}.ref.trace.txt"))).unwrap();
        for (kind, packed) in
            [("gz", gzip(&plain)), ("xz", xz(&plain)), ("zst", zstd(&plain)), ("html", pytorch_page(&plain))]
        {
            let snap = load_in_chunks(&packed, 65_536).unwrap_or_else(|e| panic!("{name}.{kind}: {e}"));
            assert!(reference::stats(&snap).unwrap() == want_stats, "{name}.{kind}: stats differ");
            assert!(reference::trace(&snap).unwrap() == want_trace, "{name}.{kind}: trace differs");
            let whole = crate::load(&packed).unwrap();
            assert_eq!(whole.devices.len(), snap.devices.len());
        }
    }
}

#[test]
fn pytorch_padding_is_dropped() {
    // 1 to 3 NULs after STOP: none reaches the pickle reader (no "bytes after STOP" warning).
    for n in 10..13 {
        let mut data = b"\x80\x04".to_vec();
        data.extend(std::iter::repeat_n(b'N', n));
        data.push(b'.');
        assert_eq!(unpacked(&pytorch_page(&data), 5).unwrap(), data);
    }
    // NULs inside the data are kept.
    let data = b"\x80\x04\x00\x00\x00\x00\x00x.".to_vec();
    assert_eq!(unpacked(&pytorch_page(&data), 1).unwrap(), data);
}

#[test]
fn memviz_pages_open_too() {
    use base64::Engine as _;
    let p = tiny_pickle();
    let b64 = base64::engine::general_purpose::STANDARD.encode(gzip(&p));
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><style>body {{}}</style></head><body><p>drop a file</p>\n<script type=\"application/json\" id=\"memviz-embedded\">{{\"files\":[{{\"name\":\"x.pickle.gz\",\"base64\":\"{b64}\"}}],\"view\":null}}</script>\n<script type=\"module\">const x = atob('AAAA');</script></body></html>\n"
    );
    assert_eq!(unpacked(page.as_bytes(), 3).unwrap(), p);
    let empty = "<!doctype html>\n<html><body>\n<script type=\"application/json\" id=\"memviz-embedded\">{\"files\":[],\"view\":null}</script><script>\"base64\": \"AAAA\"</script></body></html>";
    let e = unpacked(empty.as_bytes(), 4096).unwrap_err().to_string();
    assert!(e.contains("memviz viewer"), "{e}");
}

#[test]
fn bad_inputs_fail_with_a_message_naming_the_format() {
    let p = tiny_pickle();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("gzip cut", gzip(&p)[..20].to_vec(), "truncated"),
        ("xz cut", xz(&p)[..30].to_vec(), "truncated"),
        ("zstd cut", zstd(&p)[..12].to_vec(), "truncated"),
        ("gzip header only", gzip(&p)[..5].to_vec(), "truncated"),
        (
            "gzip flipped",
            {
                let mut g = gzip(&p);
                let n = g.len();
                g[n - 6] ^= 0xff;
                g
            },
            "gzip",
        ),
        (
            "xz flipped",
            {
                let mut g = xz(&p);
                g[40] ^= 0x55;
                g
            },
            "xz",
        ),
        (
            "zstd flipped",
            {
                let mut g = zstd(&p);
                let n = g.len();
                g[n / 2] ^= 0x55;
                g
            },
            "zstd",
        ),
        ("page without snapshot", b"<!DOCTYPE html><html><body>hello</body></html>".to_vec(), "no memory snapshot"),
        (
            "page cut",
            {
                let g = pytorch_page(&p);
                let end = g.windows(3).position(|w| w == b"\"}]").unwrap();
                g[..end - 4].to_vec()
            },
            "truncated",
        ),
        (
            "page bad base64",
            {
                let mut g = pytorch_page(&p);
                let at = g.windows(10).position(|w| w == b"\"base64\": ").unwrap() + 12;
                g[at] = b'%';
                g
            },
            "base64",
        ),
        ("gzip of zeros", gzip(&[0u8; 100_000]), "gzip-decompressed"),
        ("page in a page", pytorch_page(&pytorch_page(&p)), "html"),
        ("gzip of a zip", gzip(b"PK\x03\x04 and the rest of a checkpoint"), "zip"),
        ("png", b"\x89PNG\r\n\x1a\n and more".to_vec(), "image"),
        (
            "chrome trace",
            b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"traceEvents\": []}".to_vec(),
            "profiler trace",
        ),
        ("bzip2", b"BZh91AY&SY and more".to_vec(), "bzip2"),
    ];
    for (name, bytes, needle) in cases {
        let whole = crate::load(&bytes);
        let chunked = load_in_chunks(&bytes, 3);
        for r in [whole, chunked] {
            match r {
                Ok(_) => panic!("{name}: loaded"),
                Err(e) => {
                    let m = e.to_string();
                    assert!(m.to_lowercase().contains(&needle.to_lowercase()), "{name}: {m}");
                    assert!(!m.contains('\n'), "{name}: {m}");
                }
            }
        }
    }
}

#[test]
fn a_decompression_bomb_stops_early() {
    // Pickle-looking bytes (the start of a 1 GiB BINBYTES8) from a few KiB of zstd: stopped by
    // the ratio limit long before the end, quickly.
    let mut head = b"\x80\x04\x8e".to_vec();
    head.extend_from_slice(&(1u64 << 30).to_le_bytes());
    let mut frame = head.clone();
    frame.extend(std::iter::repeat_n(b'a', 96 << 20));
    let packed = zstd(&frame);
    let t0 = std::time::Instant::now();
    let e = load_in_chunks(&packed, 1 << 20).unwrap_err().to_string();
    assert!(e.contains("decompression bomb"), "{e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(20), "took {:?}", t0.elapsed());
}

#[test]
fn progress_counts_compressed_bytes() {
    let p = tiny_pickle();
    let g = gzip(&p);
    let mut l = Loader::new(Some(g.len() as u64));
    l.feed(&g).unwrap();
    assert_eq!(l.fed_bytes(), g.len() as u64);
    assert_eq!(l.container(), Some(Container::Gzip));
    l.finish().unwrap();
}

#[test]
fn unpack_returns_the_bytes_inside() {
    let p = tiny_pickle();
    assert_eq!(unpack(&pytorch_page(&p)).unwrap(), (Container::Html, p.clone()));
    assert_eq!(unpack(&xz(&p)).unwrap(), (Container::Xz, p.clone()));
    assert_eq!(unpack(&p).unwrap(), (Container::Plain, p));
}

#[test]
fn peek_inside_shows_the_first_bytes() {
    let p = tiny_pickle();
    assert_eq!(peek_inside(&gzip(&p), 4), p[..4].to_vec());
    assert_eq!(peek_inside(&gzip(b"[[1, 2], [[3]]]"), 64), b"[[1, 2], [[3]]]".to_vec());
    assert!(peek_inside(b"\x1f\x8b garbage", 4).is_empty());
}

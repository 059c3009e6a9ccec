//! Zstandard, through ruzstd's frame decoder (pure Rust), fed whole blocks from a held window of
//! the input: frames one after another, skippable frames skipped, checksums checked, the window
//! limited to [`ZSTD_MAX_WINDOW_BYTES`](super::ZSTD_MAX_WINDOW_BYTES).

use ruzstd::decoding::FrameDecoder;

use super::{Out, OutBuf, ZSTD_MAX_WINDOW_BYTES};
use crate::error::Error;

const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Input given to the decoder at a time: more than its largest block (128 KiB and a header).
const SOURCE_BYTES: usize = 256 << 10;

/// Whether `head` starts with a skippable frame (magic 0x184D2A50 to 0x184D2A5F).
pub(super) fn is_skippable(head: &[u8]) -> bool {
    matches!(head, [m, 0x2a, 0x4d, 0x18, ..] if m & 0xf0 == 0x50)
}

/// The frame header's length at the start of `h` (magic included), when enough of it is there.
fn frame_header_len(h: &[u8]) -> Option<usize> {
    let d = *h.get(4)?;
    let single = d & 0x20 != 0;
    let window = if single { 0 } else { 1 };
    let dict = [0, 1, 2, 4][usize::from(d & 3)];
    let fcs = match d >> 6 {
        0 => usize::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    Some(5 + window + dict + fcs)
}

#[derive(Default)]
pub(super) struct Zstd {
    decoder: Option<FrameDecoder>,
    /// Input not yet decoded (at most one block plus a chunk).
    held: Vec<u8>,
    /// Bytes of a skippable frame still to skip.
    skip: u64,
    /// Compressed bytes before `held`.
    offset: u64,
    out: OutBuf,
    frames: u32,
}

fn bad(offset: u64, reason: String) -> Error {
    Error::Decompress { format: "zstd", offset: Some(offset), reason }
}

impl Zstd {
    pub(super) fn feed(&mut self, input: &[u8], out: &mut Out<'_, '_>) -> Result<(), Error> {
        self.held.extend_from_slice(input);
        self.run(false, out)
    }

    /// Decodes what the held input allows; `last` when no more input comes.
    fn run(&mut self, last: bool, out: &mut Out<'_, '_>) -> Result<(), Error> {
        let mut pos = 0usize;
        let result = self.run_from(&mut pos, last, out);
        self.held.drain(..pos.min(self.held.len()));
        self.offset += pos as u64;
        result
    }

    fn run_from(&mut self, pos: &mut usize, last: bool, out: &mut Out<'_, '_>) -> Result<(), Error> {
        loop {
            let rest = self.held.get(*pos..).unwrap_or_default();
            if self.skip > 0 {
                let n = (rest.len() as u64).min(self.skip);
                self.skip -= n;
                *pos += n as usize;
                if self.skip > 0 {
                    return Ok(());
                }
                continue;
            }
            let Some(decoder) = &mut self.decoder else {
                // Between frames: a new frame, a skippable one, or the end.
                if rest.is_empty() {
                    return Ok(());
                }
                if rest.len() < 8 && !last {
                    return Ok(());
                }
                if is_skippable(rest) {
                    let Some(len) = rest.get(4..8) else {
                        return Err(self.truncated());
                    };
                    self.skip = u64::from(u32::from_le_bytes([len[0], len[1], len[2], len[3]]));
                    *pos += 8;
                    continue;
                }
                if !rest.starts_with(&MAGIC) {
                    let at = self.offset + *pos as u64;
                    return Err(bad(
                        at,
                        if self.frames == 0 {
                            "not a zstd frame".into()
                        } else {
                            "the data after the last frame is not zstd".into()
                        },
                    ));
                }
                let Some(hlen) = frame_header_len(rest).filter(|&n| n <= rest.len()) else {
                    return if last { Err(self.truncated()) } else { Ok(()) };
                };
                let mut d = FrameDecoder::new();
                d.set_max_window_size(ZSTD_MAX_WINDOW_BYTES);
                let mut header = rest.get(..hlen).unwrap_or_default();
                d.reset(&mut header)
                    .map_err(|e| bad(self.offset + *pos as u64, format!("a frame header is not valid ({e})")))?;
                *pos += hlen;
                self.decoder = Some(d);
                continue;
            };
            if self.out.is_full() {
                self.out.flush(out)?;
            }
            let at = self.offset + *pos as u64;
            // A little input at a time (at least one whole block fits): the decoder decodes
            // every whole block it is given before handing any out, so a large slice would
            // hold its whole decompressed size at once.
            let some = rest.get(..rest.len().min(SOURCE_BYTES)).unwrap_or(rest);
            let (read, written) = decoder
                .decode_from_to(some, self.out.room())
                .map_err(|e| bad(at, format!("the compressed data is corrupt ({e})")))?;
            if read > some.len() {
                // Only the frame's checksum is missing, and fewer than its 4 bytes are here.
                self.out.commit(written);
                self.out.flush(out)?;
                return if last { Err(self.truncated()) } else { Ok(()) };
            }
            *pos += read;
            self.out.commit(written);
            if decoder.is_finished() && decoder.can_collect() == 0 {
                if let (Some(want), Some(got)) = (decoder.get_checksum_from_data(), decoder.get_calculated_checksum()) {
                    if want != got {
                        return Err(bad(at, "the data does not match its checksum (the file is damaged)".into()));
                    }
                }
                self.decoder = None;
                self.frames += 1;
                self.out.flush(out)?;
                continue;
            }
            if read == 0 && written == 0 {
                return self.out.flush(out);
            }
        }
    }

    fn truncated(&self) -> Error {
        Error::Decompress {
            format: "zstd",
            offset: None,
            reason: "the file is truncated: it ends before its compressed data does (was the download or the copy incomplete?)".into(),
        }
    }

    pub(super) fn finish(&mut self, out: &mut Out<'_, '_>) -> Result<(), Error> {
        self.run(true, out)?;
        self.out.flush(out)?;
        if self.decoder.is_some() || self.skip > 0 || !self.held.is_empty() || self.frames == 0 {
            return Err(self.truncated());
        }
        Ok(())
    }
}

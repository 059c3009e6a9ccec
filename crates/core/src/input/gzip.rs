//! gzip (RFC 1952), one member after another: the header read here, the deflate data through
//! flate2's raw inflater (pure Rust), the trailer's CRC-32 and length checked.

use flate2::{Crc, Decompress, FlushDecompress, Status};

use super::{Out, OutBuf};
use crate::error::Error;

/// Longest header accepted (the file name and comment fields are unbounded in the format).
const MAX_HEADER_BYTES: usize = 1 << 20;

#[derive(Default)]
enum State {
    /// Reading a member's header (the bytes so far are held).
    #[default]
    Header,
    /// Inflating a member's data.
    Data,
    /// Reading the 8-byte trailer.
    Trailer,
    /// A member has ended; more input must be another member.
    Between,
}

pub(super) struct Gzip {
    state: State,
    held: Vec<u8>,
    inflate: Decompress,
    crc: Crc,
    out: OutBuf,
    /// Compressed bytes before the current call's input.
    offset: u64,
    members: u32,
}

impl Default for Gzip {
    fn default() -> Self {
        Gzip {
            state: State::Header,
            held: Vec::new(),
            inflate: Decompress::new(false),
            crc: Crc::new(),
            out: OutBuf::default(),
            offset: 0,
            members: 0,
        }
    }
}

fn bad(offset: u64, reason: impl Into<String>) -> Error {
    Error::Decompress { format: "gzip", offset: Some(offset), reason: reason.into() }
}

/// The length of the gzip header at the start of `h`: `Ok(None)` when more bytes are needed.
fn header_len(h: &[u8], offset: u64) -> Result<Option<usize>, Error> {
    if h.len() < 10 {
        return Ok(None);
    }
    if h[0] != 0x1f || h[1] != 0x8b {
        return Err(bad(offset, "not a gzip member (bad magic bytes)"));
    }
    if h[2] != 8 {
        return Err(bad(offset, format!("unknown compression method {} (only deflate, 8, exists)", h[2])));
    }
    let flags = h[3];
    if flags & 0xe0 != 0 {
        return Err(bad(offset, "reserved header flags are set"));
    }
    let mut at = 10usize;
    if flags & 0x04 != 0 {
        let Some(x) = h.get(at..at + 2) else {
            return Ok(None);
        };
        at += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
    }
    for bit in [0x08u8, 0x10] {
        if flags & bit != 0 {
            match h.get(at..).and_then(|rest| rest.iter().position(|&b| b == 0)) {
                Some(i) => at += i + 1,
                None => return Ok(None),
            }
        }
    }
    if flags & 0x02 != 0 {
        at += 2;
    }
    Ok((h.len() >= at).then_some(at))
}

impl Gzip {
    pub(super) fn feed(&mut self, mut input: &[u8], out: &mut Out<'_, '_>) -> Result<(), Error> {
        while !input.is_empty() {
            match self.state {
                State::Between => {
                    if input.iter().all(|&b| b == 0) && self.held.is_empty() {
                        // Zero padding after the last member (tape and tar tools write it).
                        self.offset += input.len() as u64;
                        return Ok(());
                    }
                    self.state = State::Header;
                }
                State::Header => {
                    let take = input.len().min(MAX_HEADER_BYTES + 1 - self.held.len().min(MAX_HEADER_BYTES));
                    let start = self.held.len();
                    self.held.extend_from_slice(&input[..take]);
                    match header_len(&self.held, self.offset)? {
                        Some(n) => {
                            let used = n.saturating_sub(start).min(take);
                            input = &input[used..];
                            self.offset += used as u64;
                            self.held.clear();
                            self.inflate.reset(false);
                            self.crc.reset();
                            self.state = State::Data;
                        }
                        None if self.held.len() > MAX_HEADER_BYTES => {
                            return Err(bad(self.offset, "the header is longer than 1 MiB"));
                        }
                        None => {
                            self.offset += take as u64;
                            input = &input[take..];
                        }
                    }
                }
                State::Data => {
                    let used = self.inflate_some(input, FlushDecompress::None, out)?;
                    input = &input[used..];
                }
                State::Trailer => {
                    let need = 8 - self.held.len();
                    let take = need.min(input.len());
                    self.held.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    self.offset += take as u64;
                    if self.held.len() == 8 {
                        let t = &self.held;
                        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
                        let len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
                        if crc != self.crc.sum() {
                            return Err(bad(self.offset, "the data does not match its CRC-32 (the file is damaged)"));
                        }
                        if len != self.crc.amount() {
                            return Err(bad(
                                self.offset,
                                "the data does not match its recorded length (the file is damaged)",
                            ));
                        }
                        self.held.clear();
                        self.members += 1;
                        self.state = State::Between;
                    }
                }
            }
        }
        Ok(())
    }

    /// Inflates from `input` until it is used up or the member's data ends; returns bytes used.
    fn inflate_some(&mut self, input: &[u8], flush: FlushDecompress, out: &mut Out<'_, '_>) -> Result<usize, Error> {
        let mut used = 0usize;
        loop {
            if self.out.is_full() {
                self.out.flush(out)?;
            }
            let (in0, out0) = (self.inflate.total_in(), self.inflate.total_out());
            let status = self
                .inflate
                .decompress(input.get(used..).unwrap_or_default(), self.out.room(), flush)
                .map_err(|e| bad(self.offset, format!("the deflate data is corrupt ({e})")))?;
            let consumed = (self.inflate.total_in() - in0) as usize;
            let produced = (self.inflate.total_out() - out0) as usize;
            used += consumed;
            self.offset += consumed as u64;
            let written = self.out.commit(produced);
            self.crc.update(written);
            match status {
                Status::StreamEnd => {
                    self.state = State::Trailer;
                    self.held.clear();
                    self.out.flush(out)?;
                    return Ok(used);
                }
                _ if consumed == 0 && produced == 0 => {
                    self.out.flush(out)?;
                    return Ok(used);
                }
                _ => {}
            }
        }
    }

    pub(super) fn finish(&mut self, out: &mut Out<'_, '_>) -> Result<(), Error> {
        if let State::Data = self.state {
            self.inflate_some(&[], FlushDecompress::Finish, out)?;
        }
        match self.state {
            State::Between => Ok(()),
            State::Header if self.members > 0 && self.held.is_empty() => Ok(()),
            _ => {
                self.out.flush(out)?;
                Err(Error::Decompress {
                    format: "gzip",
                    offset: None,
                    reason: "the file is truncated: it ends before its compressed data does (was the download or the copy incomplete?)".into(),
                })
            }
        }
    }
}

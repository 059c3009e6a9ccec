//! xz, through lzma-rust2's push decoder (pure Rust): concatenated streams and stream padding
//! accepted, the dictionary limited to [`XZ_MEM_LIMIT_BYTES`](super::XZ_MEM_LIMIT_BYTES).

use lzma_rust2::{Action, Status, XzStream};

use super::{Out, OutBuf, XZ_MEM_LIMIT_BYTES};
use crate::error::Error;

pub(super) struct Xz {
    stream: XzStream,
    out: OutBuf,
    ended: bool,
}

fn bad(offset: u64, e: &std::io::Error) -> Error {
    let reason = if e.kind() == std::io::ErrorKind::OutOfMemory {
        format!("it needs more memory than the {} MiB allowed ({e})", XZ_MEM_LIMIT_BYTES >> 20)
    } else if e.kind() == std::io::ErrorKind::UnexpectedEof {
        "the file is truncated: it ends before its compressed data does (was the download or the copy incomplete?)"
            .to_string()
    } else {
        format!("the compressed data is corrupt ({e})")
    };
    Error::Decompress { format: "xz", offset: Some(offset), reason }
}

impl Xz {
    pub(super) fn new() -> Xz {
        Xz {
            stream: XzStream::new_mem_limit(true, (XZ_MEM_LIMIT_BYTES >> 10) as u32),
            out: OutBuf::default(),
            ended: false,
        }
    }

    fn run(&mut self, input: &[u8], action: Action, out: &mut Out<'_, '_>) -> Result<(), Error> {
        let mut used = 0usize;
        loop {
            if self.out.is_full() {
                self.out.flush(out)?;
            }
            let rest = input.get(used..).unwrap_or_default();
            let r = self.stream.process(rest, self.out.room(), action).map_err(|e| bad(self.stream.total_in(), &e))?;
            used += r.bytes_consumed;
            self.out.commit(r.bytes_produced);
            if r.status == Status::StreamEnd {
                self.ended = true;
                return self.out.flush(out);
            }
            if r.bytes_consumed == 0 && r.bytes_produced == 0 {
                return self.out.flush(out);
            }
        }
    }

    pub(super) fn feed(&mut self, input: &[u8], out: &mut Out<'_, '_>) -> Result<(), Error> {
        self.run(input, Action::Run, out)
    }

    pub(super) fn finish(&mut self, out: &mut Out<'_, '_>) -> Result<(), Error> {
        if !self.ended {
            self.run(&[], Action::Finish, out)?;
        }
        if self.ended {
            Ok(())
        } else {
            Err(Error::Decompress {
                format: "xz",
                offset: None,
                reason: "the file is truncated: it ends before its compressed data does (was the download or the copy incomplete?)".into(),
            })
        }
    }
}

//! Profiler traces (`torch.profiler`'s `export_chrome_trace`, Kineto's `*.pt.trace.json` from
//! `tensorboard_trace_handler`) read as memory snapshots.
//!
//! A trace recorded with `profile_memory=True` holds a `[memory]` instant event for every
//! allocation and free (address, bytes, the allocator's total allocated and reserved bytes,
//! device), on the thread and at the time of the op that made it. [`scan`] splits the
//! `traceEvents` list into events as chunks arrive, holding one event at a time; [`events`]
//! keeps the memory events, the `cpu_op` and `python_function` ranges and the annotations;
//! [`build`] pairs allocations and frees by address (the model's lifetimes), attributes each
//! to the ops and Python functions open on its thread at its time, and makes the [`Snapshot`]
//! every view reads. The peak of its layout equals the trace's own `Total Allocated`.

pub mod build;
pub mod events;
pub mod scan;
#[cfg(test)]
mod tests;

pub use build::{DeviceTotals, CPU_DEVICE_INDEX, INPUT_SHAPES_KEY, NO_MEMORY_EVENTS};

use crate::error::Error;
use crate::Snapshot;

/// Reads a trace fed in chunks.
#[derive(Default)]
pub struct TraceLoader {
    scanner: scan::Scanner,
    collected: events::Collected,
}

impl TraceLoader {
    /// A loader at the start of a trace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        let collected = &mut self.collected;
        self.scanner.feed(chunk, &mut |e| collected.add(e))
    }

    /// Ends the input and builds the model, with what each device's events say of themselves.
    pub fn finish_with_totals(mut self) -> Result<(Snapshot, Vec<DeviceTotals>), Error> {
        self.scanner.finish()?;
        self.collected.base_time_ns = self.scanner.base_time_ns();
        build::build(self.collected)
    }

    /// Ends the input and builds the model.
    pub fn finish(self) -> Result<Snapshot, Error> {
        self.finish_with_totals().map(|(s, _)| s)
    }
}

/// Reads a whole (plain) trace held in memory.
pub fn load(bytes: &[u8]) -> Result<(Snapshot, Vec<DeviceTotals>), Error> {
    let mut l = TraceLoader::new();
    l.feed(bytes)?;
    l.finish_with_totals()
}

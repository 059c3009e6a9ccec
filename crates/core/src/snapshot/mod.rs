//! The compact snapshot model: columnar traces per device, interned frames and stacks, segments
//! and blocks with every field, and the schema-free parts kept as [`Tree`](crate::tree::Tree)s.
//!
//! Built from a decoded pickle ([`Snapshot::from_document`]) or JSON. Every format variant PyTorch
//! has written loads: a bare list of segments, legacy blocks with `history`, entries without
//! `time_us` or `frames`, OOM entries without `addr`, `user_defined` and merged `free` actions,
//! expandable segments, addresses at or above 2^63, profile_plot pickles with `category`, several
//! devices. Inconsistent traces load with [`Warning`]s.

mod build;
mod model;
mod wire;

pub use build::{Unchecked, MAX_DEVICES};
pub use model::{
    Action, Annotation, Block, BlockState, Device, DeviceKind, Frame, FrameExtra, Segment, Snapshot, SourceInfo,
    SparseColumn, StackTable, Strings, Trace, Warning, WarningKind, CPU_DEVICE_INDEX, PINNED_HOST_INDEX,
};

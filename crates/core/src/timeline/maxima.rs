//! Maxima of live bytes over fixed blocks of events ([`BlockMaxima`]), at two block sizes, and the
//! [`Piece`]s a range of events is cut into, so range maxima take whole blocks at once.

use super::Layout;

/// Events per small block of maxima.
pub(super) const SMALL: usize = 32;
/// Events per block of maxima: a whole number of small blocks.
pub(super) const BLOCK: usize = 256;

/// Maxima over fixed blocks of consecutive events, so a range-max query takes whole blocks at
/// once: with two block sizes a range costs O(SMALL + BLOCK / SMALL + its events / BLOCK).
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockMaxima {
    /// The most live bytes (drawn + summarized) around one of the block's events.
    pub(super) total_max: Vec<u64>,
    /// The most live bytes straight after one of the block's events.
    pub(super) after_max: Vec<u64>,
    /// The highest top of the drawn stack around one of the block's events.
    pub(super) drawn_max: Vec<u64>,
    /// The top of the drawn stack at the block's first event with the highest total.
    pub(super) peak_drawn: Vec<u64>,
}

impl BlockMaxima {
    /// Maxima over blocks of `size` events.
    pub(super) fn of_events(l: &Layout, size: usize) -> BlockMaxima {
        let n = l.event_step.len();
        let mut m = BlockMaxima::default();
        for start in (0..n).step_by(size) {
            let (mut total, mut after, mut drawn, mut peak_drawn) = (0, 0, 0, 0);
            for i in start..(start + size).min(n) {
                let high = l.drawn_before(i).max(l.event_drawn_bytes[i]);
                let t = high + l.event_summarized_bytes[i];
                if t > total || i == start {
                    (total, peak_drawn) = (t, high);
                }
                after = after.max(l.event_drawn_bytes[i] + l.event_summarized_bytes[i]);
                drawn = drawn.max(high);
            }
            m.push(total, after, drawn, peak_drawn);
        }
        m
    }

    /// Maxima over groups of `fanout` consecutive blocks of `finer`.
    pub(super) fn of_blocks(finer: &BlockMaxima, fanout: usize) -> BlockMaxima {
        let mut m = BlockMaxima::default();
        let n = finer.total_max.len();
        for start in (0..n).step_by(fanout) {
            let (mut total, mut after, mut drawn, mut peak_drawn) = (0, 0, 0, 0);
            for k in start..(start + fanout).min(n) {
                if finer.total_max[k] > total || k == start {
                    (total, peak_drawn) = (finer.total_max[k], finer.peak_drawn[k]);
                }
                after = after.max(finer.after_max[k]);
                drawn = drawn.max(finer.drawn_max[k]);
            }
            m.push(total, after, drawn, peak_drawn);
        }
        m
    }

    fn push(&mut self, total: u64, after: u64, drawn: u64, peak_drawn: u64) {
        self.total_max.push(total);
        self.after_max.push(after);
        self.drawn_max.push(drawn);
        self.peak_drawn.push(peak_drawn);
    }
}

/// A piece of a range of events, as [`Layout::for_each_piece`] hands them out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Piece {
    /// One event.
    Event(usize),
    /// A whole small block (index into the small maxima).
    Small(usize),
    /// A whole block.
    Block(usize),
}

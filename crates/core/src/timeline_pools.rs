//! Private pools on a timeline ("Allocated Memory (incl. Private Pools)").
//!
//! Each private pool (a `segment_pool_id` other than `(0, 0)` on the final segments, keyed by
//! pool and the stream of its allocations) gets an envelope: placed on the stack at the live total of the step where
//! the pool's first allocation appears, with a height that is the running maximum of the pool's
//! reserved bytes (from its segment events) and its live allocated bytes, so it never shrinks.
//! Elements and segment events take their pool from the entry's `pool_id` where the trace records
//! it (PyTorch 2.12+, on every entry), else by binary search over the device's final segments
//! sorted by address (segments already gone at snapshot time cannot be resolved that way).
//! A pool's allocations too small to get a band of their own (below Detail) are folded into one
//! stripe per pool ([`PoolEnvelope::small`]), which the view draws inside the summarized band.

use crate::snapshot::{Action, Snapshot};
use crate::timeline::{Layout, Origin};

/// One pool envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolEnvelope {
    /// Pool id as in the file.
    pub pool_id: (i128, i128),
    /// Stream id as in the file.
    pub stream_id: i128,
    /// Step of the pool's first allocation.
    pub first_step: u32,
    /// Offset of the envelope's bottom (live bytes when it appeared).
    pub offset_bytes: u64,
    /// Height over time: (step, bytes), steps ascending, bytes never decreasing.
    pub height: Vec<(u32, u64)>,
    /// Elements (layout indices) allocated in the pool.
    pub elements: Vec<u32>,
    /// The pool's summarized (not drawn, not hidden) live bytes over time: (step, bytes from
    /// that step on), steps ascending; empty when every allocation of the pool has a band.
    pub small: Vec<(u32, u64)>,
    /// The pool's summarized live bytes before the first event: those live before the trace
    /// (freed without their alloc, or ghosts), as [`Layout::initial_summarized_bytes`] counts them.
    pub small_initial_bytes: u64,
    /// How many of the pool's allocations are summarized.
    pub small_count: u32,
}

impl PoolEnvelope {
    /// `"a,b,s<stream>"`, the key PyTorch's viewer uses.
    pub fn key(&self) -> String {
        format!("{},{},s{}", self.pool_id.0, self.pool_id.1, self.stream_id)
    }

    /// Highest height.
    pub fn capacity_bytes(&self) -> u64 {
        self.height.last().map_or(0, |h| h.1)
    }

    /// Height at a step (0 before the envelope appears).
    pub fn height_at(&self, step: f64) -> u64 {
        let i = self.height.partition_point(|h| f64::from(h.0) <= step);
        if i == 0 {
            0
        } else {
            self.height.get(i - 1).map_or(0, |h| h.1)
        }
    }

    /// The pool's summarized live bytes at a step (its stripe's height there).
    pub fn small_at(&self, step: f64) -> u64 {
        let i = self.small.partition_point(|h| f64::from(h.0) <= step);
        i.checked_sub(1).and_then(|i| self.small.get(i)).map_or(self.small_initial_bytes, |h| h.1)
    }
}

/// The summarized live bytes of `elements` as a step function (see [`PoolEnvelope::small`]),
/// those live before the first event, and how many there are.
fn small_series(layout: &Layout, elements: &[u32]) -> (Vec<(u32, u64)>, u64, u32) {
    let mut changes: Vec<(u32, i128)> = Vec::new();
    let mut count = 0u32;
    let mut initial_bytes = 0u64;
    for el in elements.iter().filter_map(|&e| layout.elements.get(e as usize)) {
        if el.band.is_some() || layout.is_hidden(el) {
            continue;
        }
        count += 1;
        if el.origin != Origin::Traced {
            initial_bytes = initial_bytes.saturating_add(el.size_bytes);
        }
        changes.push((el.alloc_step, i128::from(el.size_bytes)));
        if let Some(f) = el.free_step {
            changes.push((f, -i128::from(el.size_bytes)));
        }
    }
    changes.sort_unstable_by_key(|c| c.0);
    let mut out: Vec<(u32, u64)> = Vec::new();
    let mut live: i128 = 0;
    for chunk in changes.chunk_by(|a, b| a.0 == b.0) {
        live += chunk.iter().map(|c| c.1).sum::<i128>();
        if let Some(&(step, _)) = chunk.first() {
            out.push((step, u64::try_from(live).unwrap_or(0)));
        }
    }
    (out, initial_bytes, count)
}

/// Envelopes of the private pools of one device, and each element's pool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pools {
    /// Envelopes, in order of appearance.
    pub envelopes: Vec<PoolEnvelope>,
    /// Element -> envelope index (`u32::MAX`: default pool).
    pub element_pool: Vec<u32>,
}

impl Pools {
    /// Envelope of an element.
    pub fn of_element(&self, e: crate::timeline::ElementIndex) -> Option<usize> {
        self.element_pool.get(e.as_usize()).filter(|&&p| p != u32::MAX).map(|&p| p as usize)
    }
}

/// Finds the private pools of device `device_pos` in an allocations layout.
#[allow(clippy::too_many_lines)] // finds the pools, then their envelopes; not split yet
pub fn pools(snap: &Snapshot, device_pos: usize, layout: &Layout) -> Pools {
    let mut out = Pools { envelopes: Vec::new(), element_pool: vec![u32::MAX; layout.elements.len()] };
    let Some(dev) = snap.devices.get(device_pos) else { return out };
    // Final segments of the device: (address, end, pool, stream), sorted by address.
    let mut segs: Vec<(u64, u64, u32, u32)> = snap
        .segments
        .iter()
        .filter(|s| s.device == dev.index)
        .map(|s| (s.address, s.address.saturating_add(s.total_size), s.pool, s.stream))
        .collect();
    segs.sort_unstable();
    let resolve = |addr: u64| -> Option<(u32, u32)> {
        let i = segs.partition_point(|s| s.0 <= addr);
        let s = segs.get(i.checked_sub(1)?)?;
        (addr < s.1 && s.2 != 0).then_some((s.2, s.3))
    };
    // `pool_id` on the entries (PyTorch 2.12+ writes it on every one) names the pool outright;
    // without it, or for lifetimes live before the trace, the final segment holding the address
    // does.
    let t = &dev.trace;
    // Envelopes are per (pool, stream of the allocation), as PyTorch's viewer keys them.
    let key_of = |row: Option<u32>, addr: u64, stream: u32| -> Option<(u32, u32)> {
        match row.filter(|_| t.pool.is_present()) {
            Some(r) => t.pool.get(r as usize).filter(|&p| p != 0).map(|p| (p, stream)),
            None => resolve(addr).map(|(p, _)| (p, stream)),
        }
    };
    // Keys: (pool, stream) -> envelope index, in order of first allocation.
    let mut keys: Vec<(u32, u32)> = Vec::new();
    let mut firsts: Vec<u32> = Vec::new();
    for (i, e) in layout.elements.iter().enumerate() {
        let Some(k) = key_of(e.alloc_row, e.addr, e.stream) else { continue };
        let p = match keys.iter().position(|&x| x == k) {
            Some(p) => p,
            None => {
                keys.push(k);
                firsts.push(e.alloc_step);
                keys.len() - 1
            }
        };
        if let Some(f) = firsts.get_mut(p) {
            *f = (*f).min(e.alloc_step);
        }
        if let Some(x) = out.element_pool.get_mut(i) {
            *x = p as u32;
        }
    }
    // Reserved bytes per pool: initial = final segments − net delta of the traced segment events.
    let mut deltas: Vec<Vec<(u32, i128)>> = vec![Vec::new(); keys.len()];
    for row in 0..t.len() {
        let sign: i128 = match t.action.get(row) {
            Some(Action::SegmentAlloc | Action::SegmentMap) => 1,
            Some(Action::SegmentFree | Action::SegmentUnmap) => -1,
            _ => continue,
        };
        let addr = t.addr.get(row).copied().unwrap_or(0);
        let stream = t.stream.get(row).copied().unwrap_or(0);
        let Some(k) = key_of(Some(row as u32), addr, stream) else { continue };
        let Some(p) = keys.iter().position(|&x| x == k) else { continue };
        let size = i128::from(t.size_bytes.get(row).copied().unwrap_or(0));
        if let Some(d) = deltas.get_mut(p) {
            d.push((layout.step_for_row(row as u32), sign * size));
        }
    }
    for (p, &(pool, stream)) in keys.iter().enumerate() {
        let final_bytes: i128 =
            segs.iter().filter(|s| (s.2, s.3) == (pool, stream)).map(|s| i128::from(s.1 - s.0)).sum();
        let d = deltas.get(p).map_or(&[][..], Vec::as_slice);
        let net: i128 = d.iter().map(|x| x.1).sum();
        let mut reserved = final_bytes - net;
        // Live allocated bytes of the pool as +/- changes over steps.
        let mut changes: Vec<(u32, i128)> = d.to_vec();
        let mut elements = Vec::new();
        for i in 0..layout.elements.len() {
            if out.element_pool.get(i) == Some(&(p as u32)) {
                elements.push(i as u32);
            }
        }
        let mut active: Vec<(u32, i128)> = Vec::new();
        for &e in &elements {
            if let Some(el) = layout.elements.get(e as usize) {
                active.push((el.alloc_step, i128::from(el.size_bytes)));
                if let Some(f) = el.free_step {
                    active.push((f, -i128::from(el.size_bytes)));
                }
            }
        }
        active.sort_by_key(|a| (a.0, a.1 < 0));
        changes.sort_by_key(|c| c.0);
        let first = firsts.get(p).copied().unwrap_or(0);
        let mut height: Vec<(u32, u64)> = Vec::new();
        let mut live: i128 = 0;
        let mut hi: i128 = 0;
        let (mut ci, mut ai) = (0, 0);
        // Merge segment changes and allocation changes in step order.
        loop {
            let cs = changes.get(ci).map(|c| c.0);
            let as_ = active.get(ai).map(|a| a.0);
            let step = match (cs, as_) {
                (None, None) => break,
                (Some(c), None) => c,
                (None, Some(a)) => a,
                (Some(c), Some(a)) => c.min(a),
            };
            if step > first && height.is_empty() {
                hi = reserved.max(live).max(0);
                height.push((first, u64::try_from(hi).unwrap_or(0)));
            }
            while let Some(c) = changes.get(ci).filter(|c| c.0 == step) {
                reserved += c.1;
                ci += 1;
            }
            // Allocations of a step come before its frees: the most live within the step counts
            // (a block freed without its alloc at the first entry was live before it).
            let mut most = live;
            while let Some(a) = active.get(ai).filter(|a| a.0 == step) {
                live += a.1;
                most = most.max(live);
                ai += 1;
            }
            let h = reserved.max(most);
            if step >= first && (h > hi || height.is_empty()) {
                hi = hi.max(h);
                let hb = u64::try_from(hi).unwrap_or(0);
                match height.last_mut() {
                    Some(last) if last.0 == step => last.1 = hb,
                    _ => height.push((step.max(first), hb)),
                }
            }
        }
        if height.is_empty() {
            height.push((first, u64::try_from(reserved.max(live).max(0)).unwrap_or(0)));
        }
        let offset_bytes = layout.live_bytes_at(f64::from(first) - 0.5).min(layout.live_bytes_at(f64::from(first)));
        let (pool_id, stream_id) = (
            snap.pools.get(pool as usize).copied().unwrap_or((0, 0)),
            snap.streams.get(stream as usize).copied().unwrap_or(0),
        );
        let (small, small_initial_bytes, small_count) = small_series(layout, &elements);
        out.envelopes.push(PoolEnvelope {
            pool_id,
            stream_id,
            first_step: first,
            offset_bytes,
            height,
            elements,
            small,
            small_initial_bytes,
            small_count,
        });
    }
    out
}

#[cfg(test)]
#[path = "timeline_pools_tests.rs"]
mod pytorch_cases;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Layout, Options};

    fn load(name: &str) -> Snapshot {
        let path = crate::test_fixtures::fixture("real", name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        crate::load(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn finds_private_pools() {
        for name in ["multistream.pickle", "metadata_mempool.pickle"] {
            let snap = load(name);
            let found = (0..snap.devices.len()).any(|d| {
                let l = Layout::build(&snap, d, Options::default());
                let p = pools(&snap, d, &l);
                p.envelopes.iter().any(|e| {
                    e.capacity_bytes() > 0
                        && !e.elements.is_empty()
                        && e.height.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
                })
            });
            assert!(found, "{name}: no private pool envelope");
        }
    }

    /// Each pool's stripe of small allocations is, at every step, the bytes of its summarized
    /// allocations live then (counted here from the elements alone), and the stripes fit in the
    /// summarized band.
    #[test]
    fn small_allocations_fold_into_one_stripe_per_pool() {
        for name in ["multistream.pickle", "metadata_mempool.pickle"] {
            let snap = load(name);
            let mut checked = 0;
            for d in 0..snap.devices.len() {
                let l = Layout::build(&snap, d, Options { max_entries: 4, ..Options::default() });
                let p = pools(&snap, d, &l);
                for s in 0..=l.steps {
                    let step = f64::from(s);
                    let mut in_pools = 0;
                    for (i, e) in p.envelopes.iter().enumerate() {
                        let expect: u64 = l
                            .elements
                            .iter()
                            .enumerate()
                            .filter(|(k, x)| {
                                p.of_element(crate::timeline::ElementIndex::new(*k as u32)) == Some(i)
                                    && x.band.is_none()
                                    && x.alloc_step <= s
                                    && x.free_step.is_none_or(|f| f > s)
                            })
                            .map(|(_, x)| x.size_bytes)
                            .sum();
                        assert_eq!(e.small_at(step), expect, "{name} pool {i} step {s}");
                        in_pools += expect;
                        checked += usize::from(expect > 0);
                    }
                    let ev = l.event_step.partition_point(|&x| x <= s);
                    let band = ev.checked_sub(1).map_or(l.initial_summarized_bytes, |i| l.event_summarized_bytes[i]);
                    assert!(in_pools <= band, "{name} step {s}: stripes {in_pools} > band {band}");
                }
                for e in &p.envelopes {
                    let small = e.elements.iter().filter(|&&x| l.elements[x as usize].band.is_none()).count();
                    assert_eq!(e.small_count as usize, small);
                }
            }
            assert!(checked > 0, "{name}: no pool has small allocations at Detail 4");
        }
    }
}

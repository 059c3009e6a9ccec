//! The pin, kept by the allocation's key ([`ElementKey`]: address and the trace row of its alloc)
//! rather than by an element index, so it survives whatever lays the file out again (Detail, hide
//! freed, a view with another mode) and never moves to a later allocation at a reused address.
//! While a layout without the pinned allocation is shown (the segment timeline, or hide freed
//! leaving it out), the key is remembered and the allocation pinned again once it is back. The
//! URL names the pin by the same key: `b<hex address>_e<alloc row>` (`_p<free row>` for an
//! allocation live before the trace, `_g` for one never freed).

use memviz_core::plot::PlotData;
use memviz_core::timeline::ElementKey;

use super::{Target, ViewState};

impl ViewState {
    /// Pins `t` (or unpins): the one way the pin changes, so the remembered key follows it.
    pub fn set_pin(&mut self, t: Option<Target>) {
        self.pinned = t;
        self.pin_key = None;
    }

    /// What is pinned.
    pub fn pinned(&self) -> Option<Target> {
        self.pinned
    }

    /// The pinned allocation's key: of the pinned element of the shown layout, else the one
    /// remembered while a layout without it is shown.
    pub fn pin_key(&self) -> Option<ElementKey> {
        match self.pinned {
            Some(Target::Element(e)) => self.file()?.plot.layout.element_key(e),
            _ => self.pin_key,
        }
    }

    /// Replaces the shown file's plot (a relayout); the pin follows its key when the device is
    /// the same, pointer targets are forgotten and anything keyed by the layout recomputed.
    pub fn set_plot(&mut self, plot: PlotData) {
        let key = self.pin_key();
        let Some(f) = self.file_mut() else { return };
        let same_device = f.plot.device_pos == plot.device_pos;
        f.plot = plot;
        f.forget_focus();
        self.generation += 1;
        self.hover = None;
        if !same_device {
            self.set_pin(None);
            return;
        }
        match (key, self.pinned) {
            (Some(k), _) => self.repin(k),
            // OOM marks and annotations do not depend on the layout's options.
            (None, Some(Target::Oom(_) | Target::Annotation(_))) => {}
            (None, _) => self.pinned = None,
        }
    }

    /// Replaces the shown file's layout by another of the same device and mode (Detail chosen
    /// for another window): the pin follows its key, pointer targets are forgotten.
    pub fn set_layout(&mut self, layout: memviz_core::timeline::Layout) {
        let key = self.pin_key();
        let Some(f) = self.file_mut() else { return };
        f.plot.layout = layout;
        f.forget_focus();
        self.generation += 1;
        self.hover = None;
        if let Some(k) = key {
            self.repin(k);
        }
    }

    /// Pins the allocation with key `k` in the shown layout, or remembers `k` until it is there.
    pub fn repin(&mut self, k: ElementKey) {
        let e = self.file().and_then(|f| f.plot.layout.element_by_key(k));
        self.pinned = e.map(Target::Element);
        self.pin_key = if e.is_some() { None } else { Some(k) };
    }
}

/// The URL's text for a pin key.
pub fn pin_text(k: ElementKey) -> String {
    match (k.alloc_row, k.pre_trace_free_row) {
        (Some(r), _) => format!("b{:x}_e{r}", k.addr),
        (None, Some(r)) => format!("b{:x}_p{r}", k.addr),
        (None, None) => format!("b{:x}_g", k.addr),
    }
}

/// The key a pin text names; `None` for anything else (an older `b<addr>_<n>` label included).
pub fn parse_pin(s: &str) -> Option<ElementKey> {
    let (addr, rest) = s.strip_prefix('b')?.split_once('_')?;
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let row = |t: &str| t.parse::<u32>().ok();
    let (alloc_row, free_row) = match rest.split_at_checked(1)? {
        ("e", r) => (Some(row(r)?), None),
        ("p", r) => (None, Some(row(r)?)),
        ("g", "") => (None, None),
        _ => return None,
    };
    Some(ElementKey::new(addr, alloc_row, free_row))
}

#[cfg(test)]
#[path = "pin_tests.rs"]
mod tests;

//! A training run: its ranks summarized in loading workers, as many at once as the machine has
//! cores (at least 2), each answering with the rank's digest only (never its model); focusing a
//! rank brings its full model in through the one-file load, re-read from its `File`; and after
//! every load at most [`MAX_RESIDENT_MODELS`] full models stay (the oldest go first, never the
//! one shown).

use super::tasks::with_app;
use super::App;
use crate::input::Source;
use crate::worker_client::Summarized;
use crate::{input, worker_client};
use memviz_view::derived::Derived;
use memviz_view::ranks::{RankDigest, RankStatus, Run, MAX_RESIDENT_MODELS};
use std::cell::RefCell;
use std::rc::Weak;
use wasm_bindgen::prelude::*;

/// Ranks summarized at once: the machine's cores, at least 2.
fn worker_count() -> usize {
    let cores = web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &JsValue::from_str("navigator")).ok())
        .and_then(|n| js_sys::Reflect::get(&n, &JsValue::from_str("hardwareConcurrency")).ok())
        .and_then(|c| c.as_f64())
        .unwrap_or(2.0);
    (cores as usize).clamp(2, 64)
}

impl App {
    /// Opens files picked or dropped together: a run when their names give ranks, else each
    /// file as before.
    pub(crate) fn open_picked(&mut self, sources: Vec<Source>) {
        let files: Vec<(String, web_sys::File)> = sources
            .iter()
            .filter_map(|s| match s {
                Source::File(f) => Some((f.name(), f.clone())),
                _ => None,
            })
            .collect();
        let names: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
        if files.len() == sources.len() && memviz_view::ranks::names_give_ranks(&names) {
            self.open_run(files);
            return;
        }
        // Two snapshots dropped together, with nothing else loading and no link's pair waiting:
        // side by side once both are open, the first by name (shown first) as A.
        let pair = names.len() == 2
            && files.len() == sources.len()
            && !self.loader_running
            && !self.state.compare_waiting()
            && names.iter().all(|n| memviz_core::ranks::is_snapshot_name(n));
        if pair {
            let mut names = names;
            names.sort_by_cached_key(|n| memviz_view::names::natural_key(n));
            if names[0] != names[1] {
                let [a, b] = [&names[0], &names[1]].map(|n| memviz_view::fragment::base_name(n).to_string());
                self.state.compare_when_open(a, b);
                self.pair_dropped = true;
            }
        }
        self.open(sources);
    }

    /// Opens a run: the snapshot files among `files` (path, file), ranks and iterations from
    /// their paths, each summarized in a worker.
    pub(crate) fn open_run(&mut self, files: Vec<(String, web_sys::File)>) {
        self.state.opening();
        let files: Vec<(String, web_sys::File)> =
            files.into_iter().filter(|(p, _)| memviz_core::ranks::is_snapshot_name(p)).collect();
        if files.is_empty() {
            self.state
                .set_error("No snapshot files (.pickle, .pkl, .json, maybe compressed) were found there.".to_string());
            return;
        }
        self.ui.mark("memviz:open");
        let paths: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
        let mut run = Run::new(&paths);
        self.runs_opened += 1;
        run.id = self.runs_opened;
        let id = run.id;
        let n = run.ranks.len();
        self.run_files = files.into_iter().map(|f| f.1).collect();
        let restore = self.state.open_run(run);
        for _ in 0..worker_count().min(n) {
            wasm_bindgen_futures::spawn_local(summarize_ranks(self.self_ref.clone(), id));
        }
        // A reload of a run's page: the rank it showed, once the run is opened again.
        if let Some((rank, overview)) = restore {
            let i = rank.and_then(|rank| self.state.run().and_then(|r| r.index_of(rank, None)));
            match (i, overview) {
                (Some(i), false) => self.focus_rank(i),
                (Some(i), true) => self.state.point_rank(i),
                (None, _) => {}
            }
        }
    }

    /// Opens the timeline of the run's entry `i`: its model if it is still in, else re-read from
    /// its file.
    pub(crate) fn focus_rank(&mut self, i: usize) {
        if !self.state.focus_rank(i) {
            return;
        }
        let file = self.state.run().and_then(|r| r.ranks.get(i)).and_then(|e| self.run_files.get(e.source));
        let Some(file) = file.cloned() else { return };
        let source = Source::File(file);
        match input::source_key(&source).and_then(|k| self.state.file_from(&k)) {
            Some(k) => self.select_file(k),
            None => {
                self.pending_compare = None;
                // Ranks asked for before this one are not wanted any more.
                self.queue.clear();
                self.open(vec![source]);
            }
        }
        // The timeline comes back in place of the overview: measure it again.
        self.settle_layout();
    }

    /// The file of the run's entry `i`, as a source, and the open file read from it (if any).
    fn rank_source(&self, i: usize) -> Option<(Source, Option<usize>)> {
        let e = self.state.run()?.ranks.get(i)?;
        let source = Source::File(self.run_files.get(e.source)?.clone());
        let open = input::source_key(&source).and_then(|k| self.state.file_from(&k));
        Some((source, open))
    }

    /// Opens the run's entry `i` and its iteration's median rank (the two full models allowed)
    /// and compares them with core's compare analysis (Insights, Compare) once both are in.
    pub(crate) fn compare_rank(&mut self, i: usize) {
        let Some(m) = self.state.run().and_then(|r| r.median_of(i)).filter(|&m| m != i) else { return };
        if !self.state.focus_rank(i) {
            return;
        }
        self.pending_compare = Some((i, m));
        let mut load = Vec::new();
        for k in [m, i] {
            if let Some((source, None)) = self.rank_source(k) {
                load.push(source);
            }
        }
        self.queue.clear();
        if load.is_empty() {
            self.compare_when_loaded();
        } else {
            self.open(load);
        }
        self.settle_layout();
    }

    /// Once both files of a pending comparison (outlier, median) are in: the median shown as A,
    /// the Compare tab open on the outlier as B, so that B − A is the overview's outlier − median.
    pub(crate) fn compare_when_loaded(&mut self) {
        let Some((i, m)) = self.pending_compare else { return };
        let (Some((_, Some(fi))), Some((_, Some(fm)))) = (self.rank_source(i), self.rank_source(m)) else { return };
        self.pending_compare = None;
        self.select_file(fm);
        self.state.open_compare(fi);
        // The two side by side, with the full comparison in the panel beside them.
        self.state.show_compare();
    }

    /// Lets the oldest full models go so that at most [`MAX_RESIDENT_MODELS`] stay: a run's
    /// ranks are closed (the overview lists them), other files stay in the file menu, to be
    /// read again when chosen.
    pub(crate) fn release_models(&mut self) {
        let release = self.state.files_to_release();
        if release.is_empty() {
            return;
        }
        debug_assert!(self.state.files().len() - release.len() <= MAX_RESIDENT_MODELS);
        let run_keys: Vec<String> =
            self.run_files.iter().filter_map(|f| input::source_key(&Source::File(f.clone()))).collect();
        for i in release {
            let of_run =
                self.state.files().get(i).and_then(|f| f.source.as_ref()).is_some_and(|k| run_keys.contains(k));
            if of_run {
                self.state.close_file(i);
            } else {
                self.state.release_file(i);
            }
        }
        self.prune_handles();
        // What was derived or written was keyed by file index.
        self.derived = Derived::default();
        self.memo.forget_files(&self.ui.document);
    }
}

/// Takes the run's next rank that is not read yet and summarizes it, until none is left (one of
/// these runs per worker). Answers about a run that was replaced are dropped.
async fn summarize_ranks(weak: Weak<RefCell<App>>, id: u64) {
    loop {
        let next = with_app(&weak, |app| {
            let run = app.state.run_mut(id)?;
            let i = run.ranks.iter().position(|e| e.status == RankStatus::Waiting)?;
            run.set_reading(i, 0.0);
            let e = run.ranks.get(i)?;
            let path = e.path.clone();
            let file = app.run_files.get(e.source)?.clone();
            app.request_redraw();
            Some((i, file, path))
        });
        let Some(Some((i, file, path))) = next else { break };
        let total_bytes = file.size().max(1.0);
        let w = weak.clone();
        let on_progress = move |read_bytes: u64| {
            with_app(&w, |app| {
                if let Some(run) = app.state.run_mut(id) {
                    run.set_reading(i, read_bytes as f64 / total_bytes);
                    app.request_redraw();
                }
            });
        };
        let out = match worker_client::summarize(&file, &path, on_progress).await {
            Summarized::Unavailable => summarize_here(&file, &path).await,
            other => other,
        };
        with_app(&weak, |app| {
            if let Some(run) = app.state.run_mut(id) {
                match out {
                    Summarized::Done(d) => run.set_done(i, d),
                    Summarized::Failed(why) => run.set_failed(i, why),
                    Summarized::Unavailable => run.set_failed(i, "no way to read it here".to_string()),
                }
            }
            app.settle();
        });
    }
}

/// Summarizes a rank on the page's thread (pages where no worker runs).
async fn summarize_here(file: &web_sys::File, name: &str) -> Summarized {
    let bytes = match gloo_file::futures::read_as_bytes(&gloo_file::Blob::from(web_sys::Blob::from(file.clone()))).await
    {
        Ok(b) => b,
        Err(e) => return Summarized::Failed(format!("Could not read {name}: {e}")),
    };
    match memviz_core::load(&bytes) {
        Ok(snap) => Summarized::Done(RankDigest::of(&memviz_core::ranks::summarize_for_overview(&snap))),
        Err(e) => Summarized::Failed(crate::feed::open_error(name, &e)),
    }
}

impl App {
    /// Keeps the handle of a picked file being loaded, to read it again once its model is let go.
    pub(crate) fn keep_handle(&mut self, source: &Source) {
        if let (Source::File(f), Some(k)) = (source, input::source_key(source)) {
            if !self.file_handles.iter().any(|(h, _)| *h == k) {
                self.file_handles.push((k, f.clone()));
            }
        }
    }

    /// Lets go of the handles of files neither open, loading nor listed to be read again.
    pub(crate) fn prune_handles(&mut self) {
        let s = &self.state;
        let keep = |k: &String| {
            s.files().iter().filter_map(|f| f.source.as_ref()).any(|x| x == k)
                || s.released().iter().any(|r| &r.source == k)
                || self.loading_source.as_ref() == Some(k)
                || self.queue.iter().any(|q| input::source_key(q).as_ref() == Some(k))
        };
        let kept: Vec<(String, web_sys::File)> = self.file_handles.iter().filter(|(k, _)| keep(k)).cloned().collect();
        self.file_handles = kept;
    }

    /// Reads again the released file `j` (listed in the file menu) and shows it.
    pub(crate) fn reopen_file(&mut self, j: usize) {
        let Some(r) = self.state.released().get(j) else { return };
        match self.file_handles.iter().find(|(k, _)| *k == r.source) {
            Some((_, f)) => {
                let f = f.clone();
                self.open(vec![Source::File(f)]);
            }
            None => {
                // No handle to read it from (never expected): it leaves the menu.
                self.state.forget_released(j);
                self.request_redraw();
            }
        }
    }
}

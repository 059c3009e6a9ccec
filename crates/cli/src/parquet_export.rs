//! `memviz export --format parquet PATH... -o DIR`: every rank's whole trace as Parquet tables, for
//! query engines (DuckDB, Spark, pandas) once a run outgrows one machine. Four tables, each
//! partitioned by rank in Hive style (`DIR/events/rank=3/part-0.parquet`; with `iteration_N`
//! folders, `part-iteration-N.parquet`), snappy-compressed:
//!
//! - `events`: rank, device, entry, action, addr, size_bytes, stream, time_us (null when not
//!   recorded), stack_id, iteration (null without iteration folders): one row per trace entry;
//! - `frames`: rank, frame_id, name, filename, line;
//! - `stacks`: rank, stack_id, depth (0 = innermost), frame_id;
//! - `segments`: rank, device, address, total_size_bytes, allocated_size_bytes,
//!   requested_size_bytes, stream, segment_type, is_expandable: the final allocator state.
//!
//! Files are written in parallel, a rank a worker, each model dropped once its tables are written.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use memviz_core::ranks::RankFile;
use memviz_core::Snapshot;

use crate::error::CliError;

/// Rows per record batch: bounds the memory one batch takes (about 4 MB of events).
const BATCH_ROWS: usize = 1 << 16;

/// Counts of what was written for one rank.
#[derive(Default)]
struct Written {
    events: usize,
    frames: usize,
    stacks: usize,
    segments: usize,
}

/// One Parquet file being written.
struct Table {
    writer: ArrowWriter<std::fs::File>,
    schema: Arc<Schema>,
    path: PathBuf,
}

impl Table {
    fn create(dir: &Path, table: &str, file: &RankFile, fields: Vec<Field>) -> Result<Table, CliError> {
        let folder = dir.join(table).join(format!("rank={}", file.rank));
        std::fs::create_dir_all(&folder)
            .map_err(|source| CliError::Create { path: folder.display().to_string(), source })?;
        let name =
            file.iteration.map_or_else(|| "part-0.parquet".to_string(), |i| format!("part-iteration-{i}.parquet"));
        let path = folder.join(name);
        let out = std::fs::File::create(&path)
            .map_err(|source| CliError::Write { target: path.display().to_string(), source })?;
        let schema = Arc::new(Schema::new(fields));
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
            .map_err(|source| CliError::Parquet { path: path.display().to_string(), source })?;
        Ok(Table { writer, schema, path })
    }

    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), CliError> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|source| CliError::Arrow { path: self.path.display().to_string(), source })?;
        self.writer.write(&batch).map_err(|source| CliError::Parquet { path: self.path.display().to_string(), source })
    }

    fn close(self) -> Result<(), CliError> {
        let path = self.path;
        self.writer.close().map(|_| ()).map_err(|source| CliError::Parquet { path: path.display().to_string(), source })
    }
}

fn field(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

fn rank_column(rank: u32, n: usize) -> ArrayRef {
    Arc::new(UInt32Array::from(vec![rank; n]))
}

fn write_events(dir: &Path, file: &RankFile, snap: &Snapshot) -> Result<usize, CliError> {
    use DataType::{Int64, UInt32, UInt64, Utf8};
    let fields = vec![
        field("rank", UInt32, false),
        field("device", Int64, false),
        field("entry", UInt32, false),
        field("action", Utf8, false),
        field("addr", UInt64, false),
        field("size_bytes", UInt64, false),
        field("stream", Int64, false),
        field("time_us", Int64, true),
        field("stack_id", UInt32, false),
        field("iteration", UInt64, true),
    ];
    let mut table = Table::create(dir, "events", file, fields)?;
    let mut rows = 0;
    for dev in &snap.devices {
        let t = &dev.trace;
        for start in (0..t.len()).step_by(BATCH_ROWS) {
            let range = start..(start + BATCH_ROWS).min(t.len());
            let n = range.len();
            let stream = |r: usize| i64::try_from(snap.stream_raw(t.stream.get(r).copied().unwrap_or(0))).unwrap_or(-1);
            table.write(vec![
                rank_column(file.rank, n),
                Arc::new(Int64Array::from(vec![dev.index; n])),
                Arc::new(UInt32Array::from_iter_values(range.clone().map(|r| r as u32))),
                Arc::new(StringArray::from_iter_values(
                    range.clone().map(|r| t.action.get(r).map_or("unknown", |a| a.name())),
                )),
                Arc::new(UInt64Array::from(t.addr.get(range.clone()).unwrap_or_default().to_vec())),
                Arc::new(UInt64Array::from(t.size_bytes.get(range.clone()).unwrap_or_default().to_vec())),
                Arc::new(Int64Array::from_iter_values(range.clone().map(stream))),
                Arc::new(Int64Array::from_iter(range.clone().map(|r| t.time_us_at(r)))),
                Arc::new(UInt32Array::from(t.stack.get(range.clone()).unwrap_or_default().to_vec())),
                Arc::new(UInt64Array::from(vec![file.iteration; n])),
            ])?;
            rows += n;
        }
    }
    table.close()?;
    Ok(rows)
}

fn write_frames(dir: &Path, file: &RankFile, snap: &Snapshot) -> Result<usize, CliError> {
    use DataType::{Int64, UInt32, Utf8};
    let fields = vec![
        field("rank", UInt32, false),
        field("frame_id", UInt32, false),
        field("name", Utf8, false),
        field("filename", Utf8, false),
        field("line", Int64, false),
    ];
    let mut table = Table::create(dir, "frames", file, fields)?;
    for (chunk_at, chunk) in snap.frames.chunks(BATCH_ROWS).enumerate() {
        let base = chunk_at * BATCH_ROWS;
        table.write(vec![
            rank_column(file.rank, chunk.len()),
            Arc::new(UInt32Array::from_iter_values((0..chunk.len()).map(|i| (base + i) as u32))),
            Arc::new(StringArray::from_iter_values(chunk.iter().map(|f| snap.strings.get(f.name)))),
            Arc::new(StringArray::from_iter_values(chunk.iter().map(|f| snap.strings.get(f.filename)))),
            Arc::new(Int64Array::from_iter_values(chunk.iter().map(|f| f.line))),
        ])?;
    }
    table.close()?;
    Ok(snap.frames.len())
}

fn write_stacks(dir: &Path, file: &RankFile, snap: &Snapshot) -> Result<usize, CliError> {
    use DataType::UInt32;
    let fields = vec![
        field("rank", UInt32, false),
        field("stack_id", UInt32, false),
        field("depth", UInt32, false),
        field("frame_id", UInt32, false),
    ];
    let mut table = Table::create(dir, "stacks", file, fields)?;
    let (mut ids, mut depths, mut frames) = (Vec::new(), Vec::new(), Vec::new());
    let mut rows = 0;
    let mut flush = |ids: &mut Vec<u32>, depths: &mut Vec<u32>, frames: &mut Vec<u32>| -> Result<(), CliError> {
        rows += ids.len();
        table.write(vec![
            rank_column(file.rank, ids.len()),
            Arc::new(UInt32Array::from(std::mem::take(ids))),
            Arc::new(UInt32Array::from(std::mem::take(depths))),
            Arc::new(UInt32Array::from(std::mem::take(frames))),
        ])
    };
    for stack in 0..snap.stacks.len() as u32 {
        for (depth, &frame) in snap.stacks.get(stack).iter().enumerate() {
            ids.push(stack);
            depths.push(depth as u32);
            frames.push(frame);
        }
        if ids.len() >= BATCH_ROWS {
            flush(&mut ids, &mut depths, &mut frames)?;
        }
    }
    flush(&mut ids, &mut depths, &mut frames)?;
    table.close()?;
    Ok(rows)
}

fn write_segments(dir: &Path, file: &RankFile, snap: &Snapshot) -> Result<usize, CliError> {
    use DataType::{Boolean, Int64, UInt32, UInt64, Utf8};
    let fields = vec![
        field("rank", UInt32, false),
        field("device", Int64, false),
        field("address", UInt64, false),
        field("total_size_bytes", UInt64, false),
        field("allocated_size_bytes", UInt64, false),
        field("requested_size_bytes", UInt64, false),
        field("stream", Int64, false),
        field("segment_type", Utf8, false),
        field("is_expandable", Boolean, false),
    ];
    let mut table = Table::create(dir, "segments", file, fields)?;
    let s = &snap.segments;
    table.write(vec![
        rank_column(file.rank, s.len()),
        Arc::new(Int64Array::from_iter_values(s.iter().map(|x| x.device))),
        Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.address))),
        Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.total_size))),
        Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.allocated_size))),
        Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.requested_size))),
        Arc::new(Int64Array::from_iter_values(
            s.iter().map(|x| i64::try_from(snap.stream_raw(x.stream)).unwrap_or(-1)),
        )),
        Arc::new(StringArray::from_iter_values(s.iter().map(|x| snap.strings.get(x.segment_type)))),
        Arc::new(BooleanArray::from(s.iter().map(|x| x.is_expandable).collect::<Vec<bool>>())),
    ])?;
    table.close()?;
    Ok(s.len())
}

/// Writes one rank's four tables.
fn write_rank(dir: &Path, file: &RankFile) -> Result<Written, CliError> {
    let snap = crate::read::load_owned(&file.path)?;
    Ok(Written {
        events: write_events(dir, file, &snap)?,
        frames: write_frames(dir, file, &snap)?,
        stacks: write_stacks(dir, file, &snap)?,
        segments: write_segments(dir, file, &snap)?,
    })
}

/// `memviz export --format parquet PATH... -o DIR`.
pub fn export(paths: &[String], dir: &str) -> Result<String, CliError> {
    let found = crate::ranks::find_rank_files(paths)?;
    let out = Path::new(dir);
    std::fs::create_dir_all(out).map_err(|source| CliError::Create { path: dir.to_string(), source })?;
    let written: Vec<Written> =
        crate::ranks::per_file(&found.files, |f| write_rank(out, f)).into_iter().collect::<Result<_, _>>()?;
    let sum = |f: fn(&Written) -> usize| written.iter().map(f).sum::<usize>();
    Ok(format!(
        "wrote {dir}: {} ranks ({}), {} events, {} frames, {} stack frames, {} segments\n",
        found.files.len(),
        found.rule.describe(),
        sum(|w| w.events),
        sum(|w| w.frames),
        sum(|w| w.stacks),
        sum(|w| w.segments)
    ))
}

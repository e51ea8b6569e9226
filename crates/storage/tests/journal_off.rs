//! Snapshots taken while no journal is open (`appendonly no`) in a directory whose journal
//! was written by a run that had it on, and by one after: recovery must replay exactly the
//! blocks appended after the snapshot, and `check` must agree with start-up.

mod common;

use std::convert::Infallible;
use std::path::Path;

use common::TempDir;
use strata_engine::Value;
use strata_storage::*;

fn opts(dir: &Path, segment_bytes: u64) -> JournalOptions {
    JournalOptions {
        dir: dir.to_path_buf(),
        fsync: Fsync::EverySec,
        segment_bytes,
    }
}

fn payload(i: u64) -> Vec<u8> {
    format!(
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n{i}\r\n",
        i.to_string().len()
    )
    .into_bytes()
}

/// A run with the journal on: opens it, appends blocks `from..from + n`, closes it.
fn journal_run(dir: &Path, segment_bytes: u64, from: u64, n: u64) {
    let j = Journal::open(opts(dir, segment_bytes)).unwrap();
    for i in from..from + n {
        assert_eq!(j.append(0, 0, &payload(i)), i);
    }
    j.close().unwrap();
}

/// A snapshot taken with no journal open, as the server writes it.
fn snapshot_without_journal(dir: &Path, epoch: u64) -> SnapshotMeta {
    let mut w = SnapshotWriter::create(dir, epoch, Position::default()).unwrap();
    w.value(0, b"k", None, &Value::Str(b"v".to_vec())).unwrap();
    w.finish().unwrap();
    latest_snapshot(dir).unwrap().unwrap()
}

/// The payloads start-up would replay after loading a snapshot that names `from`.
fn replayed(dir: &Path, from: Position) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    read_blocks(dir, Some(from), |b| {
        out.push(b.payload);
        Ok::<(), Infallible>(())
    })
    .unwrap_or_else(|e| panic!("replay from {from}: {e}"));
    out
}

fn payloads(range: std::ops::Range<u64>) -> Vec<Vec<u8>> {
    range.map(payload).collect()
}

/// on, off (a snapshot), on again: the snapshot names the journal's end as the first run
/// left it, so recovery skips the blocks it holds and replays the third run's.
#[test]
fn snapshot_without_a_journal_replays_what_a_later_journal_appends() {
    let d = TempDir::new("off-between");
    // Small segments: the first run leaves several.
    journal_run(d.path(), 200, 1, 20);
    let segs = check(d.path()).unwrap().segments;
    assert!(segs > 2, "{segs} segments");
    let end = journal_end(d.path()).unwrap();
    assert_eq!(end.segment, segs);
    let meta = snapshot_without_journal(d.path(), 3);
    assert_eq!(meta.replay_from, end);
    assert!(replayed(d.path(), meta.replay_from).is_empty());
    let rep = check(d.path()).unwrap();
    assert!(rep.ok(), "{rep}");
    journal_run(d.path(), 200, 21, 15);
    assert_eq!(replayed(d.path(), meta.replay_from), payloads(21..36));
    let rep = check(d.path()).unwrap();
    assert!(rep.ok(), "{rep}");
}

/// off (a snapshot, no journal yet), then on: everything the journal gets is newer.
#[test]
fn snapshot_before_any_journal_replays_the_whole_later_journal() {
    let d = TempDir::new("off-first");
    let meta = snapshot_without_journal(d.path(), 1);
    assert_eq!(meta.replay_from, journal_end(d.path()).unwrap());
    assert!(!journal_dir(d.path()).exists());
    journal_run(d.path(), 1 << 20, 1, 10);
    assert_eq!(replayed(d.path(), meta.replay_from), payloads(1..11));
    let rep = check(d.path()).unwrap();
    assert!(rep.ok(), "{rep}");
    // A second snapshot without the journal comes after all of it.
    let meta = snapshot_without_journal(d.path(), 2);
    assert!(replayed(d.path(), meta.replay_from).is_empty());
    journal_run(d.path(), 1 << 20, 11, 3);
    assert_eq!(replayed(d.path(), meta.replay_from), payloads(11..14));
}

/// A crash tore the journal's last block, then a run without the journal took a snapshot:
/// it names the end of the valid blocks, where the next journal cuts the tail and goes on.
#[test]
fn snapshot_without_a_journal_after_a_torn_tail() {
    let d = TempDir::new("off-torn");
    journal_run(d.path(), 1 << 20, 1, 10);
    let seg = segment_path(d.path(), 1);
    let mut bytes = std::fs::read(&seg).unwrap();
    let valid = bytes.len() as u64;
    let half = payload(99);
    bytes.extend_from_slice(&(half.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&half[..half.len() / 2]);
    std::fs::write(&seg, &bytes).unwrap();
    let meta = snapshot_without_journal(d.path(), 1);
    assert_eq!(
        meta.replay_from,
        Position {
            segment: 1,
            offset: valid
        }
    );
    let rep = check(d.path()).unwrap();
    assert!(
        rep.ok() && rep.problem.as_ref().is_some_and(|p| p.torn),
        "{rep}"
    );
    journal_run(d.path(), 1 << 20, 11, 4);
    assert_eq!(replayed(d.path(), meta.replay_from), payloads(11..15));
}

/// `check` reports a snapshot whose replay position the journal does not have (start-up
/// would refuse it) instead of calling the directory healthy.
#[test]
fn check_reports_a_replay_position_the_journal_lacks() {
    let d = TempDir::new("off-check");
    journal_run(d.path(), 200, 1, 20);
    let j = Journal::open(opts(d.path(), 200)).unwrap();
    let (_, (_, marker)) = j.append_with_pos(0, 1, &payload(21), |l, p| (l, p));
    j.sync().unwrap();
    j.drop_before(marker).unwrap();
    j.close().unwrap();
    // Segment 1 is gone (dropped as a rewrite does), but this snapshot names it.
    assert!(!segment_path(d.path(), 1).exists());
    let mut w = SnapshotWriter::create(
        d.path(),
        1,
        Position {
            segment: 1,
            offset: SEG_HEADER_LEN,
        },
    )
    .unwrap();
    w.value(0, b"k", None, &Value::Str(b"v".to_vec())).unwrap();
    w.finish().unwrap();
    let rep = check(d.path()).unwrap();
    assert!(!rep.ok(), "{rep}");
    let s = rep.snapshot.clone().unwrap();
    assert!(s.error.is_none());
    let why = s.replay_error.unwrap();
    assert!(why.contains("missing"), "{why}");
    assert!(
        rep.to_string()
            .contains("cannot replay the journal from 1:"),
        "{rep}"
    );
    // The same directory with a snapshot naming a real block is healthy.
    let mut w = SnapshotWriter::create(d.path(), 2, marker).unwrap();
    w.value(0, b"k", None, &Value::Str(b"v".to_vec())).unwrap();
    w.finish().unwrap();
    let rep = check(d.path()).unwrap();
    assert!(rep.ok(), "{rep}");
    assert_eq!(rep.snapshot.unwrap().replay_from, Some(marker));
}

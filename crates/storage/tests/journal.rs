mod common;

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use common::{eventually, TempDir};
use strata_storage::*;

fn opts(dir: &Path, fsync: Fsync, seg: u64) -> JournalOptions {
    JournalOptions {
        dir: dir.to_path_buf(),
        fsync,
        segment_bytes: seg,
    }
}

fn payload(i: u64) -> Vec<u8> {
    format!(
        "*3\r\n$3\r\nSET\r\n$4\r\nk{:03}\r\n$5\r\nv{:04}\r\n",
        i % 1000,
        i % 10000
    )
    .into_bytes()
}

fn read_all(dir: &Path, from: Option<Position>) -> (Vec<Block>, ReadSummary) {
    let mut v = Vec::new();
    let sum = read_blocks(dir, from, |b| {
        v.push(b);
        Ok::<(), Infallible>(())
    })
    .expect("read_blocks");
    (v, sum)
}

fn append_n(j: &Journal, from: u64, n: u64) {
    for i in from..from + n {
        let lsn = j.append((i % 16) as u32, i * 7, &payload(i));
        assert_eq!(lsn, i);
    }
}

fn check_blocks(blocks: &[Block], first: u64) {
    for (k, b) in blocks.iter().enumerate() {
        let i = first + k as u64;
        assert_eq!(b.lsn, i);
        assert_eq!(b.db, (i % 16) as u32);
        assert_eq!(b.epoch, i * 7);
        assert_eq!(b.payload, payload(i));
    }
}

/// Reads the whole journal, which must hold exactly blocks 1..=n as `append_n` writes
/// them, with no torn tail.
fn check_journal(dir: &Path, n: usize) {
    let (b, sum) = read_all(dir, None);
    assert_eq!(b.len(), n);
    check_blocks(&b, 1);
    assert!(sum.torn.is_none());
}

fn only_segment(dir: &Path) -> std::path::PathBuf {
    segment_path(dir, 1)
}

#[test]
fn append_reopen_replay_keeps_lsns() {
    let d = TempDir::new("roundtrip");
    let j = Journal::open(opts(d.path(), Fsync::EverySec, 1 << 20)).unwrap();
    append_n(&j, 1, 100);
    j.close().unwrap();
    assert_eq!(j.durable_lsn(), 100);
    drop(j);
    let (b, sum) = read_all(d.path(), None);
    assert_eq!(b.len(), 100);
    check_blocks(&b, 1);
    assert_eq!(sum.last_lsn, 100);
    assert!(sum.torn.is_none());

    let j = Journal::open(opts(d.path(), Fsync::No, 1 << 20)).unwrap();
    assert_eq!(j.next_lsn(), 101);
    append_n(&j, 101, 50);
    j.close().unwrap();
    drop(j);
    let (b, _) = read_all(d.path(), None);
    assert_eq!(b.len(), 150);
    check_blocks(&b, 1);
}

/// A journal written before CRC-32C (segment version 1, blocks checksummed with CRC-32)
/// is read as it is, and appending goes on in a new segment of the current version.
#[test]
fn version_1_segments_are_read_and_continued_in_a_new_segment() {
    let d = TempDir::new("version1");
    std::fs::create_dir_all(journal_dir(d.path())).unwrap();
    let mut file = Vec::new();
    file.extend_from_slice(b"STRJ");
    file.extend_from_slice(&1u32.to_le_bytes());
    file.extend_from_slice(&1u64.to_le_bytes()); // segment 1
    file.extend_from_slice(&1u64.to_le_bytes()); // first LSN 1
    let crc = crc32fast::hash(&file);
    file.extend_from_slice(&crc.to_le_bytes());
    for i in 1..=20u64 {
        let mut covered = Vec::new();
        covered.extend_from_slice(&((i % 16) as u32).to_le_bytes());
        covered.extend_from_slice(&(i * 7).to_le_bytes());
        covered.extend_from_slice(&payload(i));
        file.extend_from_slice(&(payload(i).len() as u32).to_le_bytes());
        file.extend_from_slice(&crc32fast::hash(&covered).to_le_bytes());
        file.extend_from_slice(&covered);
    }
    std::fs::write(only_segment(d.path()), &file).unwrap();
    let (b, _) = read_all(d.path(), None);
    assert_eq!(b.len(), 20);
    check_blocks(&b, 1);

    let j = Journal::open(opts(d.path(), Fsync::EverySec, 1 << 20)).unwrap();
    append_n(&j, 21, 10);
    j.close().unwrap();
    drop(j);
    assert_eq!(std::fs::read(only_segment(d.path())).unwrap(), file);
    let second = std::fs::read(segment_path(d.path(), 2)).unwrap();
    assert_eq!(second[4..8], 2u32.to_le_bytes());
    check_journal(d.path(), 30);
}

/// Threads append into lanes of their own; the file must still hold every block exactly
/// once, in LSN order, each with the payload its thread appended under that LSN, across
/// segment rotations (small segments) and a snapshot-style marker appended meanwhile.
#[test]
fn concurrent_lanes_land_in_lsn_order() {
    let d = TempDir::new("lanes");
    let j = Journal::open(opts(d.path(), Fsync::EverySec, 4096)).unwrap();
    let threads = 4u32;
    let per = 2000u64;
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let j = Arc::clone(&j);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for i in 0..per {
                    let p = format!("t{t} i{i}").into_bytes();
                    got.push((j.append(t, i, &p), p));
                }
                got
            })
        })
        .collect();
    while j.next_lsn() < 1000 {
        std::thread::yield_now();
    }
    let (marker, pos) = j.append_with_pos(99, 0, b"marker", |_, pos| pos);
    assert!(marker >= 1000);
    let mut want = vec![(marker, b"marker".to_vec())];
    for h in hs {
        let got = h.join().unwrap();
        assert!(
            got.windows(2).all(|w| w[0].0 < w[1].0),
            "a thread's LSNs increase"
        );
        want.extend(got);
    }
    j.close().unwrap();
    want.sort_by_key(|w| w.0);
    let (b, sum) = read_all(d.path(), None);
    assert!(sum.torn.is_none());
    assert!(
        sum.last_lsn > 0 && b.last().is_some_and(|l| l.pos.segment > 10),
        "rotation"
    );
    assert_eq!(b.len(), want.len());
    for (k, (blk, (lsn, p))) in b.iter().zip(&want).enumerate() {
        assert_eq!(blk.lsn, k as u64 + 1);
        assert_eq!((blk.lsn, &blk.payload), (*lsn, p));
    }
    // The marker's position replays from the marker on.
    let (from, _) = read_all(d.path(), Some(pos));
    assert_eq!(from.first().map(|b| b.lsn), Some(marker));
    assert_eq!(from.len() as u64, want.len() as u64 - marker + 1);
}

#[test]
fn group_commit_shares_fsyncs() {
    let d = TempDir::new("group");
    let j = Journal::open(opts(d.path(), Fsync::Always, 64 << 20)).unwrap();
    let threads = 16;
    let per = 100;
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let j = Arc::clone(&j);
            std::thread::spawn(move || {
                for i in 0..per {
                    let lsn = j.append(t, i, b"*1\r\n$4\r\nPING\r\n");
                    // Like a client under appendfsync always: wait for the ack.
                    while j.durable_lsn() < lsn {
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let st = j.stats();
    let blocks = u64::from(threads) * per;
    assert_eq!(st.blocks, blocks);
    assert_eq!(st.durable_lsn, blocks);
    eprintln!("group commit: {} fsyncs for {blocks} blocks", st.fsyncs);
    assert!(st.fsyncs > 0 && st.fsyncs * 2 <= blocks, "{st:?}");
    j.close().unwrap();
    let (b, _) = read_all(d.path(), None);
    assert_eq!(b.len() as u64, blocks);
}

/// Leaders (threads running event loops) flush their own batches under `always`: a leader
/// that calls `flush_pending` each time it would idle sees its blocks durable, by its own
/// fsync or by another thread's (`flush_pending` returns at once while another thread
/// flushes; the leader's loop comes back to it). The flusher thread's backstop picks up a
/// block appended by a thread that never flushes. Small
/// segments make leaders rotate too. The file holds every block.
#[test]
fn leaders_flush_their_own_batches() {
    let d = TempDir::new("leaders");
    let j = Journal::open(opts(d.path(), Fsync::Always, 4096)).unwrap();
    j.set_leaders(true);
    let (threads, batches) = (4u32, 150u64);
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let j = Arc::clone(&j);
            std::thread::spawn(move || {
                for b in 0..batches {
                    let mut last = 0;
                    for i in 0..=(b % 4) {
                        last = j.append(t, 0, &payload(b * 4 + i));
                    }
                    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
                    while j.durable_lsn() < last {
                        assert!(std::time::Instant::now() < end, "thread {t} batch {b}");
                        j.flush_pending();
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let st = j.stats();
    assert_eq!(st.durable_lsn, st.blocks);
    assert!(st.fsyncs > 0 && st.fsyncs <= st.blocks, "{st:?}");
    // Nobody flushes this one: the backstop does.
    let lsn = j.append(0, 0, b"*1\r\n$4\r\nPING\r\n");
    assert!(eventually(2, || j.durable_lsn() >= lsn));
    // A leader's failed write is reported, and the flusher thread retries it until it
    // succeeds.
    j.inject_write_errors(3);
    let lsn = j.append(0, 0, b"*1\r\n$4\r\nPING\r\n");
    assert!(eventually(2, || {
        j.flush_pending();
        j.last_error().is_some()
    }));
    assert!(eventually(5, || j.durable_lsn() >= lsn));
    assert_eq!(j.last_error(), None);
    let blocks = st.blocks + 2;
    j.close().unwrap();
    let (b, _) = read_all(d.path(), None);
    assert_eq!(b.len() as u64, blocks);
    let segments = std::fs::read_dir(journal_dir(d.path())).unwrap().count();
    assert!(segments > 2, "{segments} segments");
}

#[test]
fn on_durable_callback_and_everysec_writes_promptly() {
    let d = TempDir::new("cb");
    let j = Journal::open(opts(d.path(), Fsync::EverySec, 64 << 20)).unwrap();
    let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let s2 = seen.clone();
    j.on_durable(Box::new(move |l| {
        s2.fetch_max(l, std::sync::atomic::Ordering::SeqCst);
    }));
    let lsn = j.append(0, 0, b"x");
    assert!(eventually(1, || j.written_lsn() >= lsn));
    // fsync at most once a second, but within about a second.
    assert!(eventually(3, || seen
        .load(std::sync::atomic::Ordering::SeqCst)
        >= lsn));
    j.set_fsync(Fsync::No);
    let lsn = j.append(0, 0, b"y");
    assert!(eventually(1, || j.durable_lsn() >= lsn));
    let before = j.stats().fsyncs;
    j.append(0, 0, b"z");
    assert_eq!(j.sync().unwrap(), lsn + 1);
    assert!(j.stats().fsyncs > before);
}

#[test]
fn torn_tail_at_every_cut_is_dropped_and_truncated() {
    let d = TempDir::new("torn");
    let j = Journal::open(opts(d.path(), Fsync::No, 1 << 20)).unwrap();
    append_n(&j, 1, 5);
    j.close().unwrap();
    drop(j);
    let (b, _) = read_all(d.path(), None);
    let last_start = b[4].pos.offset;
    let seg = only_segment(d.path());
    let orig = std::fs::read(&seg).unwrap();
    for cut in last_start..orig.len() as u64 {
        std::fs::write(&seg, &orig[..cut as usize]).unwrap();
        let (b, sum) = read_all(d.path(), None);
        assert_eq!(b.len(), 4, "cut {cut}");
        if cut > last_start {
            let t = sum.torn.expect("torn tail reported");
            assert_eq!(t.offset, last_start);
        } else {
            assert!(sum.torn.is_none());
        }
        let j = Journal::open(opts(d.path(), Fsync::No, 1 << 20)).unwrap();
        assert_eq!(std::fs::metadata(&seg).unwrap().len(), last_start);
        assert_eq!(j.append(5, 5 * 7, &payload(5)), 5);
        j.close().unwrap();
        drop(j);
        check_journal(d.path(), 5);
    }
}

#[test]
fn damaged_last_block_and_zero_fill_are_torn() {
    let d = TempDir::new("torn2");
    let j = Journal::open(opts(d.path(), Fsync::No, 1 << 20)).unwrap();
    append_n(&j, 1, 5);
    j.close().unwrap();
    drop(j);
    let seg = only_segment(d.path());
    let orig = std::fs::read(&seg).unwrap();
    let (b, _) = read_all(d.path(), None);
    let last = b[4].pos.offset as usize;

    // Garbage inside the last block, nothing after it.
    let mut bad = orig.clone();
    bad[last + BLOCK_HEADER_LEN + 3] ^= 0x40;
    std::fs::write(&seg, &bad).unwrap();
    let (b2, sum) = read_all(d.path(), None);
    assert_eq!(b2.len(), 4);
    assert_eq!(sum.torn.unwrap().reason, "crc mismatch");

    // Zeros after good blocks (what the writer lays ahead of its data): the clean end.
    let mut z = orig.clone();
    z.extend_from_slice(&[0u8; 4096]);
    std::fs::write(&seg, &z).unwrap();
    let (b3, sum) = read_all(d.path(), None);
    assert_eq!(b3.len(), 5);
    assert!(sum.torn.is_none());
    assert!(truncate_torn_tail(d.path()).unwrap().is_none());
    // ...but a half-written block before them is a torn tail.
    let mut zt = orig[..last + 7].to_vec();
    zt.extend_from_slice(&[0u8; 4096]);
    std::fs::write(&seg, &zt).unwrap();
    let (b4, sum) = read_all(d.path(), None);
    assert_eq!(b4.len(), 4);
    assert_eq!(sum.torn.as_ref().unwrap().offset, last as u64);
}

/// The writer fills the live segment with zeros ahead of its data; a crash leaves them
/// (recovery reads them as the end and the reopened journal writes over them), a clean
/// close cuts them, and rotation cuts them before the next segment exists.
#[test]
fn prezeroed_tail_is_the_end_and_is_cut_at_close_and_rotation() {
    let d = TempDir::new("prezero");
    let j = Journal::open(opts(d.path(), Fsync::Always, 1 << 20)).unwrap();
    append_n(&j, 1, 10);
    j.sync().unwrap();
    let seg = only_segment(d.path());
    let (blocks, _) = read_all(d.path(), None);
    let data_end = blocks[9].pos.offset + (BLOCK_HEADER_LEN + payload(10).len()) as u64;
    // While running: zeros past the data.
    let live = std::fs::metadata(&seg).unwrap().len();
    assert!(live > data_end, "no zeros ahead: {live} <= {data_end}");
    // A crash now (no close): the copy has the zeros; it reads as 10 blocks, no damage.
    let crashed = TempDir::new("prezero-crash");
    std::fs::create_dir_all(crashed.path().join("journal")).unwrap();
    std::fs::copy(
        &seg,
        crashed
            .path()
            .join("journal")
            .join(seg.file_name().unwrap()),
    )
    .unwrap();
    let (b, sum) = read_all(crashed.path(), None);
    assert_eq!(b.len(), 10);
    assert!(sum.torn.is_none());
    // Reopened, it writes over the zeros and everything reads back in order.
    let j2 = Journal::open(opts(crashed.path(), Fsync::Always, 1 << 20)).unwrap();
    append_n(&j2, 11, 5);
    j2.close().unwrap();
    let (b, sum) = read_all(crashed.path(), None);
    check_blocks(&b, 1);
    assert_eq!(b.len(), 15);
    assert!(sum.torn.is_none());
    // A clean close cuts the zeros.
    j.close().unwrap();
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), data_end);
    // Rotation: small segments; every finished one ends at its last block.
    let r = TempDir::new("prezero-rot");
    let j = Journal::open(opts(r.path(), Fsync::Always, 4096)).unwrap();
    append_n(&j, 1, 200);
    j.sync().unwrap();
    let segs: Vec<u64> = (1..)
        .take_while(|&n| segment_path(r.path(), n).exists())
        .collect();
    assert!(segs.len() > 2);
    for &n in &segs[..segs.len() - 1] {
        let len = std::fs::metadata(segment_path(r.path(), n)).unwrap().len();
        assert!(len <= 4096, "segment {n} kept its zeros: {len} bytes");
    }
    j.close().unwrap();
    let (b, sum) = read_all(r.path(), None);
    check_blocks(&b, 1);
    assert!(sum.torn.is_none());
}

#[test]
fn bit_flip_in_middle_block_names_file_and_offset() {
    let d = TempDir::new("flip");
    let j = Journal::open(opts(d.path(), Fsync::No, 1 << 20)).unwrap();
    append_n(&j, 1, 10);
    j.close().unwrap();
    drop(j);
    let (b, _) = read_all(d.path(), None);
    let seg = only_segment(d.path());
    let orig = std::fs::read(&seg).unwrap();
    // Every byte of block 4 (header and payload): a flip is corruption, never a torn tail.
    let start = b[3].pos.offset as usize;
    let end = b[4].pos.offset as usize;
    for at in start..end {
        let mut bad = orig.clone();
        bad[at] ^= 0x01;
        std::fs::write(&seg, &bad).unwrap();
        let err = read_blocks(d.path(), None, |_| Ok::<(), Infallible>(())).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("journal corrupt: ")
                && msg.contains("00000000000000000001.seg")
                && msg.contains(&format!("at offset {start}:")),
            "flip at {at}: {msg}"
        );
        assert!(Journal::open(opts(d.path(), Fsync::No, 1 << 20)).is_err());
        let rep = check(d.path()).unwrap();
        let p = rep.problem.clone().unwrap();
        assert!(!p.torn && p.offset == start as u64, "{rep}");
        assert!(!rep.ok());
    }
}

#[test]
fn rotation_position_and_drop_before() {
    let d = TempDir::new("rotate");
    let j = Journal::open(opts(d.path(), Fsync::EverySec, 300)).unwrap();
    append_n(&j, 1, 49);
    let (lsn, pos) = j.append_with_pos(50 % 16, 50 * 7, &payload(50), |l, p| (l, p));
    assert_eq!(lsn, 50);
    let after = j.position();
    assert!(after > pos.1);
    append_n(&j, 51, 50);
    j.sync().unwrap();
    let st = j.stats();
    assert!(st.segments > 10, "{st:?}");
    assert_eq!(st.blocks, 100);

    let (b, sum) = read_all(d.path(), None);
    assert_eq!(b.len(), 100);
    check_blocks(&b, 1);
    assert_eq!(sum.segments, st.segments);
    assert!(b.windows(2).all(|w| w[0].pos < w[1].pos));
    // Every finished segment respects the size limit (blocks are far smaller than it); the
    // live one has zeros laid ahead of its data until it is finished or closed.
    for s in 1..st.segments {
        assert!(std::fs::metadata(segment_path(d.path(), s)).unwrap().len() <= 300);
    }

    let (from, _) = read_all(d.path(), Some(pos.1));
    assert_eq!(from.len(), 51);
    check_blocks(&from, 50);
    let (from, _) = read_all(d.path(), Some(after));
    check_blocks(&from, 51);

    j.drop_before(pos.1).unwrap();
    let st2 = j.stats();
    assert_eq!(st2.segments, st.segments - (pos.1.segment - 1));
    assert!(st2.blocks <= 51 + 4 && st2.blocks >= 51, "{st2:?} {pos:?}");
    assert!(!segment_path(d.path(), 1).exists());
    let (b, _) = read_all(d.path(), None);
    assert_eq!(b.last().unwrap().lsn, 100);
    check_blocks(&b, b[0].lsn);
    // A position in a dropped segment is an error, not a silent skip.
    let e = read_blocks(
        d.path(),
        Some(Position {
            segment: 1,
            offset: 28,
        }),
        |_| Ok::<(), Infallible>(()),
    );
    assert!(e.is_err());
    j.close().unwrap();
    drop(j);

    let j = Journal::open(opts(d.path(), Fsync::EverySec, 300)).unwrap();
    assert_eq!(j.next_lsn(), 101);
    append_n(&j, 101, 20);
    j.close().unwrap();
    let (b, _) = read_all(d.path(), Some(pos.1));
    check_blocks(&b, 50);
    assert_eq!(b.len(), 71);
}

#[test]
fn check_and_truncate() {
    let d = TempDir::new("check");
    let j = Journal::open(opts(d.path(), Fsync::No, 400)).unwrap();
    append_n(&j, 1, 40);
    j.close().unwrap();
    drop(j);
    let rep = check(d.path()).unwrap();
    assert!(rep.ok() && rep.problem.is_none(), "{rep}");
    assert_eq!(rep.blocks, 40);
    assert!(rep.segments >= 4);
    let segs = rep.segments;

    // Corrupt the second block of segment 2.
    let seg2 = segment_path(d.path(), 2);
    let (b, _) = read_all(d.path(), None);
    let in2: Vec<&Block> = b.iter().filter(|b| b.pos.segment == 2).collect();
    let bad_off = in2[1].pos.offset;
    let mut bytes = std::fs::read(&seg2).unwrap();
    bytes[bad_off as usize + BLOCK_HEADER_LEN] ^= 0xff;
    std::fs::write(&seg2, &bytes).unwrap();
    let rep = check(d.path()).unwrap();
    let text = rep.to_string();
    assert!(
        text.contains("journal corrupt") && text.contains(&format!("at offset {bad_off}")),
        "{text}"
    );
    let p = rep.problem.unwrap();
    assert!(!p.torn);
    assert_eq!(p.path, seg2);

    let tr = truncate(d.path()).unwrap();
    assert_eq!(tr.cut, Some((seg2.clone(), bad_off)));
    assert_eq!(tr.segments_removed, segs - 2);
    assert_eq!(tr.blocks_kept, in2[0].lsn);
    let rep = check(d.path()).unwrap();
    assert!(rep.ok() && rep.problem.is_none(), "{rep}");
    let j = Journal::open(opts(d.path(), Fsync::No, 400)).unwrap();
    assert_eq!(j.next_lsn(), in2[0].lsn + 1);
}

#[test]
fn write_errors_are_retried_and_nothing_is_lost() {
    let d = TempDir::new("werr");
    let j = Journal::open(opts(d.path(), Fsync::Always, 1 << 20)).unwrap();
    append_n(&j, 1, 3);
    j.sync().unwrap();
    assert!(j.last_error().is_none());
    j.inject_write_errors(3);
    append_n(&j, 4, 5);
    assert!(eventually(2, || j.last_error().is_some()));
    assert_eq!(j.last_error().unwrap(), "injected write error");
    assert!(j.durable_lsn() < 8);
    assert!(j.sync().is_err());
    // The retries (every ~100 ms) get through once the errors stop.
    assert!(eventually(5, || j.durable_lsn() == 8 && j.last_error().is_none()));
    // And an fsync failure (the same hook fails the next write or fsync).
    append_n(&j, 9, 2);
    j.sync().unwrap();
    j.close().unwrap();
    let (b, _) = read_all(d.path(), None);
    assert_eq!(b.len(), 10);
    check_blocks(&b, 1);
}

#[test]
fn lock_dir_is_exclusive() {
    let d = TempDir::new("lock");
    let dir = d.path().join("data");
    let l = lock_dir(&dir).unwrap();
    let e = lock_dir(&dir).unwrap_err().to_string();
    assert!(
        e.contains("is in use by another strata process")
            && e.contains(&format!("pid {}", std::process::id())),
        "{e}"
    );
    drop(l);
    lock_dir(&dir).unwrap();
}

#[test]
fn disk_full_on_tmpfs() {
    let mnt = std::env::temp_dir().join(format!("strata-tmpfs-{}", std::process::id()));
    std::fs::create_dir_all(&mnt).unwrap();
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .output();
    match st {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "SKIPPED: cannot mount tmpfs: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            let _ = std::fs::remove_dir(&mnt);
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED: cannot mount tmpfs: {e}");
            let _ = std::fs::remove_dir(&mnt);
            return;
        }
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _u = Unmount(mnt.clone());
    let dir = mnt.join("data");
    // Fill most of the space so the journal hits ENOSPC quickly.
    let filler = mnt.join("filler");
    std::fs::write(&filler, vec![7u8; 700 << 10]).unwrap();
    let j = Journal::open(opts(&dir, Fsync::Always, 64 << 20)).unwrap();
    let big = vec![b'x'; 4000];
    let mut n = 0u64;
    while j.last_error().is_none() && n < 2000 {
        n = j.append(0, n, &big);
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let err = j.last_error().expect("ENOSPC was reported");
    assert!(err.contains("No space left on device"), "{err}");
    // Keep appending while the disk is full: everything stays in memory.
    for _ in 0..20 {
        n = j.append(0, n, &big);
    }
    assert!(j.durable_lsn() < n);
    assert!(j.stats().pending_bytes > 0);
    std::fs::remove_file(&filler).unwrap();
    assert!(
        eventually(5, || j.durable_lsn() == n && j.last_error().is_none()),
        "recovered: {:?}",
        j.stats()
    );
    j.close().unwrap();
    drop(j);
    let (b, sum) = read_all(&dir, None);
    assert_eq!(b.len() as u64, n);
    assert!(sum.torn.is_none());
    assert!(b.iter().all(|b| b.payload == big));
}

/// A block that opens a segment: `drop_before` its position keeps exactly the blocks from
/// it on, under either fsync policy, and the journal reopens after them. On an empty
/// segment it opens none.
#[test]
fn a_block_opening_a_segment_leaves_only_what_follows_after_drop_before() {
    for fsync in [Fsync::Always, Fsync::EverySec] {
        let d = TempDir::new("opening");
        let j = Journal::open(opts(d.path(), fsync, 1 << 20)).unwrap();
        let (lsn, first) = j.append_opening_segment(1, 7, &payload(1), |_, p| p);
        assert_eq!((lsn, first.segment, first.offset), (1, 1, 28), "{fsync:?}");
        append_n(&j, 2, 28);
        let (lsn, pos) = j.append_opening_segment(30 % 16, 30 * 7, &payload(30), |_, p| p);
        assert_eq!((lsn, pos.segment, pos.offset), (30, 2, 28), "{fsync:?}");
        append_n(&j, 31, 20);
        j.sync().unwrap();
        j.drop_before(pos).unwrap();
        let st = j.stats();
        assert_eq!((st.segments, st.blocks), (1, 21), "{fsync:?} {st:?}");
        j.close().unwrap();
        drop(j);
        let j = Journal::open(opts(d.path(), fsync, 1 << 20)).unwrap();
        append_n(&j, 51, 5);
        j.close().unwrap();
        let (b, sum) = read_all(d.path(), None);
        assert!(sum.torn.is_none(), "{fsync:?}");
        assert_eq!(b.len(), 26, "{fsync:?}");
        check_blocks(&b, 30);
    }
}

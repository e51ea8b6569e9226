//! On-disk constants and fixed-size headers shared by the writer, the reader and `check`.
//! All integers are little-endian. See docs/persistence.md for the byte layout.

use crate::crc32c;
use std::path::{Path, PathBuf};

pub const SEG_MAGIC: &[u8; 4] = b"STRJ";
/// Version 1 checksummed blocks with CRC-32 (IEEE); version 2 with CRC-32C, which x86-64
/// computes 8 bytes per instruction. Readers take both; a journal opened on a version 1
/// segment goes on in a new segment.
pub const SEG_VERSION: u32 = 2;
/// magic 4, version 4, segment 8, first LSN 8, crc32 (IEEE, in every version) of the
/// previous 24 bytes 4.
pub const SEG_HEADER_LEN: u64 = 28;
/// payload len 4, crc 4, db 4, epoch 8.
pub const BLOCK_HEADER_LEN: usize = 20;

pub const JOURNAL_DIR: &str = "journal";

pub fn journal_dir(dir: &Path) -> PathBuf {
    dir.join(JOURNAL_DIR)
}

pub fn segment_name(n: u64) -> String {
    format!("{n:020}.seg")
}

pub fn segment_path(dir: &Path, n: u64) -> PathBuf {
    journal_dir(dir).join(segment_name(n))
}

/// The segment number of a file name like `00000000000000000001.seg`.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".seg")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Segment numbers present in `<dir>/journal`, ascending. A missing directory is empty.
pub fn list_segments(dir: &Path) -> std::io::Result<Vec<u64>> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(journal_dir(dir)) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for ent in rd {
        let ent = ent?;
        if let Some(n) = ent.file_name().to_str().and_then(parse_segment_name) {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub fn encode_seg_header(segment: u64, first_lsn: u64) -> [u8; SEG_HEADER_LEN as usize] {
    let mut h = [0u8; SEG_HEADER_LEN as usize];
    h[0..4].copy_from_slice(SEG_MAGIC);
    h[4..8].copy_from_slice(&SEG_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&segment.to_le_bytes());
    h[16..24].copy_from_slice(&first_lsn.to_le_bytes());
    let crc = crc32fast::hash(&h[0..24]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

pub struct SegHeader {
    pub version: u32,
    pub segment: u64,
    pub first_lsn: u64,
}

/// Parses a segment header; Err names what is wrong.
pub fn decode_seg_header(b: &[u8]) -> Result<SegHeader, &'static str> {
    if b.len() < SEG_HEADER_LEN as usize {
        return Err("short segment header");
    }
    if &b[0..4] != SEG_MAGIC {
        return Err("bad segment magic");
    }
    if u32_at(b, 24) != crc32fast::hash(&b[0..24]) {
        return Err("segment header crc mismatch");
    }
    let version = u32_at(b, 4);
    if !(1..=SEG_VERSION).contains(&version) {
        return Err("unsupported segment version");
    }
    Ok(SegHeader {
        version,
        segment: u64_at(b, 8),
        first_lsn: u64_at(b, 16),
    })
}

/// A block's crc as this version writes it: of its db, epoch and payload, which lie
/// contiguous after the length and crc fields (`block[8..]`), so one pass covers them.
pub fn block_crc(db_epoch_payload: &[u8]) -> u32 {
    crc32c::crc32c(db_epoch_payload)
}

/// A block's crc in a segment of `version`.
pub fn block_crc_in(version: u32, db_epoch_payload: &[u8]) -> u32 {
    match version {
        1 => crc32fast::hash(db_epoch_payload),
        _ => block_crc(db_epoch_payload),
    }
}

/// The crc of the block `encode_block` makes of these: what `block_crc` computes over the
/// block's bytes, from the parts (appends framed in place use `frame_block` instead).
pub fn block_crc_of(db: u32, epoch: u64, payload: &[u8]) -> u32 {
    let crc = crc32c::extend(0, &db.to_le_bytes());
    let crc = crc32c::extend(crc, &epoch.to_le_bytes());
    crc32c::extend(crc, payload)
}

/// Appends one framed block to `buf`; `crc` is `block_crc_of(db, epoch, payload)`.
pub fn encode_block(buf: &mut Vec<u8>, db: u32, epoch: u64, payload: &[u8], crc: u32) {
    buf.reserve(BLOCK_HEADER_LEN + payload.len());
    buf.extend_from_slice(&block_header(payload.len(), crc, db, epoch));
    buf.extend_from_slice(payload);
}

/// Appends one framed block whose payload `write` appends to `buf` in place (no copy);
/// returns the payload's length. The header goes in first with a zero crc, which is then
/// computed over db, epoch and payload in one pass (`block_crc`).
pub fn frame_block(
    buf: &mut Vec<u8>,
    db: u32,
    epoch: u64,
    write: impl FnOnce(&mut Vec<u8>),
) -> usize {
    let at = buf.len();
    buf.extend_from_slice(&block_header(0, 0, db, epoch));
    write(buf);
    let len = buf.len() - at - BLOCK_HEADER_LEN;
    buf[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
    let crc = block_crc(&buf[at + 8..]);
    buf[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    len
}

/// A block's header, for a payload of `len` bytes whose `block_crc_of` is `crc`.
pub fn block_header(len: usize, crc: u32, db: u32, epoch: u64) -> [u8; BLOCK_HEADER_LEN] {
    let mut h = [0u8; BLOCK_HEADER_LEN];
    h[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    h[4..8].copy_from_slice(&crc.to_le_bytes());
    h[8..12].copy_from_slice(&db.to_le_bytes());
    h[12..20].copy_from_slice(&epoch.to_le_bytes());
    h
}

// Callers check bounds first; these take fixed-size subslices so they cannot panic on a
// correct caller and keep the parsing code short.
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// fsync a directory so a create/rename/unlink inside it survives a crash.
pub fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Replaces the file at `path` with `bytes` whole: written to `<path>.tmp`, fsynced,
/// renamed over it and the directory fsynced, so a crash leaves the old file or the new
/// one, never part of either. The temporary file goes if anything fails.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        fsync_dir(dir.unwrap_or(Path::new(".")))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block framed in place is byte for byte the one `encode_block` makes.
    #[test]
    fn framing_in_place_matches_encode_block() {
        for payload in [&b""[..], b"x", &[7u8; 300]] {
            let (db, epoch) = (3, 0x0102_0304_0506_0708);
            let mut want = vec![9u8; 5];
            encode_block(
                &mut want,
                db,
                epoch,
                payload,
                block_crc_of(db, epoch, payload),
            );
            let mut got = vec![9u8; 5];
            let len = frame_block(&mut got, db, epoch, |b| b.extend_from_slice(payload));
            assert_eq!((len, got), (payload.len(), want));
        }
    }

    /// The crc computed from the parts (before the journal's lock) is the one a reader
    /// computes over the block's bytes.
    #[test]
    fn block_crc_of_parts_matches_the_blocks_bytes() {
        for payload in [&b""[..], b"x", &[7u8; 300]] {
            let crc = block_crc_of(3, 0x0102_0304_0506_0708, payload);
            let mut buf = vec![9u8; 5];
            encode_block(&mut buf, 3, 0x0102_0304_0506_0708, payload, crc);
            let block = &buf[5..];
            assert_eq!(block.len(), BLOCK_HEADER_LEN + payload.len());
            assert_eq!(u32_at(block, 4), block_crc(&block[8..]));
            assert_eq!(u32_at(block, 0) as usize, payload.len());
        }
    }
}

//! Redis 7.0's HyperLogLog representation and estimator (hyperloglog.c), byte for byte, so a
//! HyperLogLog built by Strata and one built by Redis for the same commands are the same
//! string, and each server reads the other's (DUMP/RESTORE, replication, GET/SET).
//!
//! The value is a plain string: a 16-byte header `"HYLL" | encoding u8 | 3 zero bytes |
//! cached cardinality u64 LE` (the cache's top bit set = stale), then the registers:
//!
//! - dense: 16384 6-bit registers packed LSB first, 12288 bytes;
//! - sparse: run-length opcodes — `00xxxxxx` ZERO (1..64 zero registers),
//!   `01xxxxxx yyyyyyyy` XZERO (1..16384 zero registers), `1vvvvvxx` VAL (1..4 registers
//!   of value 1..32). A sparse HLL becomes dense when a register needs a value above 32 or
//!   the string would grow past `hll-sparse-max-bytes`.
//!
//! Corrupted input never panics: reads past the end see the zero byte that Redis's sds
//! terminator provides, and the same operations report corruption where Redis does —
//! including the opcode-overflow checks of the CVE-2025-32023 fix that Debian's 7.0.15
//! carries (a run past register 16383 is corruption in to_dense, count and merge).

pub const HDR_SIZE: usize = 16;
pub const P: u32 = 14;
pub const Q: u32 = 64 - P;
pub const REGISTERS: usize = 1 << P;
const P_MASK: u64 = REGISTERS as u64 - 1;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
pub const DENSE_SIZE: usize = HDR_SIZE + (REGISTERS * BITS).div_ceil(8);
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;
const MAX_ENCODING: u8 = 1;

const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
#[allow(clippy::excessive_precision)]
const ALPHA_INF: f64 = 0.721347520444481703680; // 0.5 / ln(2), Redis's literal

/// The sparse representation is malformed (Redis's "INVALIDOBJ Corrupted HLL object").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// Redis's MurmurHash64A (endian-neutral variant).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let len = key.len();
    // C computes `seed ^ (len * m)` with `len` an int: sign-extend like it does.
    let mut h = seed ^ ((len as i32 as i64 as u64).wrapping_mul(M));
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate().rev() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element hashes to and the length of its `000..1` run (1..=Q+1).
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let mut hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & P_MASK) as usize;
    hash >>= P;
    hash |= 1u64 << Q;
    (index, hash.trailing_zeros() as u8 + 1)
}

/// A byte of `s`, or 0 past its end (the sds terminator Redis's code relies on).
#[inline]
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

#[inline]
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u32::from(at(regs, byte));
    let b1 = u32::from(at(regs, byte + 1));
    (((b0 >> fb) | (b1 << (8 - fb))) & u32::from(REGISTER_MAX)) as u8
}

#[inline]
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let fb8 = 8 - fb;
    let v = u32::from(val);
    let m = u32::from(REGISTER_MAX);
    if let Some(b) = regs.get_mut(byte) {
        *b &= !((m << fb) as u8);
        *b |= (v << fb) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((m >> fb8) as u8);
        *b |= (v >> fb8) as u8;
    }
}

/// hllDenseSet: raises register `i` to `count`; true if it changed.
fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

// Sparse opcodes.
#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}
#[inline]
fn zero_len(b: u8) -> usize {
    usize::from(b & 0x3f) + 1
}
#[inline]
fn xzero_len(b0: u8, b1: u8) -> usize {
    ((usize::from(b0 & 0x3f) << 8) | usize::from(b1)) + 1
}
#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(b: u8) -> usize {
    usize::from(b & 0x3) + 1
}
#[inline]
fn val_op(val: u8, len: usize) -> u8 {
    (((val - 1) << 2) | (len as u8 - 1)) | 0x80
}
fn push_zero_run(out: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        let l = len - 1;
        out.push(((l >> 8) as u8) | 0x40);
        out.push((l & 0xff) as u8);
    } else {
        out.push((len - 1) as u8);
    }
}

/// One decoded sparse opcode: (registers covered, value, opcode bytes).
#[inline]
fn sparse_op(s: &[u8], p: usize) -> (usize, u8, usize) {
    let b = s[p];
    if is_zero(b) {
        (zero_len(b), 0, 1)
    } else if is_xzero(b) {
        (xzero_len(b, at(s, p + 1)), 0, 2)
    } else {
        (val_len(b), val_value(b), 1)
    }
}

/// createHLLObject: an empty sparse HLL (one XZERO of 16384).
pub fn new_sparse() -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR_SIZE + 2 + 3);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.extend_from_slice(&[0u8; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let x = left.min(SPARSE_XZERO_MAX_LEN);
        push_zero_run(&mut s, x);
        left -= x;
    }
    s
}

/// isHLLObjectOrReply's checks: magic, known encoding, exact dense size.
pub fn is_valid(s: &[u8]) -> bool {
    s.len() >= HDR_SIZE
        && &s[..4] == b"HYLL"
        && s[4] <= MAX_ENCODING
        && (s[4] != DENSE || s.len() == DENSE_SIZE)
}

pub fn encoding(s: &[u8]) -> u8 {
    s[4]
}

/// The cached cardinality, if valid.
pub fn cached(s: &[u8]) -> Option<u64> {
    if s[15] & 0x80 != 0 {
        return None;
    }
    let mut c = [0u8; 8];
    c.copy_from_slice(&s[8..16]);
    Some(u64::from_le_bytes(c))
}

pub fn set_cached(s: &mut [u8], card: u64) {
    s[8..16].copy_from_slice(&card.to_le_bytes());
}

pub fn invalidate(s: &mut [u8]) {
    s[15] |= 0x80;
}

/// hllSparseToDense: converts in place (a no-op when already dense). The header, with its
/// cached cardinality, is kept.
pub fn to_dense(s: &mut Vec<u8>) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR_SIZE].copy_from_slice(&s[..HDR_SIZE]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR_SIZE..];
    let mut idx = 0usize;
    let mut p = HDR_SIZE;
    while p < s.len() {
        let (run, val, oplen) = sparse_op(s, p);
        if run + idx > REGISTERS {
            return Err(Corrupt);
        }
        if val > 0 {
            for _ in 0..run {
                dense_put(regs, idx, val);
                idx += 1;
            }
        } else {
            idx += run;
        }
        p += oplen;
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    *s = dense;
    Ok(())
}

/// hllSparseSet: raises register `index` to `count` in a sparse HLL, promoting it to dense
/// when needed. Ok(true) if a register changed.
fn sparse_set(s: &mut Vec<u8>, index: usize, count: u8, max_bytes: u64) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: find the opcode covering `index`.
    let end = s.len();
    let mut p = HDR_SIZE;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < end {
        let (sp, _, oplen) = sparse_op(s, p);
        span = sp;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let b = s[p];
    let oldlen = if is_xzero(b) { 2 } else { 1 };
    let has_next = p + oldlen < end;
    let (zero, xzero) = (is_zero(b), is_xzero(b));
    let runlen = span;

    'updated: {
        if is_val(b) {
            let old = val_value(b);
            // Case A: nothing to do.
            if old >= count {
                return Ok(false);
            }
            // Case B: a VAL of length 1.
            if runlen == 1 {
                s[p] = val_op(count, 1);
                break 'updated;
            }
        }
        // Case C: a ZERO of length 1.
        if zero && runlen == 1 {
            s[p] = val_op(count, 1);
            break 'updated;
        }
        // Case D: split the opcode into up to three.
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        let last = first + span - 1;
        if zero || xzero {
            if index != first {
                push_zero_run(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zero_run(&mut seq, last - index);
            }
        } else {
            let cur = val_value(b);
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        }
        // Step 3: substitute the new sequence for the old opcode.
        let new_len = end as i64 + seq.len() as i64 - oldlen as i64;
        if seq.len() > oldlen && new_len as u64 > max_bytes {
            return promote(s, index, count);
        }
        if has_next {
            s.splice(p..p + oldlen, seq);
        } else {
            // The last opcode: Redis writes the sequence at `p` and sets the length to
            // old + delta (they differ only for a truncated trailing XZERO).
            s.truncate(p);
            s.extend_from_slice(&seq);
            s.resize(usize::try_from(new_len).unwrap_or(0).max(HDR_SIZE), 0);
        }
    }

    // Step 4: merge adjacent VAL opcodes of equal value, scanning up to 5 opcodes.
    let mut p = prev.unwrap_or(HDR_SIZE);
    let mut scan = 5;
    while p < s.len() {
        if scan == 0 {
            break;
        }
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        } else if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < s.len() && is_val(s[p + 1]) {
            let v1 = val_value(b);
            let v2 = val_value(s[p + 1]);
            if v1 == v2 {
                let len = val_len(b) + val_len(s[p + 1]);
                if len <= SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val_op(v1, len);
                    s.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate(s);
    Ok(true)
}

fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(s)?;
    // The register needed raising in the sparse form, so it does in the dense one.
    Ok(dense_set(&mut s[HDR_SIZE..], index, count))
}

/// hllAdd: adds an element; Ok(true) if a register changed. `s` must pass `is_valid`.
pub fn add(s: &mut Vec<u8>, ele: &[u8], max_bytes: u64) -> Result<bool, Corrupt> {
    let (index, count) = pat_len(ele);
    set_register(s, index, count, max_bytes)
}

/// Raises one register in either encoding (PFADD, PFMERGE).
pub fn set_register(
    s: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: u64,
) -> Result<bool, Corrupt> {
    match s[4] {
        DENSE => Ok(dense_set(&mut s[HDR_SIZE..], index, count)),
        SPARSE => sparse_set(s, index, count, max_bytes),
        _ => Err(Corrupt),
    }
}

/// hllMerge: max[i] = max(max[i], register i) for every register.
pub fn merge_into(max: &mut [u8], s: &[u8]) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        let regs = &s[HDR_SIZE..];
        for (i, m) in max.iter_mut().enumerate().take(REGISTERS) {
            let v = dense_get(regs, i);
            if v > *m {
                *m = v;
            }
        }
        return Ok(());
    }
    let mut i = 0usize;
    let mut p = HDR_SIZE;
    while p < s.len() {
        let (run, val, oplen) = sparse_op(s, p);
        if run + i > REGISTERS {
            return Err(Corrupt);
        }
        if val > 0 {
            for m in &mut max[i..i + run] {
                if val > *m {
                    *m = val;
                }
            }
        }
        i += run;
        p += oplen;
    }
    if i != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// hllCount of a stored HLL (either encoding).
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    let mut histo = [0u32; 64];
    if s[4] == DENSE {
        let regs = &s[HDR_SIZE..];
        for chunk in regs.chunks_exact(3) {
            // Four 6-bit registers per 3 bytes.
            let w = u32::from(chunk[0]) | u32::from(chunk[1]) << 8 | u32::from(chunk[2]) << 16;
            histo[(w & 63) as usize] += 1;
            histo[(w >> 6 & 63) as usize] += 1;
            histo[(w >> 12 & 63) as usize] += 1;
            histo[(w >> 18 & 63) as usize] += 1;
        }
    } else {
        let mut idx = 0usize;
        let mut p = HDR_SIZE;
        while p < s.len() {
            let (run, val, oplen) = sparse_op(s, p);
            if run + idx > REGISTERS {
                return Err(Corrupt);
            }
            idx += run;
            histo[usize::from(val)] += run as u32;
            p += oplen;
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// hllCount over plain byte registers (PFCOUNT of several keys).
pub fn count_raw(regs: &[u8]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in regs {
        histo[usize::from(r & 63)] += 1;
    }
    estimate(&histo)
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let zp = z;
        z += x * y;
        y += y;
        if zp == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let zp = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if zp == z {
            return z / 3.0;
        }
    }
}

/// Ertl's improved estimator, as Redis 7.0's hllCount.
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    let e = (ALPHA_INF * m * m / z).round();
    // llroundl then a cast to uint64_t: NaN or out-of-range values don't occur for valid
    // histograms; saturate rather than wrap if they ever do.
    if e.is_finite() && e >= 0.0 {
        e as u64
    } else {
        0
    }
}

/// PFDEBUG DECODE's text of a sparse HLL.
pub fn decode(s: &[u8]) -> String {
    let mut out = String::new();
    let mut p = HDR_SIZE;
    while p < s.len() {
        let b = s[p];
        let (run, val, oplen) = sparse_op(s, p);
        if is_zero(b) {
            out.push_str(&format!("z:{run} "));
        } else if is_xzero(b) {
            out.push_str(&format!("Z:{run} "));
        } else {
            out.push_str(&format!("v:{val},{run} "));
        }
        p += oplen;
    }
    out.trim_matches(' ').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sparse_layout() {
        let s = new_sparse();
        assert_eq!(s.len(), 18);
        assert!(is_valid(&s));
        assert_eq!(&s[16..], &[0x7f, 0xff]);
        assert_eq!(count(&s), Ok(0));
    }

    #[test]
    fn dense_registers_roundtrip() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR_SIZE];
        let mut x = 12345u32;
        let mut want = vec![0u8; REGISTERS];
        for (i, w) in want.iter_mut().enumerate() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *w = (x >> 16) as u8 & 63;
            dense_put(&mut regs, i, *w);
        }
        for (i, w) in want.iter().enumerate() {
            assert_eq!(dense_get(&regs, i), *w);
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        for i in 0..5000u32 {
            let e = i.to_le_bytes();
            add(&mut sparse, &e, 1 << 20).unwrap();
            add(&mut dense, &e, 1 << 20).unwrap();
            if i % 500 == 0 {
                assert_eq!(count(&sparse), count(&dense));
            }
        }
        let mut promoted = sparse.clone();
        to_dense(&mut promoted).unwrap();
        assert_eq!(&promoted[HDR_SIZE..], &dense[HDR_SIZE..]);
        let est = count(&dense).unwrap() as f64;
        assert!((est - 5000.0).abs() < 5000.0 * 0.05, "{est}");
    }

    #[test]
    fn corrupted_sparse_never_panics() {
        let mut x = 7u64;
        for n in 0..2000 {
            let mut s = new_sparse();
            s.truncate(16);
            for _ in 0..(n % 12) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(x as u8);
            }
            let _ = count(&s);
            let mut m = vec![0u8; REGISTERS];
            let _ = merge_into(&mut m, &s);
            let _ = decode(&s);
            let mut t = s.clone();
            let _ = add(&mut t, &x.to_le_bytes(), 3000);
            let mut t = s.clone();
            let _ = to_dense(&mut t);
        }
    }
}

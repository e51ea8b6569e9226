//! Key and value generators: `random:N`, `seq:START..END`, `zipf:N:THETA`, value sizes,
//! and YCSB's zipfian family (ZipfianGenerator, ScrambledZipfianGenerator, SkewedLatest),
//! ported from YCSB's Java so key popularity matches published YCSB runs.

use crate::rng::Rng;
use std::sync::Arc;

/// Which keys a kv run touches.
#[derive(Clone, Debug, PartialEq)]
pub enum KeySpec {
    /// Uniform over `0..n`.
    Random(u64),
    /// Each key of `start..end` once, in order; the range is split across clients.
    Seq(u64, u64),
    /// Zipfian over `0..n` with exponent `theta` (YCSB's default is 0.99); key 0 is rank 1.
    Zipf(u64, f64),
}

impl KeySpec {
    pub fn parse(s: &str) -> Result<KeySpec, String> {
        let err = || format!("bad --keys {s:?}: expected random:N, seq:START..END or zipf:N:THETA");
        let num = |t: &str| parse_count(t).ok_or_else(err);
        let (kind, rest) = s.split_once(':').ok_or_else(err)?;
        let spec = match kind {
            "random" => KeySpec::Random(num(rest)?),
            "seq" => {
                let (a, b) = rest.split_once("..").ok_or_else(err)?;
                let (a, b) = (num(a)?, num(b)?);
                if b <= a {
                    return Err(format!("--keys {s}: END must be above START"));
                }
                KeySpec::Seq(a, b)
            }
            "zipf" => {
                let (n, t) = rest.split_once(':').ok_or_else(err)?;
                let theta: f64 = t.parse().map_err(|_| err())?;
                if !(theta > 0.0 && theta < 1.0) {
                    return Err(format!(
                        "--keys {s}: THETA must be in (0, 1) (YCSB uses 0.99)"
                    ));
                }
                KeySpec::Zipf(num(n)?, theta)
            }
            _ => return Err(err()),
        };
        if spec.space() == 0 {
            return Err(format!("--keys {s}: the key space is empty"));
        }
        Ok(spec)
    }

    /// Number of distinct keys (for seq, the end: keys are indexed from 0 for verification).
    pub fn space(&self) -> u64 {
        match *self {
            KeySpec::Random(n) | KeySpec::Zipf(n, _) => n,
            KeySpec::Seq(_, end) => end,
        }
    }
}

/// `100000`, `100k`, `1m`, `1_000_000`.
pub fn parse_count(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "").to_ascii_lowercase();
    let (digits, mul) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1_000),
        'm' => (&s[..s.len() - 1], 1_000_000),
        'g' | 'b' => (&s[..s.len() - 1], 1_000_000_000),
        _ => (&s[..], 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

/// Byte sizes: `64`, `1k` (1024), `10k`, `1m`.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim().to_ascii_lowercase();
    let (digits, mul) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1024),
        'm' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (&s[..], 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(mul)
}

/// A value size: fixed, or a range `MIN-MAX` where each key gets a size of its own,
/// derived from the key so a verifying GET knows what to expect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueSize {
    pub min: usize,
    pub max: usize,
}

impl ValueSize {
    pub fn parse(s: &str) -> Result<ValueSize, String> {
        let err = || format!("bad --value-size {s:?}: expected e.g. 64, 1k or 1k-100k");
        let (min, max) = match s.split_once('-') {
            Some((a, b)) => (
                parse_size(a).ok_or_else(err)?,
                parse_size(b).ok_or_else(err)?,
            ),
            None => {
                let n = parse_size(s).ok_or_else(err)?;
                (n, n)
            }
        };
        if min > max || max > 512 * 1024 * 1024 {
            return Err(err());
        }
        Ok(ValueSize { min, max })
    }
}

/// Values are slices of one random printable buffer: the value of key `k` starts at an
/// offset derived from `k`, so it is known without storing it, and differs between keys.
#[derive(Clone)]
pub struct Values {
    pool: Arc<Vec<u8>>,
    size: ValueSize,
}

const OFFSETS: usize = 4096;

impl Values {
    pub fn new(size: ValueSize) -> Values {
        let mut rng = Rng::new(0x5EED);
        let pool = (0..size.max + OFFSETS)
            .map(|_| b'!' + rng.below(94) as u8)
            .collect();
        Values {
            pool: Arc::new(pool),
            size,
        }
    }

    /// The value stored under key index `k`.
    #[inline]
    pub fn of(&self, k: u64) -> &[u8] {
        let h = crate::rng::splitmix(k);
        let len = if self.size.min == self.size.max {
            self.size.min
        } else {
            self.size.min + (h >> 20) as usize % (self.size.max - self.size.min + 1)
        };
        let off = (h as usize) % OFFSETS;
        &self.pool[off..off + len]
    }
}

/// Appends `prefix` and `n` zero-padded to 12 digits (redis-benchmark's key format,
/// `key:000000001234`).
#[inline]
pub fn push_key(out: &mut Vec<u8>, prefix: &[u8], n: u64) {
    out.extend_from_slice(prefix);
    let mut digits = [b'0'; 20];
    let mut i = 20;
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(8);
    out.extend_from_slice(&digits[start..]);
}

/// A key as a bulk argument, written in place: the length is known before the digits are.
pub fn push_key_arg(out: &mut Vec<u8>, prefix: &[u8], k: u64) {
    let digits = if k < 1_000_000_000_000 {
        12
    } else {
        k.ilog10() as usize + 1
    };
    crate::conn::push_header(out, b'$', prefix.len() + digits);
    push_key(out, prefix, k);
    out.extend_from_slice(b"\r\n");
}

pub fn key(prefix: &str, n: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 12);
    push_key(&mut k, prefix.as_bytes(), n);
    k
}

/// YCSB's `Utils.fnvhash64`.
pub fn fnvhash64(mut val: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).wrapping_abs() as u64
}

/// YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record synthetic
/// databases"): rank 0 is the most popular item. The item count may grow (for
/// SkewedLatest); zeta is then extended incrementally, as YCSB does.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

pub const YCSB_THETA: f64 = 0.99;

fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

impl Zipfian {
    pub fn new(min: u64, max: u64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(0, items, theta, 0.0))
    }

    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// Next value over the first `item_count` items (YCSB's `nextLong(itemcount)`).
    pub fn next_of(&mut self, rng: &mut Rng, item_count: u64) -> u64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = self.eta_for(item_count);
        }
        let u = rng.f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        let r = (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        self.base + r.min(item_count - 1)
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.next_of(rng, self.items)
    }

    /// The expected share of rank `r` (1-based) under this distribution.
    pub fn share_of_rank(&self, r: u64) -> f64 {
        1.0 / (r as f64).powf(self.theta) / self.zetan
    }
}

/// YCSB's ScrambledZipfianGenerator: zipfian popularity, but the popular items are spread
/// over the key space by hashing (so they are not all at the start of an ordered table).
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: u64,
    items: u64,
    gen: Zipfian,
}

impl ScrambledZipfian {
    const ITEM_COUNT: u64 = 10_000_000_000;
    /// zeta(10^10, 0.99), precomputed by YCSB.
    const ZETAN: f64 = 26.469_028_201_783_02;

    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        ScrambledZipfian {
            min,
            items: max - min + 1,
            gen: Zipfian::with_zetan(0, Self::ITEM_COUNT - 1, YCSB_THETA, Self::ZETAN),
        }
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.min + fnvhash64(self.gen.next(rng)) % self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_specs_parse() {
        assert_eq!(KeySpec::parse("random:100k"), Ok(KeySpec::Random(100_000)));
        assert_eq!(KeySpec::parse("seq:0..1000"), Ok(KeySpec::Seq(0, 1000)));
        assert_eq!(
            KeySpec::parse("zipf:1m:0.99"),
            Ok(KeySpec::Zipf(1_000_000, 0.99))
        );
        for bad in [
            "random",
            "random:x",
            "seq:5..5",
            "zipf:10:1.5",
            "nope:1",
            "random:0",
        ] {
            assert!(KeySpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ValueSize::parse("1k-100k"),
            Ok(ValueSize {
                min: 1024,
                max: 102_400
            })
        );
        assert!(ValueSize::parse("10-1").is_err());
    }

    #[test]
    fn keys_are_redis_benchmark_format() {
        assert_eq!(key("key:", 1234), b"key:000000001234".to_vec());
        assert_eq!(key("k", 0), b"k000000000000".to_vec());
        assert_eq!(key("k", 12_345_678_901_234), b"k12345678901234".to_vec());
    }

    #[test]
    fn key_arg_matches_a_plain_encoding() {
        for k in [
            0,
            7,
            999_999_999_999,
            1_000_000_000_000,
            123_456_789_012_345,
            u64::MAX,
        ] {
            let mut fast = Vec::new();
            push_key_arg(&mut fast, b"key:", k);
            let mut plain = Vec::new();
            crate::conn::push_bulk(&mut plain, &key("key:", k));
            assert_eq!(fast, plain, "{k}");
        }
    }

    #[test]
    fn values_are_stable_per_key_and_within_size() {
        let v = Values::new(ValueSize { min: 10, max: 100 });
        let mut sizes = std::collections::HashSet::new();
        for k in 0..1000 {
            let a = v.of(k);
            assert!((10..=100).contains(&a.len()));
            assert_eq!(a, v.of(k));
            sizes.insert(a.len());
        }
        assert!(sizes.len() > 50, "sizes vary across keys");
        assert_ne!(v.of(1), v.of(2));
    }

    #[test]
    fn zipf_rank_one_is_most_frequent_with_the_expected_share() {
        let n = 1000;
        let mut z = Zipfian::new(0, n - 1, YCSB_THETA);
        let mut rng = Rng::new(42);
        let draws = 200_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        let top = (0..n as usize)
            .max_by_key(|&i| counts[i])
            .unwrap_or(usize::MAX);
        assert_eq!(top, 0, "rank 1 is the most frequent");
        // Ranks 1, 2, 10 get close to their expected shares 1/(r^theta * zeta(n)).
        for r in [1u64, 2, 10] {
            let want = z.share_of_rank(r);
            let got = counts[(r - 1) as usize] as f64 / draws as f64;
            assert!(
                (got - want).abs() < 0.15 * want,
                "rank {r}: share {got:.4}, expected {want:.4}"
            );
        }
        // Popularity falls with rank.
        assert!(counts[0] > counts[1] && counts[1] > counts[9] && counts[9] > counts[99]);
    }

    #[test]
    fn zipf_grows_incrementally_like_recomputing() {
        let mut grown = Zipfian::new(0, 99, 0.9);
        let mut rng = Rng::new(1);
        grown.next_of(&mut rng, 500);
        let fresh = Zipfian::new(0, 499, 0.9);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
    }

    #[test]
    fn scrambled_zipfian_stays_in_range_and_is_skewed() {
        let mut z = ScrambledZipfian::new(100, 1099);
        let mut rng = Rng::new(3);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..50_000 {
            let v = z.next(&mut rng);
            assert!((100..1100).contains(&v));
            *counts.entry(v).or_insert(0u32) += 1;
        }
        let max = counts.values().copied().max().unwrap_or(0);
        assert!(
            max > 50_000 / 1000 * 10,
            "hottest key well above uniform: {max}"
        );
    }

    #[test]
    fn fnv_is_nonnegative_and_spreads() {
        let hs: std::collections::HashSet<u64> = (0..1000).map(fnvhash64).collect();
        assert_eq!(hs.len(), 1000);
        assert!(hs.iter().all(|&h| (h as i64) >= 0 || h == 1 << 63));
    }
}

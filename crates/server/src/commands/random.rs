//! Randomness for the commands that pick random members (HRANDFIELD, SRANDMEMBER, SPOP,
//! ZRANDMEMBER): a small generator, distinct sampling, and the count argument's rules.

use crate::exec::command::CmdError;
use crate::exec::ctx::Ctx;

/// A small fast PRNG (xorshift64*), seeded per command from the server's random source.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(ctx: &Ctx<'_>) -> Rng {
        Rng(ctx.keyspace().random() | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`; 0 for `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// `count` distinct positions out of `0..size` (`count < size`), in random order.
pub(crate) fn sample_distinct(rng: &mut Rng, size: usize, count: usize) -> Vec<usize> {
    if count.saturating_mul(3) > size {
        // Partial Fisher-Yates over all positions.
        let mut all: Vec<usize> = (0..size).collect();
        for i in 0..count {
            let j = i + rng.below(size - i);
            all.swap(i, j);
        }
        all.truncate(count);
        all
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = rng.below(size);
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

/// A reply of repeated random picks (negative counts) stops here when the client's class
/// has no hard output limit: Redis would grow the output buffer without bound (its default
/// limit for normal clients is none); Strata closes the connection after this many bytes.
const RANDOM_REPLY_CAP: usize = 512 << 20;

/// Picks made one at a time into a reply that may grow past what the client may hold (a
/// negative count): `stop` says when to end, as Redis ends such a command once the client
/// is to be closed for its output limit.
pub(crate) struct Picks {
    start: usize,
    cap: usize,
    /// Whether the cap is the client's output limit, which closes it without a byte of the
    /// reply (as Redis, whose client then reads no header of a reply it would wait out).
    limited: bool,
}

impl Picks {
    /// Starts at the reply's present length; the cap is the client's hard output limit
    /// (its class's), or RANDOM_REPLY_CAP without one.
    pub fn new(ctx: &Ctx<'_>) -> Picks {
        let class = crate::net::output::class(ctx.client);
        let hard = ctx.server().config.get().client_output_buffer_limit.0[class].hard;
        let limit = usize::try_from(hard).unwrap_or(usize::MAX);
        let limited = limit != 0 && limit < RANDOM_REPLY_CAP;
        Picks {
            start: ctx.out.buf.len(),
            cap: if limited { limit } else { RANDOM_REPLY_CAP },
            limited,
        }
    }

    /// True once the reply passed the cap: the caller stops picking. Past the client's
    /// output limit, the limit's check closes the client before the reply goes out, as in
    /// Redis; past RANDOM_REPLY_CAP, the client is closed once the reply is out.
    pub fn stop(&self, ctx: &mut Ctx<'_>) -> bool {
        let over = ctx.out.buf.len() - self.start > self.cap;
        if over && !self.limited {
            ctx.client.close_after_reply = true;
        }
        over
    }
}

/// The range Redis's getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX) accepts, for
/// SRANDMEMBER, HRANDFIELD and ZRANDMEMBER counts.
pub(crate) fn random_count_arg(ctx: &Ctx<'_>, i: usize) -> Result<i64, CmdError> {
    let n = ctx.int_arg(i)?;
    if n == i64::MIN {
        return Err(CmdError::err(format_args!(
            "value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_samples() {
        let mut rng = Rng(12345);
        for (size, count) in [(10, 9), (1000, 5), (3, 1), (100, 40)] {
            let s = sample_distinct(&mut rng, size, count);
            let set: std::collections::HashSet<_> = s.iter().collect();
            assert_eq!(set.len(), count);
            assert!(s.iter().all(|&i| i < size));
        }
        assert_eq!(rng.below(0), 0);
    }
}

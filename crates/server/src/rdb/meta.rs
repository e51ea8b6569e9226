//! A key's attributes in an RDB file besides its value: its expiry, and its access time
//! (LRU idle seconds) or access frequency (LFU counter), which Redis writes only under a
//! `maxmemory-policy` of that kind.

use crate::config::{MaxmemoryPolicy, Values};
use strata_engine::clock;
use strata_engine::EntryRef;
use strata_rdb::KeyMeta;

/// Which access attribute is written, from `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    None,
    Lru,
    Lfu { decay_minutes: u64 },
}

impl Access {
    pub fn of(config: &Values) -> Access {
        let p: MaxmemoryPolicy = config.maxmemory_policy;
        if p.is_lfu() {
            Access::Lfu {
                decay_minutes: config.lfu_decay_time,
            }
        } else if p.is_lru_or_lfu() {
            Access::Lru
        } else {
            Access::None
        }
    }
}

/// Redis's LFU_INIT_VAL: the counter of a key not yet read.
pub const LFU_INIT_VAL: u64 = 5;

/// The LFU counter of an entry last touched at LRU stamp `lru`: the initial counter
/// decayed by one per `decay_minutes` since, as Redis's LFUDecrAndReturn does for a key
/// never counted up (the engine keeps the access time, not a counter).
pub fn lfu_freq(lru: u32, now_ms: u64, decay_minutes: u64) -> u64 {
    let idle_min = clock::idle_ms(lru, now_ms) / 60_000;
    let periods = idle_min.checked_div(decay_minutes).unwrap_or(0);
    LFU_INIT_VAL.saturating_sub(periods)
}

/// The attributes written before `e` at `now_ms`.
pub fn key_meta(e: EntryRef<'_>, access: Access, now_ms: u64) -> KeyMeta {
    let mut m = KeyMeta {
        expire_ms: e.expire_at().map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        ..KeyMeta::default()
    };
    match access {
        Access::None => {}
        Access::Lru => m.idle_secs = Some(clock::idle_ms(e.lru(), now_ms) / 1000),
        Access::Lfu { decay_minutes } => {
            m.lfu_freq = Some(lfu_freq(e.lru(), now_ms, decay_minutes).min(255) as u8)
        }
    }
    m
}

/// The LRU stamp a key loaded at `now_ms` with `idle_secs` of idle time gets.
pub fn idle_stamp(idle_secs: u64, now_ms: u64) -> u32 {
    clock::lru_clock(now_ms.saturating_sub(idle_secs.saturating_mul(1000)))
}

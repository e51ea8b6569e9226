//! A key's attributes in an RDB file besides its value: its expiry, and its access time
//! (LRU idle seconds) or access frequency (LFU counter), which Redis writes only under a
//! `maxmemory-policy` of that kind.

use crate::config::{MaxmemoryPolicy, Values};
use strata_engine::EntryRef;
use strata_engine::{access, clock};
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

/// The LFU counter of an entry whose access bits are `lru`, decayed to `now_ms` (OBJECT
/// FREQ's answer under an LFU policy).
pub fn lfu_freq(lru: u32, now_ms: u64, decay_minutes: u64) -> u8 {
    access::lfu_counter(lru, now_ms, decay_minutes.min(u64::from(u32::MAX)) as u32)
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
            m.lfu_freq = Some(lfu_freq(e.lru(), now_ms, decay_minutes))
        }
    }
    m
}

/// The access bits a key loaded (or restored) at `now_ms` with `meta` gets, as Redis's
/// objectSetLRUOrLFU: its LFU counter under an LFU policy (`lfu`), else its idle time;
/// None when `meta` has nothing that applies (the key counts as accessed now).
pub fn loaded_stamp(meta: &KeyMeta, lfu: bool, now_ms: u64) -> Option<u32> {
    if lfu {
        let freq = meta.lfu_freq?;
        Some(access::lfu_pair(access::lfu_minutes(now_ms), freq))
    } else {
        let idle = meta.idle_secs?;
        Some(clock::lru_clock(
            now_ms.saturating_sub(idle.saturating_mul(1000)),
        ))
    }
}

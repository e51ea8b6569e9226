//! Trimming a stream from its oldest entries (XTRIM, XADD's MAXLEN and MINID).

use super::id::StreamId;
use super::StreamValue;

/// What to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimStrategy {
    /// At most this many entries.
    MaxLen(u64),
    /// No entry with an ID below this.
    MinId(StreamId),
}

/// A trim request, as XTRIM and XADD parse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    pub strategy: TrimStrategy,
    /// `~`: remove whole nodes only.
    pub approx: bool,
    /// Most entries to remove (0: no limit). Only `~` trims have one (see `default_limit`);
    /// replayed commands have none.
    pub limit: u64,
}

impl Trim {
    /// LIMIT's default for a `~` trim: 100 nodes' worth of entries, within
    /// 10 000..=1 000 000 for unlimited or huge nodes (`node_max_entries` is
    /// stream-node-max-entries).
    pub fn default_limit(node_max_entries: u64) -> u64 {
        match node_max_entries.saturating_mul(100) {
            0 => 10_000,
            n => n.min(1_000_000),
        }
    }
}

impl StreamValue {
    /// Removes entries from the head as `t` asks (Redis's streamTrim): whole nodes while
    /// they can go, then, unless approximate, the entries of the next node that must go
    /// are marked deleted. Returns how many entries were removed. Trimming does not count
    /// as deletion for max-deleted-entry-id, as in Redis.
    pub fn trim(&mut self, t: &Trim) -> u64 {
        let mut removed: u64 = 0;
        while let Some(mut first) = self.nodes.first_entry() {
            if let TrimStrategy::MaxLen(max) = t.strategy {
                if self.meta.length <= max {
                    break;
                }
            }
            let node = first.get();
            let live = node.live;
            if t.limit != 0 && removed + live > t.limit {
                break;
            }
            let whole = match t.strategy {
                TrimStrategy::MaxLen(max) => self.meta.length - live >= max,
                TrimStrategy::MinId(min) => node.last < min,
            };
            if whole {
                first.remove();
                self.meta.length -= live;
                removed += live;
                continue;
            }
            if t.approx {
                break;
            }
            let master = *first.key();
            let node = first.get_mut();
            let mut marks = Vec::new();
            let mut length = self.meta.length;
            for raw in node.cursor(master) {
                let stop = match t.strategy {
                    TrimStrategy::MaxLen(max) => length <= max,
                    TrimStrategy::MinId(min) => raw.id >= min,
                };
                if stop {
                    break;
                }
                if !raw.deleted {
                    marks.push(raw.head_at);
                    length -= 1;
                }
            }
            for at in &marks {
                node.mark_deleted(*at);
            }
            // A node left with no live entry stays (as in Redis) until trimmed whole.
            removed += marks.len() as u64;
            self.meta.length = length;
            break;
        }
        if self.meta.length == 0 {
            self.meta.first_id = StreamId::MIN;
        } else if removed > 0 {
            self.meta.first_id = self.edge_id(true, true);
        }
        removed
    }
}

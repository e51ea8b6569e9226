//! ACL LOG: the latest refusals, newest first. A refusal like one of the last few (same
//! reason, context, object and user, within a minute) bumps that entry's count instead
//! of adding one.

use std::collections::VecDeque;

/// Why a client was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command's name, the key, the channel, or AUTH's name as sent.
    pub object: String,
    pub username: String,
    /// CLIENT INFO of the last client refused so.
    pub client_info: String,
    pub entry_id: u64,
    /// Unix milliseconds.
    pub created: u64,
    pub updated: u64,
}

/// Entries within this many milliseconds of each other may merge.
const GROUPING_MS: u64 = 60_000;
/// How many of the newest entries a new refusal is compared with.
const SCAN: usize = 10;

#[derive(Default)]
pub struct Log {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// One refusal to record.
pub struct Refusal {
    pub reason: Reason,
    pub context: Context,
    pub object: String,
    pub username: String,
    pub client_info: String,
}

impl Log {
    /// Records a refusal at `now_ms`, keeping at most `max` entries.
    pub fn add(&mut self, r: Refusal, now_ms: u64, max: usize) {
        let similar = self.entries.iter().take(SCAN).position(|e| {
            e.reason == r.reason
                && e.context == r.context
                && e.updated.abs_diff(now_ms) <= GROUPING_MS
                && e.object == r.object
                && e.username == r.username
        });
        if let Some(i) = similar {
            if let Some(mut e) = self.entries.remove(i) {
                e.count += 1;
                e.updated = now_ms;
                e.client_info = r.client_info;
                self.entries.push_front(e);
            }
            return;
        }
        self.entries.push_front(Entry {
            count: 1,
            reason: r.reason,
            context: r.context,
            object: r.object,
            username: r.username,
            client_info: r.client_info,
            entry_id: self.next_id,
            created: now_ms,
            updated: now_ms,
        });
        self.next_id += 1;
        self.entries.truncate(max);
    }

    /// The newest `n` entries.
    pub fn newest(&self, n: usize) -> Vec<Entry> {
        self.entries.iter().take(n).cloned().collect()
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(object: &str) -> Refusal {
        Refusal {
            reason: Reason::Command,
            context: Context::Toplevel,
            object: object.into(),
            username: "u".into(),
            client_info: "id=1".into(),
        }
    }

    #[test]
    fn similar_refusals_merge_and_the_log_is_bounded() {
        let mut log = Log::default();
        log.add(refusal("get"), 1_000, 3);
        log.add(refusal("get"), 2_000, 3);
        assert_eq!(log.len(), 1);
        let e = &log.newest(1)[0];
        assert_eq!((e.count, e.created, e.updated), (2, 1_000, 2_000));
        // Over a minute later it is a new entry.
        log.add(refusal("get"), 2_000 + GROUPING_MS + 1, 3);
        assert_eq!(log.len(), 2);
        for o in ["a", "b", "c"] {
            log.add(refusal(o), 200_000, 3);
        }
        let objects: Vec<String> = log.newest(10).into_iter().map(|e| e.object).collect();
        assert_eq!(objects, ["c", "b", "a"]);
        let ids: Vec<u64> = log.newest(10).into_iter().map(|e| e.entry_id).collect();
        assert_eq!(ids, [4, 3, 2]);
    }
}

//! Walking a stream's entries in ID order, forwards or backwards, between two IDs.

use super::id::StreamId;
use super::node::{Cursor, Fields, Node, Raw};
use std::collections::btree_map;
use std::collections::BTreeMap;

/// One entry of a stream, borrowed from it.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    node: &'a Node,
    raw: Raw,
}

impl<'a> Entry<'a> {
    pub(super) fn new(node: &'a Node, raw: Raw) -> Entry<'a> {
        Entry { node, raw }
    }

    pub fn id(&self) -> StreamId {
        self.raw.id
    }

    /// How many field-value pairs it has.
    pub fn len(&self) -> usize {
        self.raw.pairs
    }

    pub fn is_empty(&self) -> bool {
        self.raw.pairs == 0
    }

    /// Its field-value pairs, in the order they were added.
    pub fn fields(&self) -> Fields<'a> {
        self.node.fields(&self.raw)
    }

    /// Deleted entries are seen only by walks that ask for them (`Range::with_deleted`).
    pub fn is_deleted(&self) -> bool {
        self.raw.deleted
    }
}

impl std::fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ", self.id())?;
        let mut l = f.debug_list();
        for (k, v) in self.fields() {
            l.entry(&(String::from_utf8_lossy(k), String::from_utf8_lossy(v)));
        }
        l.finish()
    }
}

/// The entries with IDs in `lo..=hi`, in ascending (or, `rev`, descending) order.
pub struct Range<'a> {
    nodes: btree_map::Range<'a, StreamId, Node>,
    /// The node being walked forwards.
    cur: Option<(&'a Node, Cursor<'a>)>,
    /// Backwards: the current node's entries, decoded forwards, taken from the end.
    back: Vec<Raw>,
    back_node: Option<&'a Node>,
    lo: StreamId,
    hi: StreamId,
    rev: bool,
    deleted: bool,
    done: bool,
}

impl<'a> Range<'a> {
    pub(super) fn new(
        nodes: &'a BTreeMap<StreamId, Node>,
        lo: StreamId,
        hi: StreamId,
        rev: bool,
    ) -> Range<'a> {
        let empty = lo > hi;
        let walk = if rev {
            nodes.range(..=hi)
        } else {
            // Start at the node that may hold `lo`: the last one keyed at or below it.
            let from = nodes
                .range(..=lo)
                .next_back()
                .map_or(StreamId::MIN, |(k, _)| *k);
            nodes.range(from..)
        };
        Range {
            nodes: walk,
            cur: None,
            back: Vec::new(),
            back_node: None,
            lo,
            hi,
            rev,
            deleted: false,
            done: empty,
        }
    }

    /// Also yields deleted entries (snapshots, and the edge IDs Redis reads with them).
    pub(super) fn with_deleted(mut self) -> Self {
        self.deleted = true;
        self
    }

    fn next_forward(&mut self) -> Option<Entry<'a>> {
        loop {
            if let Some((node, cursor)) = &mut self.cur {
                for raw in cursor.by_ref() {
                    if raw.id < self.lo || (raw.deleted && !self.deleted) {
                        continue;
                    }
                    if raw.id > self.hi {
                        self.done = true;
                        return None;
                    }
                    return Some(Entry { node, raw });
                }
            }
            let (master, node) = self.nodes.next()?;
            if node.last < self.lo || (node.live == 0 && !self.deleted) {
                self.cur = None;
                continue;
            }
            self.cur = Some((node, node.cursor(*master)));
        }
    }

    fn next_backward(&mut self) -> Option<Entry<'a>> {
        loop {
            if let Some(node) = self.back_node {
                while let Some(raw) = self.back.pop() {
                    if raw.id > self.hi || (raw.deleted && !self.deleted) {
                        continue;
                    }
                    if raw.id < self.lo {
                        self.done = true;
                        return None;
                    }
                    return Some(Entry { node, raw });
                }
            }
            let (master, node) = self.nodes.next_back()?;
            if node.last < self.lo {
                self.done = true;
                return None;
            }
            self.back.clear();
            if node.live == 0 && !self.deleted {
                continue;
            }
            self.back.extend(node.cursor(*master));
            self.back_node = Some(node);
        }
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        if self.done {
            return None;
        }
        let e = if self.rev {
            self.next_backward()
        } else {
            self.next_forward()
        };
        if e.is_none() {
            self.done = true;
        }
        e
    }
}

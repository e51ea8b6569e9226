//! A stream's whole state, node by node, for snapshots: read with `StreamValue::nodes`
//! and the group views, rebuilt with `StreamBuilder`, which checks everything it is given
//! (a damaged file must give an error, never a panic or an inconsistent stream).

use super::group::Nack;
use super::id::StreamId;
use super::node::Node;
use super::range::Entry;
use super::StreamValue;
use crate::types::Encodings;

/// One node's entries, deleted ones included.
#[derive(Clone, Copy)]
pub struct NodeView<'a> {
    master: StreamId,
    node: &'a Node,
}

impl<'a> NodeView<'a> {
    /// Entries in the node, deleted ones included.
    pub fn len(&self) -> u64 {
        self.node.live + self.node.deleted
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn entries(&self) -> impl Iterator<Item = Entry<'a>> + 'a {
        let node = self.node;
        node.cursor(self.master)
            .map(move |raw| Entry::new(node, raw))
    }
}

impl StreamValue {
    /// The nodes in ID order (snapshots keep where nodes split, which replies depend on).
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeView<'_>> {
        self.nodes.iter().map(|(master, node)| NodeView {
            master: *master,
            node,
        })
    }
}

/// Rebuilds a stream: entries in ID order, node by node, then the counters and groups.
#[derive(Default)]
pub struct StreamBuilder {
    s: StreamValue,
}

type Check = Result<(), &'static str>;

impl StreamBuilder {
    pub fn new() -> StreamBuilder {
        StreamBuilder::default()
    }

    /// Appends an entry, in a new node when `new_node` (the first entry must start one).
    /// `flat` is `[f1, v1, f2, v2...]`.
    pub fn push<A: AsRef<[u8]>>(
        &mut self,
        new_node: bool,
        id: StreamId,
        deleted: bool,
        flat: &[A],
    ) -> Check {
        if !flat.len().is_multiple_of(2) {
            return Err("stream entry with a field but no value");
        }
        let s = &mut self.s;
        match s.nodes.last_entry() {
            Some(tail) if tail.get().last >= id => return Err("stream entry IDs out of order"),
            Some(mut tail) if !new_node => {
                let master = *tail.key();
                tail.get_mut().push(master, id, flat, deleted);
            }
            None if !new_node => return Err("stream entry outside a node"),
            tail => {
                if let Some(mut tail) = tail {
                    tail.get_mut().seal();
                }
                s.nodes.insert(id, Node::new(id, flat, deleted));
            }
        }
        if !deleted {
            s.meta.length += 1;
        }
        Ok(())
    }

    /// Appends a live entry where XADD would put it under `enc`'s stream-node limits (a
    /// dump keeps the entries but not where its nodes split). `flat` is `[f1, v1, f2,
    /// v2...]`; IDs must ascend.
    pub fn append<A: AsRef<[u8]>>(&mut self, id: StreamId, flat: &[A], enc: &Encodings) -> Check {
        if !flat.len().is_multiple_of(2) {
            return Err("stream entry with a field but no value");
        }
        let s = &mut self.s;
        if s.nodes.last_key_value().is_some_and(|(_, n)| n.last >= id) {
            return Err("stream entry IDs out of order");
        }
        let elems: u64 = flat.iter().map(|e| e.as_ref().len() as u64).sum();
        if elems > super::NODE_MAX_BYTES {
            return Err("stream entry over 1 GiB");
        }
        s.append_entry(id, flat, elems, enc);
        Ok(())
    }

    /// The counters: the last ID (at least the last entry's, checked by `finish`), the
    /// recorded first ID, the largest deleted ID, and how many entries were ever added.
    pub fn meta(
        &mut self,
        last_id: StreamId,
        first_id: StreamId,
        max_deleted: StreamId,
        entries_added: u64,
    ) {
        let m = &mut self.s.meta;
        m.last_id = last_id;
        m.first_id = first_id;
        m.max_deleted = max_deleted;
        m.entries_added = entries_added;
    }

    pub fn group(&mut self, name: &[u8], last_id: StreamId, entries_read: Option<i64>) -> Check {
        self.s
            .create_group(name, last_id, entries_read)
            .map_err(|_| "duplicate stream consumer group")
    }

    pub fn consumer(&mut self, group: &[u8], name: &[u8], seen_time: i64) -> Check {
        let g = self
            .s
            .group_mut(group)
            .ok_or("consumer of an unknown group")?;
        if g.slot(name).is_some() {
            return Err("duplicate stream consumer");
        }
        g.add_consumer(name, seen_time);
        Ok(())
    }

    /// A pending entry of `group`, owned by `consumer` (added before).
    pub fn pending(
        &mut self,
        group: &[u8],
        id: StreamId,
        consumer: &[u8],
        delivery_time: i64,
        delivery_count: u64,
    ) -> Check {
        let g = self
            .s
            .group_mut(group)
            .ok_or("pending entry of an unknown group")?;
        let slot = g
            .slot(consumer)
            .ok_or("pending entry of an unknown consumer")?;
        if g.pel.contains_key(&id) {
            return Err("duplicate pending entry");
        }
        g.pel.insert(
            id,
            Nack {
                delivery_time,
                delivery_count,
                consumer: slot,
            },
        );
        if let Some(c) = g.consumer_mut(slot) {
            c.pel.insert(id);
        }
        Ok(())
    }

    /// The stream, unless an entry is above its last ID (the next XADD could not work).
    pub fn finish(self) -> Result<StreamValue, &'static str> {
        let s = self.s;
        if s.nodes
            .last_key_value()
            .is_some_and(|(_, n)| n.last > s.meta.last_id)
        {
            return Err("stream entry above the stream's last ID");
        }
        Ok(s)
    }
}

//! A list's node table: its one node inline (most lists have one), a deque of nodes beyond,
//! and the iterator that walks entries across the nodes from either end.

use super::node::{decode, prev_start, Elem, Node};
use std::collections::VecDeque;

/// The nodes of a list. Most lists fit in one node, so that case needs no node table.
#[derive(Clone)]
pub(super) enum Nodes {
    /// Zero nodes (an empty `Node`) or one.
    One(Node),
    Many(VecDeque<Node>),
}

impl Nodes {
    pub(super) fn len(&self) -> usize {
        match self {
            Nodes::One(n) => usize::from(n.count() > 0),
            Nodes::Many(v) => v.len(),
        }
    }

    pub(super) fn front(&self) -> Option<&Node> {
        (self.len() > 0).then(|| &self[0])
    }

    pub(super) fn back(&self) -> Option<&Node> {
        self.len().checked_sub(1).map(|k| &self[k])
    }

    pub(super) fn front_mut(&mut self) -> Option<&mut Node> {
        (self.len() > 0).then(|| &mut self[0])
    }

    pub(super) fn back_mut(&mut self) -> Option<&mut Node> {
        self.len().checked_sub(1).map(move |k| &mut self[k])
    }

    /// Inserts a (non-empty) node so that it becomes node `k`.
    pub(super) fn insert(&mut self, k: usize, node: Node) {
        match self {
            Nodes::One(n) if n.count() == 0 => *n = node,
            Nodes::One(n) => {
                let old = std::mem::take(n);
                let pair = if k == 0 { [node, old] } else { [old, node] };
                *self = Nodes::Many(VecDeque::from(pair));
            }
            Nodes::Many(v) => v.insert(k, node),
        }
    }

    pub(super) fn push_front(&mut self, node: Node) {
        self.insert(0, node);
    }

    pub(super) fn push_back(&mut self, node: Node) {
        self.insert(self.len(), node);
    }

    /// Removes nodes `from..to`.
    pub(super) fn drain(&mut self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        match self {
            Nodes::One(n) => *n = Node::default(),
            Nodes::Many(v) => {
                v.drain(from..to);
                if v.len() <= 1 {
                    *self = Nodes::One(v.pop_front().unwrap_or_default());
                }
            }
        }
    }

    pub(super) fn remove(&mut self, k: usize) {
        self.drain(k, k + 1);
    }

    pub(super) fn pop_front(&mut self) {
        self.remove(0);
    }

    pub(super) fn pop_back(&mut self) {
        if let Some(k) = self.len().checked_sub(1) {
            self.remove(k);
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Node> {
        (0..self.len()).map(move |k| &self[k])
    }

    /// Bytes of the node table (none for one node).
    pub(super) fn table_bytes(&self) -> usize {
        match self {
            Nodes::One(_) => 0,
            Nodes::Many(v) => v.capacity() * std::mem::size_of::<Node>(),
        }
    }
}

impl std::ops::Index<usize> for Nodes {
    type Output = Node;
    fn index(&self, k: usize) -> &Node {
        match self {
            Nodes::One(n) => n,
            Nodes::Many(v) => &v[k],
        }
    }
}

impl std::ops::IndexMut<usize> for Nodes {
    fn index_mut(&mut self, k: usize) -> &mut Node {
        match self {
            Nodes::One(n) => n,
            Nodes::Many(v) => &mut v[k],
        }
    }
}

/// An iterator over a range of a list, from either end.
pub struct Iter<'a> {
    pub(super) nodes: &'a Nodes,
    pub(super) fnode: usize,
    pub(super) fpos: usize,
    /// The back cursor: entries before `bpos` in node `bnode` remain.
    pub(super) bnode: usize,
    pub(super) bpos: usize,
    pub(super) left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Elem<'a>;

    fn next(&mut self) -> Option<Elem<'a>> {
        if self.left == 0 {
            return None;
        }
        let mut n = &self.nodes[self.fnode];
        while self.fpos >= n.end() {
            self.fnode += 1;
            n = &self.nodes[self.fnode];
            self.fpos = n.start();
        }
        let (e, t) = decode(n.buf(), self.fpos);
        self.fpos += t;
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let mut n = &self.nodes[self.bnode];
        while self.bpos <= n.start() {
            self.bnode -= 1;
            n = &self.nodes[self.bnode];
            self.bpos = n.end();
        }
        self.bpos = prev_start(n.buf(), self.bpos);
        self.left -= 1;
        Some(decode(n.buf(), self.bpos).0)
    }
}

impl ExactSizeIterator for Iter<'_> {}

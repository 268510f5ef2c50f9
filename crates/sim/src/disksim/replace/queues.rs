//! The lists the eviction policies of libCacheSim keep (SIEVE's queue, S3-FIFO's small, main
//! and ghost FIFOs, ARC's four LRU lists, ...): several doubly linked lists of blocks in one
//! arena, each node tagged with the list that holds it and two small fields a policy may use
//! (a frequency and a flag), and one index from block to node.
//!
//! The lists are drawn as libCacheSim draws them: a block enters at the *head*
//! (`prepend_obj_to_head`), the *tail* is the oldest end, and `prev` walks from the tail
//! towards the head (SIEVE's hand).
//!
//! Hand-written rather than a crate: the policies move nodes between lists and keep hands
//! (cursors) into them across calls, which the linked-list crates either forbid (std's
//! `LinkedList` has no stable cursor) or give only with a hash lookup per move; an arena of
//! `u32` links keeps every move O(1) and a node in one cache line.

use rustc_hash::FxHashMap;

use crate::disksim::workload::DiskBlock;

/// A node's index in the arena.
pub type Node = u32;
/// No node: the end of a list.
pub const NIL: Node = u32::MAX;

/// One block in one list.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The block.
    pub block: DiskBlock,
    /// Towards the head (newer).
    prev_newer: Node,
    /// Towards the tail (older).
    next_older: Node,
    /// The list holding it.
    pub list: u8,
    /// A flag of the policy's (SIEVE's visited bit, ...).
    pub flag: bool,
    /// A count of the policy's (S3-FIFO's frequency, ...).
    pub freq: u32,
}

/// Several lists over one arena, and the node of each block in any of them.
#[derive(Debug)]
pub struct Queues {
    entries: Vec<Entry>,
    free: Vec<Node>,
    ends: Vec<(Node, Node)>,
    lens: Vec<usize>,
    index: FxHashMap<DiskBlock, Node>,
}

impl Queues {
    /// `lists` empty lists.
    pub fn new(lists: usize) -> Self {
        Queues {
            entries: Vec::new(),
            free: Vec::new(),
            ends: vec![(NIL, NIL); lists],
            lens: vec![0; lists],
            index: FxHashMap::default(),
        }
    }

    /// The node of `block`, if a list holds it.
    pub fn find(&self, block: DiskBlock) -> Option<Node> {
        self.index.get(&block).copied()
    }

    /// The node `node`.
    pub fn get(&self, node: Node) -> &Entry {
        &self.entries[node as usize]
    }

    /// The node `node`, to change its flag or count.
    pub fn get_mut(&mut self, node: Node) -> &mut Entry {
        &mut self.entries[node as usize]
    }

    /// The blocks in list `list`.
    pub fn len(&self, list: u8) -> usize {
        self.lens[list as usize]
    }

    /// The newest node of `list`, or [`NIL`].
    pub fn head(&self, list: u8) -> Node {
        self.ends[list as usize].0
    }

    /// The oldest node of `list`, or [`NIL`].
    pub fn tail(&self, list: u8) -> Node {
        self.ends[list as usize].1
    }

    /// The next newer node than `node` in its list (towards the head), or [`NIL`].
    pub fn newer(&self, node: Node) -> Node {
        self.entries[node as usize].prev_newer
    }

    /// Adds `block` at the head of `list` with a clear flag and count 0.
    pub fn push(&mut self, list: u8, block: DiskBlock) -> Node {
        let entry = Entry {
            block,
            prev_newer: NIL,
            next_older: NIL,
            list,
            flag: false,
            freq: 0,
        };
        let node = match self.free.pop() {
            Some(node) => {
                self.entries[node as usize] = entry;
                node
            }
            None => {
                self.entries.push(entry);
                (self.entries.len() - 1) as Node
            }
        };
        self.index.insert(block, node);
        self.link_head(list, node);
        node
    }

    /// Moves `node` to the head of `list` (its own or another), keeping flag and count.
    pub fn move_to_head(&mut self, list: u8, node: Node) {
        self.unlink(node);
        self.link_head(list, node);
    }

    /// Moves `node` to the tail of `list`, keeping flag and count.
    pub fn move_to_tail(&mut self, list: u8, node: Node) {
        self.unlink(node);
        let (head, tail) = self.ends[list as usize];
        let entry = &mut self.entries[node as usize];
        entry.list = list;
        entry.prev_newer = tail;
        entry.next_older = NIL;
        match tail {
            NIL => self.ends[list as usize] = (node, node),
            t => {
                self.entries[t as usize].next_older = node;
                self.ends[list as usize] = (head, node);
            }
        }
        self.lens[list as usize] += 1;
    }

    /// Takes `node` out of its list and the index; returns its block.
    pub fn remove(&mut self, node: Node) -> DiskBlock {
        self.unlink(node);
        let block = self.entries[node as usize].block;
        self.index.remove(&block);
        self.free.push(node);
        block
    }

    /// Removes and returns the oldest block of `list`.
    pub fn pop_tail(&mut self, list: u8) -> Option<DiskBlock> {
        match self.tail(list) {
            NIL => None,
            node => Some(self.remove(node)),
        }
    }

    /// Removes `block` unless it is absent or only remembered in the history list `ghost`;
    /// true if it was removed (a replacement's `remove`).
    pub fn remove_held(&mut self, block: DiskBlock, ghost: u8) -> bool {
        match self.find(block) {
            Some(node) if self.get(node).list != ghost => {
                self.remove(node);
                true
            }
            _ => false,
        }
    }

    /// The blocks of `lists`, each from head to tail, in the order the lists are named (a
    /// replacement's `order`, most protected list first).
    pub fn blocks_of(&self, lists: &[u8]) -> Vec<DiskBlock> {
        lists.iter().flat_map(|&list| self.blocks(list)).collect()
    }

    /// The blocks of `list` from head to tail.
    pub fn blocks(&self, list: u8) -> Vec<DiskBlock> {
        let mut out = Vec::with_capacity(self.len(list));
        let mut node = self.head(list);
        while node != NIL {
            out.push(self.entries[node as usize].block);
            node = self.entries[node as usize].next_older;
        }
        out
    }

    fn link_head(&mut self, list: u8, node: Node) {
        let (head, tail) = self.ends[list as usize];
        let entry = &mut self.entries[node as usize];
        entry.list = list;
        entry.prev_newer = NIL;
        entry.next_older = head;
        match head {
            NIL => self.ends[list as usize] = (node, node),
            h => {
                self.entries[h as usize].prev_newer = node;
                self.ends[list as usize] = (node, tail);
            }
        }
        self.lens[list as usize] += 1;
    }

    fn unlink(&mut self, node: Node) {
        let Entry {
            prev_newer,
            next_older,
            list,
            ..
        } = self.entries[node as usize];
        let ends = &mut self.ends[list as usize];
        match prev_newer {
            NIL => ends.0 = next_older,
            p => self.entries[p as usize].next_older = next_older,
        }
        match next_older {
            NIL => ends.1 = prev_newer,
            n => self.entries[n as usize].prev_newer = prev_newer,
        }
        self.lens[list as usize] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_move_between_lists_and_leave_from_the_tail() {
        let mut q = Queues::new(2);
        for block in 1..=3 {
            q.push(0, block);
        }
        assert_eq!(q.blocks(0), vec![3, 2, 1]);
        let two = q.find(2).unwrap();
        q.move_to_head(1, two);
        assert_eq!((q.blocks(0), q.blocks(1)), (vec![3, 1], vec![2]));
        let three = q.find(3).unwrap();
        q.move_to_tail(1, three);
        assert_eq!(q.blocks(1), vec![2, 3]);
        assert_eq!(q.newer(three), two);
        assert_eq!(q.pop_tail(1), Some(3));
        assert_eq!(q.pop_tail(0), Some(1));
        assert_eq!((q.len(0), q.len(1), q.find(1)), (0, 1, None));
        q.push(0, 9);
        assert_eq!((q.blocks(0), q.find(9).is_some()), (vec![9], true));
    }
}

//! HTTP/2 connections shared by a worker's slots (`--connections`): slot `s` sends on
//! connection `s % n`, as one more stream. The first slot to find a connection missing opens
//! it for all of them; the others wait for it rather than each opening their own, so the
//! number of connections stays what was asked. A connection that fails is dropped from the
//! pool once (by generation: a slot holding an older one cannot drop a newer one).

use crate::proto::session::Conn;
use std::cell::{Cell, RefCell};
use std::time::Duration;

enum Entry {
    Empty,
    /// A slot is opening it.
    Opening,
    Ready(u64, Conn),
}

/// One worker's shared connections.
pub struct Pool {
    entries: RefCell<Vec<Entry>>,
    generation: Cell<u64>,
}

/// What a slot gets from the pool.
pub enum Taken {
    /// A connection to send on, and its generation.
    Shared(Conn, u64),
    /// Open it (and give it back with [`Pool::opened`] or [`Pool::failed`]).
    Open,
}

impl Pool {
    pub fn new(n: usize) -> Pool {
        Pool {
            entries: RefCell::new((0..n.max(1)).map(|_| Entry::Empty).collect()),
            generation: Cell::new(0),
        }
    }

    /// The entry slot `slot` uses.
    pub fn index(&self, slot: usize) -> usize {
        slot % self.entries.borrow().len()
    }

    /// The connection of entry `i`, waiting while another slot opens it.
    pub async fn take(&self, i: usize) -> Taken {
        loop {
            {
                let mut entries = self.entries.borrow_mut();
                match &entries[i] {
                    Entry::Ready(g, c) => {
                        if let Some(shared) = c.share() {
                            return Taken::Shared(shared, *g);
                        }
                    }
                    Entry::Empty => {
                        entries[i] = Entry::Opening;
                        return Taken::Open;
                    }
                    Entry::Opening => {}
                }
            }
            // Opening takes a connect and a handshake: check back soon.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Entry `i` is open: `conn` is shared from now on. Returns its generation.
    pub fn opened(&self, i: usize, conn: &Conn) -> Option<u64> {
        let shared = conn.share()?;
        let g = self.generation.get() + 1;
        self.generation.set(g);
        self.entries.borrow_mut()[i] = Entry::Ready(g, shared);
        Some(g)
    }

    /// Opening entry `i` failed: the next slot tries.
    pub fn failed(&self, i: usize) {
        let mut entries = self.entries.borrow_mut();
        if matches!(entries[i], Entry::Opening) {
            entries[i] = Entry::Empty;
        }
    }

    /// The connection of generation `g` at entry `i` failed: drop it, unless a newer one
    /// already took its place.
    pub fn drop_conn(&self, i: usize, g: u64) {
        let mut entries = self.entries.borrow_mut();
        if matches!(entries[i], Entry::Ready(current, _) if current == g) {
            entries[i] = Entry::Empty;
        }
    }
}

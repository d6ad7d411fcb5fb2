//! A scope's groups: what `pg.erl` keeps in its ETS table, `{Group, All, Local}`.
//!
//! A group is keyed by its term's encoding ([`Key`]): two equal terms encode alike
//! (otter's encoder writes one form per term), so an atom from Erlang and the same
//! atom from Rust are one group. A group exists while it has a member: the last
//! leave removes it (`pg` has no empty groups). Members are lists, not sets: a
//! process joined twice is listed twice and leaves once per join.

use std::collections::HashMap;

use crate::dist::etf::Term;
use crate::dist::pg::member::Member;

/// A group's identity: its term, encoded (no version byte).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Key(Vec<u8>);

impl Key {
    /// The key of the group `t`.
    pub(crate) fn of(t: &Term) -> Key {
        let mut out = Vec::with_capacity(16);
        crate::dist::etf::encode_term_body(t, &mut out);
        Key(out)
    }
}

/// One group: its term, every member, and the members of this node.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) name: Term,
    pub(crate) all: Vec<Member>,
    pub(crate) local: Vec<Member>,
}

/// Every group of a scope that has a member.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    map: HashMap<Key, Group>,
}

impl Groups {
    /// The group `key`, if it has members.
    pub(crate) fn get(&self, key: &Key) -> Option<&Group> {
        self.map.get(key)
    }

    /// Every group with a member.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key, &Group)> {
        self.map.iter()
    }

    /// Adds `members` (local ones if `local`) to the group `key` named `name`.
    pub(crate) fn join(&mut self, key: &Key, name: &Term, members: &[Member], local: bool) {
        if members.is_empty() {
            // No empty groups.
            return;
        }
        let g = self.map.entry(key.clone()).or_insert_with(|| Group {
            name: name.clone(),
            all: Vec::new(),
            local: Vec::new(),
        });
        g.all.extend_from_slice(members);
        if local {
            g.local.extend_from_slice(members);
        }
    }

    /// Removes one listing of each of `members` from the group `key`; the ones that
    /// were there. The group goes when its last member does.
    pub(crate) fn leave(&mut self, key: &Key, members: &[Member], local: bool) -> Vec<Member> {
        let Some(g) = self.map.get_mut(key) else {
            return Vec::new();
        };
        let mut gone = Vec::with_capacity(members.len());
        for m in members {
            if let Some(i) = g.all.iter().rposition(|x| x == m) {
                g.all.swap_remove(i);
                gone.push(*m);
                if local && let Some(i) = g.local.iter().rposition(|x| x == m) {
                    g.local.swap_remove(i);
                }
            }
        }
        if g.all.is_empty() {
            self.map.remove(key);
        }
        gone
    }

    /// Forgets every group.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }
}

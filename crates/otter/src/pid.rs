//! Process identifiers.
//!
//! A pid is an index into the process table and the generation of that slot when the
//! process was spawned (see `process/table.rs`). It owns nothing, so it is `Copy`, and
//! it stays safe to use after its process is gone: every use checks the generation.
//! A pid of another node has [`REMOTE_BIT`] set in its index (`remote.rs`); how it
//! writes itself is the distribution's, set when it starts ([`set_remote_fmt`]), so
//! this module stays a leaf.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::OnceLock;

/// The index bit that marks a remote pid. The process table's indices stay below it
/// (`process/table.rs`).
pub(crate) const REMOTE_BIT: u32 = 1 << 31;

/// How a remote pid writes itself (`Debug`): the distribution's.
type RemoteFmt = fn(RawPid, &mut fmt::Formatter<'_>) -> fmt::Result;

static REMOTE_FMT: OnceLock<RemoteFmt> = OnceLock::new();

/// Sets how remote pids write themselves (the first call wins; `remote.rs`).
pub(crate) fn set_remote_fmt(f: RemoteFmt) {
    let _ = REMOTE_FMT.set(f);
}

/// A pid without its message type: what links, monitors and wakers hold.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RawPid {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl RawPid {
    /// The sender of an exit signal sent from outside any process
    /// ([`ProcessId::OUTSIDE`]). Its index is past the end of the process table and has
    /// the remote bit clear, so it never resolves, on this node or another.
    pub(crate) const OUTSIDE: RawPid = RawPid {
        index: u32::MAX >> 1,
        generation: 0,
    };

    /// Whether this names a process of another node (`remote.rs`).
    #[inline]
    pub(crate) fn is_remote(self) -> bool {
        self.index & REMOTE_BIT != 0
    }

    /// Packs the pid into one word (for a `Waker`'s data pointer).
    pub(crate) fn to_bits(self) -> u64 {
        (u64::from(self.index) << 32) | u64::from(self.generation)
    }

    /// Packs the pid into one word in the order of its fields (index low), so that the
    /// packing of a pid read from memory is one load: for a word stored on a hot path
    /// (introspection's polled pid). Inverse: [`RawPid::from_word`].
    #[inline(always)]
    pub(crate) fn to_word(self) -> u64 {
        u64::from(self.index) | (u64::from(self.generation) << 32)
    }

    /// Inverse of [`RawPid::to_word`].
    pub(crate) fn from_word(word: u64) -> RawPid {
        RawPid {
            index: word as u32,
            generation: (word >> 32) as u32,
        }
    }

    /// Inverse of [`RawPid::to_bits`].
    pub(crate) fn from_bits(bits: u64) -> RawPid {
        RawPid {
            index: (bits >> 32) as u32,
            generation: bits as u32,
        }
    }
}

impl fmt::Debug for RawPid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == RawPid::OUTSIDE {
            return f.write_str("<outside>");
        }
        if self.is_remote()
            && let Some(write) = REMOTE_FMT.get()
        {
            return write(*self, f);
        }
        write!(f, "<0.{}.{}>", self.index, self.generation)
    }
}

impl fmt::Display for RawPid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The address of a process whose mailbox takes messages of type `M`.
///
/// Cheap to copy, `Send + Sync` whatever `M` is, comparable and hashable, and printed
/// as Erlang prints pids: `<0.Index.Generation>` (the `0` is the local node). Sending to
/// the pid of a process that has exited is not an error, as in Erlang: the message is
/// dropped. [`Pid::try_send`] tells the two cases apart.
///
/// ```
/// let rt = otter::Runtime::new();
/// let pid = rt.handle().spawn(|mut cx: otter::Context<u32>| async move {
///     let n = cx.recv().await;
///     assert_eq!(n, 7);
/// });
/// assert!(pid.to_string().starts_with("<0."));
/// pid.send(7);
/// ```
pub struct Pid<M> {
    pub(crate) raw: RawPid,
    _type: PhantomData<fn(M)>,
}

impl<M> Pid<M> {
    /// Only the process cell constructs typed pids: a `Pid<M>` always names a process
    /// whose mailbox holds `M`, which `process/cell.rs` relies on. (Sending and
    /// `is_alive` are in `process/send.rs`: this module depends on nothing else.)
    pub(crate) fn from_raw(raw: RawPid) -> Pid<M> {
        Pid {
            raw,
            _type: PhantomData,
        }
    }
}

impl<M> Pid<M> {
    /// The untyped identity of this process, as [`Down`](crate::Down) reports it.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let same = rt.block_on(|cx: otter::Context<()>| async move {
    ///     cx.pid().id() == cx.pid().id()
    /// });
    /// assert!(same.unwrap());
    /// ```
    pub fn id(&self) -> ProcessId {
        ProcessId(self.raw)
    }
}

/// A process's identity without its message type: what a [`Down`](crate::Down) names.
/// Compare it with [`Pid::id`]; it prints like a pid.
///
/// ```
/// let rt = otter::Runtime::new();
/// let s = rt.block_on(|cx: otter::Context<()>| async move { cx.pid().id().to_string() });
/// assert!(s.unwrap().starts_with("<0."));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessId(pub(crate) RawPid);

impl ProcessId {
    /// The `from` of an exit signal sent from outside any process
    /// ([`Handle::exit`](crate::Handle::exit)): it names no process, on this node or
    /// another, so it is never alive, a monitor of it gets `Noproc` at once, and a link
    /// to it fails as a link to an exited process does. It prints as `<outside>`.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// assert!(!otter::ProcessId::OUTSIDE.is_alive());
    /// assert_eq!(otter::ProcessId::OUTSIDE.to_string(), "<outside>");
    /// ```
    pub const OUTSIDE: ProcessId = ProcessId(RawPid::OUTSIDE);
}

impl<M> From<Pid<M>> for ProcessId {
    fn from(pid: Pid<M>) -> ProcessId {
        pid.id()
    }
}

impl fmt::Debug for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<M> Clone for Pid<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for Pid<M> {}

impl<M> PartialEq for Pid<M> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<M> Eq for Pid<M> {}

impl<M> Hash for Pid<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.raw.hash(state)
    }
}

impl<M> PartialOrd for Pid<M> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<M> Ord for Pid<M> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.raw.cmp(&other.raw)
    }
}

impl<M> fmt::Debug for Pid<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

impl<M> fmt::Display for Pid<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn _assert_send_sync_copy<T: Send + Sync + Copy + Eq + Hash + Ord>() {}

    #[test]
    fn pid_is_send_sync_for_any_message() {
        _assert_send_sync_copy::<Pid<std::rc::Rc<u8>>>();
    }

    #[test]
    fn bits_round_trip() {
        let p = RawPid {
            index: 42,
            generation: 7,
        };
        assert_eq!(RawPid::from_bits(p.to_bits()), p);
        assert_eq!(p.to_string(), "<0.42.7>");
    }
}

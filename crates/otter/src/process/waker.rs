//! A process's waker is its pid: the pid's bits in the data pointer, a static vtable,
//! no allocation and no reference count. Waking looks the pid up in the table and
//! schedules the process if it is still alive; a waker that outlives its process finds
//! a retired slot and does nothing. Cloning and dropping cost nothing.
#![allow(unsafe_code)]

use std::ptr;
use std::task::{RawWaker, RawWakerVTable, Waker};

use crate::pid::RawPid;
use crate::process::cell::ProcessRef;

/// Whether `waker` is the waker of process `pid` (a call from the server to itself).
pub(crate) fn is_waker_of(waker: &Waker, pid: RawPid) -> bool {
    waker.will_wake(&self::waker(pid))
}

/// The process `waker` wakes, if it is a process's waker ([`waker`]).
#[inline]
pub(crate) fn pid_of(waker: &Waker) -> Option<RawPid> {
    std::ptr::eq(waker.vtable(), &WAKER_VTABLE)
        .then(|| RawPid::from_bits(waker.data().addr() as u64))
}

/// Wakes the process named by `pid`, if it is still alive.
fn wake_pid(pid: RawPid) {
    if let Some(process) = ProcessRef::new(pid) {
        process.schedule();
    }
}

/// The waker of the process `pid`: the pid itself in the data pointer; no allocation,
/// no reference count.
pub(crate) fn waker(pid: RawPid) -> Waker {
    // SAFETY: `WAKER_VTABLE`'s functions treat the data pointer as plain bits and never
    // dereference it, so any pointer value satisfies the `RawWaker` contract.
    unsafe { Waker::from_raw(raw_waker(pid.to_bits())) }
}

fn raw_waker(bits: u64) -> RawWaker {
    RawWaker::new(ptr::without_provenance(bits as usize), &WAKER_VTABLE)
}

static WAKER_VTABLE: RawWakerVTable = RawWakerVTable::new(
    |data| raw_waker(data as usize as u64),
    |data| wake_pid(RawPid::from_bits(data as usize as u64)),
    |data| wake_pid(RawPid::from_bits(data as usize as u64)),
    |_| {},
);

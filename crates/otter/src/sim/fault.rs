//! Faults that only a simulation injects: [`buggify`] sites, after FoundationDB's
//! `BUGGIFY`.
//!
//! A site is a place in the program's own code where a rare path can be forced: a
//! shorter timeout, a dropped cache entry, a retry, a crash. Outside a simulation
//! `buggify()` is always false and costs a thread-local read. Inside one, each site (a
//! source location) is switched on for the whole run with probability 1/4 the first time
//! it is reached, and a site that is on fires with probability 1/4 each time: the rare
//! path is exercised in a quarter of the runs, never in all of them at once. Both draws
//! come from the seed, so a run that failed on a fired site replays it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::Location;
use std::rc::Rc;

use crate::rng::Rng;

/// A run's sites and their random numbers, lent to the stepping thread while it steps.
#[derive(Debug)]
pub(crate) struct Sites {
    pub(crate) rng: Rng,
    /// Whether each site reached so far is on, by source location.
    on: HashMap<(&'static str, u32, u32), bool>,
    /// Sites that fired, counted.
    pub(crate) fired: u64,
}

impl Sites {
    /// A run's sites, shared between its simulation and the thread that steps it.
    pub(crate) fn new(rng: Rng, enabled: bool) -> Option<Rc<RefCell<Sites>>> {
        enabled.then(|| {
            Rc::new(RefCell::new(Sites {
                rng,
                on: HashMap::new(),
                fired: 0,
            }))
        })
    }
}

thread_local! {
    /// The sites of the simulation this thread is stepping, if it enables them.
    static SITES: RefCell<Option<Rc<RefCell<Sites>>>> = const { RefCell::new(None) };
}

/// Lends `sites` to this thread (`None`: takes them back).
pub(crate) fn lend(sites: Option<Rc<RefCell<Sites>>>) {
    SITES.with(|s| *s.borrow_mut() = sites);
}

/// Whether the rare path at this site runs now (module docs): false outside a
/// simulation, and in one whose `Config::buggify` is off.
///
/// ```
/// use std::time::Duration;
/// fn retry_after() -> Duration {
///     if otter::sim::buggify() {
///         Duration::ZERO // Under simulation, sometimes retry at once.
///     } else {
///         Duration::from_millis(100)
///     }
/// }
/// assert_eq!(retry_after(), Duration::from_millis(100));
/// ```
#[track_caller]
pub fn buggify() -> bool {
    let at = Location::caller();
    SITES.with(|s| {
        let s = s.borrow();
        let Some(sites) = s.as_ref() else {
            return false;
        };
        let mut sites = sites.borrow_mut();
        let key = (at.file(), at.line(), at.column());
        let on = match sites.on.get(&key) {
            Some(&on) => on,
            None => {
                let on = sites.rng.below(4) == 0;
                sites.on.insert(key, on);
                on
            }
        };
        let fire = on && sites.rng.below(4) == 0;
        sites.fired += u64::from(fire);
        fire
    })
}

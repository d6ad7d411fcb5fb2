//! What a runtime gives its processes besides running them: the timer, the name
//! registry, the table of servers reached by pid, introspection's counters, the
//! blocking pool, the distribution's one node, tokio's context and a simulation's
//! hooks. The scheduler's state (`scheduler.rs`, `Shared`) holds one [`Services`] for
//! its processes to reach through their header. The scheduler's own uses of it: a
//! worker enters the timer's lane for its slot and tokio's context when it starts, and
//! checks the deferred deadlines there (`timer/deferred.rs`); workers and the watchdog
//! tick the counters' coarse clock and count spawns from outside; and a simulation's
//! runtime renews no turn in place.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::timer::Timer;

/// A runtime's services (module docs).
#[derive(Debug)]
pub(crate) struct Services {
    /// The timer thread and the workers' timer lanes, one per worker slot (`timer.rs`).
    pub(crate) timer: Arc<Timer>,
    pub(crate) registry: crate::registry::Registry,
    pub(crate) servers: crate::server::untyped::Servers, // reached by pid alone
    /// Introspection's runtime counters and coarse clock (`introspect.rs`).
    pub(crate) stats: crate::introspect::RuntimeStats,
    /// Whether a distribution node runs on this runtime (one at most).
    pub(crate) has_node: AtomicBool,
    /// The blocking pool (`blocking.rs`); no thread until its first job.
    pub(crate) blocking: Arc<crate::blocking::Pool>,
    /// Whether process threads enter tokio's context ([`Builder::tokio_context`]).
    ///
    /// [`Builder::tokio_context`]: crate::Builder::tokio_context
    #[cfg(feature = "tokio")]
    pub(crate) tokio_context: bool,
    /// A simulation's runtime (`sim.rs`): no thread of its own, a timer on the
    /// simulated clock, no sockets, blocking jobs run inline, no turn renewed in place.
    /// Boxed: a normal runtime carries one word for it.
    pub(crate) simulated: Option<Box<crate::sim::nodes::Simulated>>,
}

/// For one node of a simulation (`sim.rs`): the start of its clock, its network and
/// the node's address.
pub(crate) type SimulatedNode = (
    std::time::Instant,
    Arc<crate::io::network::Network>,
    std::net::Ipv4Addr,
);

impl Services {
    /// The services of a runtime with `slots` worker slots (`Shared::slots`) whose
    /// threads are named after `name`; no thread started yet.
    pub(crate) fn new(
        slots: usize,
        name: &str,
        #[cfg(feature = "tokio")] tokio_context: bool,
        simulated: Option<SimulatedNode>,
    ) -> Services {
        let timer_name = format!("{name}-timer");
        let blocking_name = format!("{name}-blocking");
        Services {
            timer: match &simulated {
                Some((start, _, _)) => Timer::simulated(timer_name, slots, *start),
                None => Timer::new(timer_name, slots),
            },
            registry: Default::default(),
            servers: Default::default(),
            stats: Default::default(),
            has_node: AtomicBool::new(false),
            blocking: Arc::new(match &simulated {
                Some(_) => crate::blocking::Pool::inline(blocking_name),
                None => crate::blocking::Pool::new(blocking_name),
            }),
            #[cfg(feature = "tokio")]
            tokio_context,
            simulated: simulated
                .map(|(_, net, ip)| Box::new(crate::sim::nodes::Simulated::new(net, ip))),
        }
    }
}

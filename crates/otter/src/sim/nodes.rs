//! A simulation's nodes: each a runtime of its own (its processes, its registry, its
//! timers) with an address on the simulation's network, and the faults that strike
//! them: partitions, resets, crashes and restarts.

use std::future::Future;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Simulation, node_ip};
use crate::Context;
use crate::exit::IntoExitReason;
use crate::pid::Pid;
use crate::runtime::Handle;
use crate::runtime::services::Services;
use crate::scheduler::Shared;

/// What a simulation's runtime keeps beyond a runtime's (`sim.rs`).
#[derive(Debug)]
pub(crate) struct Simulated {
    /// The thread that steps the simulation.
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    pub(crate) owner: std::thread::ThreadId,
    /// The simulation's network, where its sockets are (`io/network.rs`), and this
    /// node's address on it.
    pub(crate) net: Arc<crate::io::network::Network>,
    pub(crate) ip: Ipv4Addr,
    /// The first wake-up or spawn that came from another thread (noted in debug builds
    /// only: `Shared::inject`): the thread's name and id.
    pub(crate) foreign: Mutex<Option<String>>,
}

impl Simulated {
    /// A node at `ip` on `net`, stepped by this thread.
    pub(crate) fn new(net: Arc<crate::io::network::Network>, ip: Ipv4Addr) -> Simulated {
        Simulated {
            owner: std::thread::current().id(),
            net,
            ip,
            foreign: Mutex::new(None),
        }
    }

    /// Notes a wake-up from outside the workers if it comes from a thread other than
    /// the simulation's.
    #[cfg(debug_assertions)]
    #[cold]
    pub(crate) fn note_outside_wake(&self) {
        let t = std::thread::current();
        if t.id() != self.owner {
            let mut f = self
                .foreign
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f.get_or_insert_with(|| {
                format!("thread {:?} ({:?})", t.name().unwrap_or("unnamed"), t.id())
            });
        }
    }
}

/// A node of a [`Simulation`]: `NodeId(0)` is the one every simulation starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

/// A node's name, address and runtime (`None` while it is down).
pub(super) struct Slot {
    name: String,
    ip: Ipv4Addr,
    pub(super) shared: Option<Arc<Shared>>,
}

impl Simulation {
    /// Adds a node named `name`: a runtime of its own, reachable on the network at the
    /// next address (`10.0.0.2`, `10.0.0.3`, ...) and by `name` as a host name (the
    /// host part of a distribution node's name, `alive@name`).
    ///
    /// ```
    /// let mut sim = otter::sim::Simulation::new(1);
    /// let b = sim.add_node("b");
    /// assert_eq!(sim.node_ip(b).to_string(), "10.0.0.2");
    /// assert_eq!(sim.node_name(b), "b");
    /// ```
    pub fn add_node(&mut self, name: &str) -> NodeId {
        let id = self.nodes.len();
        let ip = node_ip(id);
        self.net.add_host(name, ip);
        self.nodes.push(Slot {
            name: name.to_string(),
            ip,
            shared: None,
        });
        self.boot(id);
        NodeId(id)
    }

    /// The nodes, in the order added.
    pub fn nodes(&self) -> Vec<NodeId> {
        (0..self.nodes.len()).map(NodeId).collect()
    }

    /// Node `id`'s host name.
    pub fn node_name(&self, id: NodeId) -> &str {
        &self.nodes[id.0].name
    }

    /// Node `id`'s address.
    pub fn node_ip(&self, id: NodeId) -> Ipv4Addr {
        self.nodes[id.0].ip
    }

    /// Whether node `id` is up (not crashed, or restarted since).
    pub fn is_up(&self, id: NodeId) -> bool {
        self.nodes[id.0].shared.is_some()
    }

    /// A [`Handle`] on node `id`'s runtime.
    ///
    /// # Panics
    ///
    /// If the node is down ([`Simulation::crash`]).
    pub fn handle_on(&self, id: NodeId) -> Handle {
        let slot = &self.nodes[id.0];
        match &slot.shared {
            Some(shared) => Handle::of(shared.clone()),
            None => panic!(
                "otter::sim: node {} ({}) is down; restart it first",
                id.0, slot.name
            ),
        }
    }

    /// Spawns a process on node `id`; it runs when the simulation next steps.
    ///
    /// # Panics
    ///
    /// If the node is down.
    pub fn spawn_on<M, F, Fut>(&self, id: NodeId, f: F) -> Pid<M>
    where
        M: Send + 'static,
        F: FnOnce(Context<M>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        self.handle_on(id).spawn(f)
    }

    /// The range of the network's delays, each drawn from the seed (1 to 5 ms unless
    /// set; whole milliseconds, the clock's unit).
    pub fn set_latency(&mut self, min: Duration, max: Duration) {
        self.net
            .set_latency(super::ceil_ms(min), super::ceil_ms(max));
    }

    /// The chance, from 0 to 1 and drawn from the seed, that a UDP datagram is lost
    /// (none unless set). TCP loses nothing: its bytes are delayed, never dropped.
    pub fn set_loss(&mut self, p: f64) {
        self.net.set_loss(p);
    }

    /// Cuts the network between nodes `a` and `b`: what they send each other is held
    /// until [`Simulation::heal`], and their connects fail (`io/network.rs`'s model).
    pub fn partition(&mut self, a: NodeId, b: NodeId) {
        self.net.partition(self.node_ip(a), self.node_ip(b));
    }

    /// Cuts node `a` off from every other node.
    pub fn isolate(&mut self, a: NodeId) {
        for b in self.nodes() {
            self.partition(a, b);
        }
    }

    /// Heals the cut between `a` and `b`: what was held arrives, in order.
    pub fn heal(&mut self, a: NodeId, b: NodeId) {
        self.net.heal(self.node_ip(a), self.node_ip(b));
    }

    /// Heals every cut.
    pub fn heal_all(&mut self) {
        for a in self.nodes() {
            for b in self.nodes() {
                self.heal(a, b);
            }
        }
    }

    /// Resets every connection between `a` and `b`: reads fail with
    /// `ConnectionReset`, writes with `BrokenPipe`.
    pub fn reset(&mut self, a: NodeId, b: NodeId) {
        self.net.reset(self.node_ip(a), self.node_ip(b));
    }

    /// Crashes node `id`: every process on it ends (as when its runtime is dropped:
    /// links and monitors on other nodes hear it the way the distribution tells them,
    /// `noconnection`), its sockets close, its port mapper forgets it. Nothing of it
    /// runs until [`Simulation::restart`].
    pub fn crash(&mut self, id: NodeId) {
        self.crash_node(id.0);
    }

    /// Starts node `id` again after a crash, empty: a new runtime at the same address,
    /// with no process (spawn its first ones with [`Simulation::spawn_on`]).
    pub fn restart(&mut self, id: NodeId) {
        if self.nodes[id.0].shared.is_none() {
            self.boot(id.0);
        }
    }

    /// Node `n`'s runtime, new.
    fn boot(&mut self, n: usize) {
        let name = format!("otter-sim-{}", self.nodes[n].name);
        let services = Services::new(
            Shared::slots(1),
            &name,
            #[cfg(feature = "tokio")]
            false,
            Some((self.start, self.net.clone(), self.nodes[n].ip)),
        );
        let shared = Arc::new(Shared::new(1, &name, Duration::ZERO, services));
        self.nodes[n].shared = Some(shared);
    }

    /// Ends node `n`'s runtime, if up (`crash`, and the simulation's end).
    pub(super) fn crash_node(&mut self, n: usize) {
        if self.nodes[n].shared.is_none() {
            return;
        }
        self.forget_ready(n);
        let Some(shared) = self.nodes[n].shared.take() else {
            return;
        };
        // Its processes end here, on this thread, as a worker of no runtime; then its
        // sockets close, as its OS would close them, whatever still holds them (a
        // distribution node's tables may).
        crate::unwind::abort_on_unwind("a simulated node's crash", || {
            crate::runtime::shut_down(&shared, Vec::new())
        });
        self.net.host_down(self.nodes[n].ip);
    }
}

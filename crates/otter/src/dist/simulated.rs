//! The distribution on a simulation's network (`otter::sim`, `io/network.rs`): a node
//! started on a simulated runtime listens there, registers with its host's simulated
//! port mapper, and looks its peers up in theirs. Everything past the listener and the
//! lookup (the handshake, the ticks, the connections' processes) is the code a node
//! runs on the OS's network.

use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;

use crate::dist::epmd::{self, EpmdError};
use crate::dist::node::StartError;
use crate::io::network::{self, Network};
use crate::runtime::Handle;

/// The simulated network of `handle`'s runtime and the node's address there, if it is
/// one of a simulation's nodes.
pub(crate) fn network(handle: &Handle) -> Option<(Arc<Network>, Ipv4Addr)> {
    let sim = handle.shared().services.simulated.as_ref()?;
    Some((sim.net.clone(), sim.ip))
}

/// What a node listens on before its acceptor takes it over.
pub(crate) enum Listening {
    Os(std::net::TcpListener),
    Sim(network::Listener),
}

impl Listening {
    /// The acceptor's socket (in the acceptor process: an OS socket registers with its
    /// runtime's reactor there).
    pub(crate) fn open(self) -> io::Result<crate::net::TcpListener> {
        match self {
            Listening::Os(l) => crate::net::TcpListener::from_std(l),
            Listening::Sim(l) => crate::net::TcpListener::of(crate::net::sock::Listen::Sim(l)),
        }
    }
}

/// A node's registration with its host's port mapper, held while the node runs.
pub(crate) enum Registered {
    /// Held open: epmd forgets the name when the connection closes.
    Epmd(#[allow(dead_code)] epmd::Registration),
    Sim {
        net: Arc<Network>,
        ip: Ipv4Addr,
        alive: String,
        creation: u32,
    },
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Registered::Sim {
            net,
            ip,
            alive,
            creation,
        } = self
        {
            net.epmd_unregister(*ip, alive, *creation);
        }
    }
}

/// Listens on the node's address and registers `alive` with its host's port mapper;
/// the node's host name must be the simulation's name for it. The listener, its port,
/// the node's creation and its registration.
pub(crate) fn start(
    net: &Arc<Network>,
    ip: Ipv4Addr,
    alive: &str,
    host: &str,
) -> Result<(Listening, u16, u32, Registered), StartError> {
    if net.resolve(host) != Some(ip) {
        return Err(StartError::Epmd(format!(
            "in a simulation, a node's host is the name of the simulated node it runs on \
             ({host} is not {ip}'s)"
        )));
    }
    let listener = net
        .listen(ip, std::net::SocketAddr::from((ip, 0)))
        .map_err(StartError::Listen)?;
    let port = listener.local_addr().port();
    let creation = net
        .epmd_register(ip, alive, port)
        .map_err(|e| StartError::Epmd(e.to_string()))?;
    let registered = Registered::Sim {
        net: net.clone(),
        ip,
        alive: alive.to_string(),
        creation,
    };
    Ok((Listening::Sim(listener), port, creation, registered))
}

/// The port of node `alive` on `host`, asked from node `ip` (epmd's `PORT_PLEASE2`).
pub(crate) fn port_please(
    net: &Network,
    ip: Ipv4Addr,
    host: &str,
    alive: &str,
) -> Result<u16, EpmdError> {
    net.epmd_lookup(ip, host, alive)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => EpmdError::NotRegistered {
                name: alive.to_string(),
                host: host.to_string(),
            },
            _ => EpmdError::Io(e),
        })
}

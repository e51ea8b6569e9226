//! Listening: binding the configured addresses, accepting connections and handing each to a
//! worker thread, and turning away those Redis would refuse (maxclients, protected mode).

use crate::config::{Config, Values};
use crate::net::conn::Incoming;
use crate::server::Server;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Redis's reply to a non-loopback client while protected mode is on and no password is set.
const DENIED: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";

/// A bound listening socket, the address it is bound to, and whether its connections
/// speak TLS.
pub struct Listener {
    pub socket: TcpListener,
    pub addr: SocketAddr,
    pub tls: bool,
}

/// An address the directives ask to listen on.
pub(crate) struct Want {
    /// `host:port`, as `to_socket_addrs` reads it.
    addr: String,
    pub tls: bool,
    /// Redis's `-` prefix: skipped when it cannot be bound.
    optional: bool,
}

impl Want {
    /// The socket address it names (the first a host name resolves to).
    pub fn resolved(&self) -> Option<SocketAddr> {
        self.addr.to_socket_addrs().ok()?.next()
    }
}

/// Every address of `bind` on `port` and on `tls-port`, plain ones first. Port 0 asks for
/// the port `chosen` (the one the OS picked at start), if any; else, without a TLS port
/// or a Unix socket, for any free one (Strata's tests start that way); else for no plain
/// listener, as in Redis. An empty `bind` is no TCP listener at all, as in Redis 7.0
/// (whose default, every address, is `* -::*`).
pub(crate) fn wanted(values: &Values, chosen: Option<u16>) -> Vec<Want> {
    let mut ports = Vec::new();
    match (values.port, chosen) {
        (0, Some(chosen)) => ports.push((chosen, false)),
        (0, None) if values.tls_port != 0 || !values.unixsocket.is_empty() => {}
        (port, _) => ports.push((port, false)),
    }
    if values.tls_port != 0 {
        ports.push((values.tls_port, true));
    }
    let mut out = Vec::new();
    for (port, tls) in ports {
        for host in &values.bind.0 {
            let (optional, host) = match host.strip_prefix('-') {
                Some(h) => (true, h),
                None => (false, host.as_str()),
            };
            // Redis's wildcards: any IPv4 address, any IPv6 one.
            let host = match host {
                "*" => "0.0.0.0",
                "::*" => "::",
                h => h,
            };
            let addr = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            out.push(Want {
                addr,
                tls,
                optional,
            });
        }
    }
    out
}

/// Binds every address `wanted` asks for at start, each with `tcp-backlog`.
pub fn bind(config: &Config) -> std::io::Result<Vec<Listener>> {
    let values = config.get();
    // The Unix socket, bound next, may be the only listener.
    let unix = usize::from(!values.unixsocket.is_empty());
    bind_each(
        &wanted(&values, None),
        effective_backlog(values.tcp_backlog),
        unix,
    )
}

/// Binds each of `wanted` (an optional one that fails is skipped); all or none. Fails
/// too when nothing would be listening (`already`: the listeners kept open besides).
pub(crate) fn bind_each(
    wanted: &[Want],
    backlog: u32,
    already: usize,
) -> std::io::Result<Vec<Listener>> {
    let mut listeners = Vec::new();
    for w in wanted {
        match listen_on(&w.addr, backlog) {
            Ok(socket) => {
                let addr = socket.local_addr()?;
                listeners.push(Listener {
                    socket,
                    addr,
                    tls: w.tls,
                });
            }
            Err(e) if w.optional => {
                tracing::warn!("skipping optional bind address {}: {e}", w.addr)
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("could not bind {}: {e}", w.addr),
                ))
            }
        }
    }
    if listeners.is_empty() && already == 0 {
        return Err(std::io::Error::other("no address to listen on"));
    }
    Ok(listeners)
}

/// One listening socket with the given accept queue length (std's `bind` fixes it at 128).
pub(crate) fn listen_on(addr: &str, backlog: u32) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let addr: SocketAddr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{addr} resolves to nothing")))?;
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // As Redis: an IPv6 address listens on IPv6 only; bind "0.0.0.0 ::" for both.
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    Ok(socket.into())
}

/// `tcp-backlog`, warned about when the kernel's `somaxconn` silently cuts it, as Redis
/// warns at start.
fn effective_backlog(wanted: u32) -> u32 {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    if let Some(max) = somaxconn.filter(|&m| m < wanted) {
        tracing::warn!(
            "WARNING: The TCP backlog setting of {wanted} cannot be enforced because /proc/sys/net/core/somaxconn is set to the lower value of {max}."
        );
    }
    wanted
}

/// Accepts connections (`accept`: the listener's) and deals them to the workers as
/// `incoming` wraps them, until shutdown or until `stop` is set (the listener was closed:
/// `net::listeners`): one that may move where the workers' balance says
/// (`net::balance`); one that never moves (TLS, the Unix socket) to each worker in turn (a
/// client at low load would otherwise stay on the first worker for good).
pub(crate) fn accept_loop<S>(
    server: &Server,
    mut accept: impl FnMut() -> std::io::Result<S>,
    incoming: fn(S) -> Incoming,
    movable: bool,
    stop: &AtomicBool,
) {
    let Some(workers) = server.workers.get() else {
        return;
    };
    let mut dealer = crate::net::balance::Dealer::new(&server.balance);
    loop {
        let stream = match accept() {
            Ok(s) => s,
            Err(e) => {
                if server.shutting_down.load(Ordering::SeqCst) || stop.load(Ordering::SeqCst) {
                    return;
                }
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if server.shutting_down.load(Ordering::SeqCst) || stop.load(Ordering::SeqCst) {
            return;
        }
        server
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        let to = dealer.deal(&server.balance, !movable);
        if workers[to % workers.len()].send(incoming(stream)).is_err() {
            return;
        }
    }
}

/// Why a new connection is turned away, if it is: maxclients, or protected mode (the
/// default user needs no password, `default_nopass`, and a client neither on loopback nor
/// on the Unix socket: `local`), as Redis decides.
pub fn refuse(
    config: &Config,
    default_nopass: bool,
    connected: usize,
    local: bool,
) -> Option<&'static str> {
    let config = config.get();
    if connected >= config.maxclients as usize {
        return Some("ERR max number of clients reached");
    }
    let protected = config.protected_mode && default_nopass;
    if protected && !local {
        return Some(DENIED);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (address, tls, optional) for each listener the directives ask for.
    fn asked(c: &Config, chosen: Option<u16>) -> Vec<(String, bool, bool)> {
        wanted(&c.get(), chosen)
            .into_iter()
            .map(|w| (w.addr, w.tls, w.optional))
            .collect()
    }

    #[test]
    fn wanted_addresses_and_what_port_0_means() {
        let c = Config::new(None);
        c.set("port", "0", false).unwrap();
        c.set("bind", "", false).unwrap();
        assert_eq!(asked(&c, None), vec![], "an empty bind listens nowhere");
        c.set("bind", "* -::*", false).unwrap();
        let any = |p: u16| {
            vec![
                (format!("0.0.0.0:{p}"), false, false),
                (format!("[::]:{p}"), false, true),
            ]
        };
        assert_eq!(asked(&c, None), any(0), "`* -::*` is every address");
        assert_eq!(
            asked(&c, Some(7000)),
            any(7000),
            "port 0 keeps the OS's choice"
        );
        c.set("bind", "127.0.0.1 -::1", false).unwrap();
        c.set("tls-port", "7100", false).unwrap();
        assert_eq!(
            asked(&c, None),
            vec![
                ("127.0.0.1:7100".to_string(), true, false),
                ("[::1]:7100".to_string(), true, true),
            ],
            "with a TLS port, port 0 is no plain listener"
        );
        c.set("port", "7001", false).unwrap();
        let plain: Vec<_> = asked(&c, Some(7000)).into_iter().filter(|w| !w.1).collect();
        assert_eq!(plain[0].0, "127.0.0.1:7001");
    }

    #[test]
    fn protected_mode_and_maxclients() {
        let c = Config::new(None);
        assert_eq!(refuse(&c, true, 0, true), None);
        assert_eq!(refuse(&c, true, 0, false), Some(DENIED));
        assert_eq!(
            refuse(&c, false, 0, false),
            None,
            "a default user's password lifts protected mode"
        );
        c.set("protected-mode", "no", false).unwrap();
        assert_eq!(refuse(&c, true, 0, false), None);
        c.set("maxclients", "2", false).unwrap();
        assert_eq!(refuse(&c, true, 1, true), None);
        assert_eq!(
            refuse(&c, true, 2, true),
            Some("ERR max number of clients reached")
        );
    }
}

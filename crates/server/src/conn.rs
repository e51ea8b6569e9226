//! One connection: read what the client sent, run every complete command in it, answer
//! the whole batch with one write.

use crate::client::{Client, ClientInfo};
use crate::config::Config;
use crate::server::Server;
use crate::stats::ThreadStats;
use crate::table;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use strata_resp::{Limits, Parser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const READ_CHUNK: usize = 16 * 1024;
/// Reserve at most this much ahead of what has arrived, whatever a frame header claims.
const MAX_RESERVE: usize = 1024 * 1024;

/// Redis's reply to a non-loopback client while protected mode is on and no password is set.
const DENIED: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";

/// Limits the connection enforces, refreshed when CONFIG SET changes the config epoch.
struct ConnLimits {
    epoch: u64,
    authenticated: bool,
    query_buffer: usize,
}

impl ConnLimits {
    fn load(server: &Server, parser: &mut Parser, authenticated: bool) -> ConnLimits {
        let epoch = server.config.epoch();
        parser.set_limits(Limits {
            max_bulk_len: server.config.get_u64("proto-max-bulk-len") as usize,
            unauthenticated: !authenticated,
            ..Limits::default()
        });
        ConnLimits {
            epoch,
            authenticated,
            query_buffer: server.config.get_u64("client-query-buffer-limit") as usize,
        }
    }

    fn stale(&self, server: &Server, client: &Client) -> bool {
        server.config.epoch() != self.epoch || client.authenticated != self.authenticated
    }
}

pub async fn serve(server: Arc<Server>, stats: Arc<ThreadStats>, stream: std::net::TcpStream) {
    let (peer, local) = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(p), Ok(l)) => (p, l),
        _ => return,
    };
    let _ = stream.set_nodelay(true);
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let Ok(mut stream) = TcpStream::from_std(stream) else {
        return;
    };
    if let Some(refusal) = refuse(&server.config, server.clients.connected(), &peer) {
        server
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = stream.write_all(format!("-{refusal}\r\n").as_bytes()).await;
        return;
    }
    let info = Arc::new(ClientInfo::new(
        server.clients.next_id(),
        peer.to_string(),
        local.to_string(),
    ));
    server.clients.add(info.clone());
    let authenticated = server.config.get("requirepass").is_empty();
    let mut client = Client::new(info.clone(), authenticated);
    serve_client(&server, &stats, &mut stream, &mut client).await;
    server.clients.remove(info.id);
}

/// Why a new connection is turned away, if it is: maxclients, or protected mode (no
/// password set and a client from beyond loopback), as Redis decides.
fn refuse(config: &Config, connected: usize, peer: &SocketAddr) -> Option<&'static str> {
    if connected >= config.get_u64("maxclients") as usize {
        return Some("ERR max number of clients reached");
    }
    let protected = config.get_bool("protected-mode") && config.get("requirepass").is_empty();
    if protected && !peer.ip().is_loopback() {
        return Some(DENIED);
    }
    None
}

async fn serve_client(
    server: &Server,
    stats: &ThreadStats,
    stream: &mut TcpStream,
    client: &mut Client,
) {
    let mut parser = Parser::new(Limits::default());
    let mut limits = ConnLimits::load(server, &mut parser, client.authenticated);
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let info = client.info.clone();
    // Set when a batch stopped early because its replies grew large: the buffer may still
    // hold complete commands, so run them before reading more.
    let mut pending = false;
    loop {
        let mut n = 0;
        if !pending {
            if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
                let want = parser.frame_hint().unwrap_or(0).saturating_sub(inbuf.len());
                inbuf.reserve(want.clamp(READ_CHUNK, MAX_RESERVE));
            }
            n = tokio::select! {
                biased;
                _ = info.killed() => return,
                r = stream.read_buf(&mut inbuf) => match r {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                },
            };
        }
        let mut clock = std::time::Instant::now();
        info.touch(clock);
        pending = false;
        loop {
            if limits.stale(server, client) {
                limits = ConnLimits::load(server, &mut parser, client.authenticated);
            }
            match parser.parse(&mut inbuf) {
                Ok(Some(argv)) => {
                    table::execute(server, client, stats, &argv, &mut out, &mut clock);
                    if client.close_after_reply {
                        break;
                    }
                    // Bound this connection's reply memory: write what we have first.
                    if out.len() >= MAX_RESERVE {
                        pending = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // Redis echoes an offending byte raw, which a &str can't carry.
                    out.extend_from_slice(&e.reply_bytes());
                    server.stats.count_error("ERR");
                    client.close_after_reply = true;
                    break;
                }
            }
        }
        info.qbuf.store(inbuf.len(), Ordering::Relaxed);
        if inbuf.len() > limits.query_buffer {
            tracing::warn!(
                "closing client {} that reached max query buffer length",
                info.addr
            );
            return;
        }
        stats.add_net(n, out.len());
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
            // Don't keep a huge buffer around after one big reply.
            if out.capacity() > 4 * MAX_RESERVE {
                out = Vec::with_capacity(READ_CHUNK);
            }
        }
        if client.close_after_reply || info.is_killed() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_mode_and_maxclients() {
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let local6: SocketAddr = "[::1]:5000".parse().unwrap();
        let remote: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        let c = Config::new(None);
        assert_eq!(refuse(&c, 0, &local), None);
        assert_eq!(refuse(&c, 0, &local6), None);
        assert_eq!(refuse(&c, 0, &remote), Some(DENIED));
        c.set("requirepass", "pw", false).unwrap();
        assert_eq!(
            refuse(&c, 0, &remote),
            None,
            "a password lifts protected mode"
        );
        c.set("requirepass", "", false).unwrap();
        c.set("protected-mode", "no", false).unwrap();
        assert_eq!(refuse(&c, 0, &remote), None);
        c.set("maxclients", "2", false).unwrap();
        assert_eq!(refuse(&c, 1, &local), None);
        assert_eq!(
            refuse(&c, 2, &local),
            Some("ERR max number of clients reached")
        );
    }
}

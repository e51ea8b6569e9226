//! What replication shows: INFO's replication section (every field Redis 7.0 prints, in
//! its order) and ROLE.

use super::{link, peer};
use crate::server::Server;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// The body of INFO's `# Replication` section.
pub fn info_section(server: &Server, s: &mut String) {
    let repl = &server.repl;
    let c = server.config.get();
    let mut field = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(s, "{k}:{v}\r\n");
    };
    let now = Server::now_unix();
    match repl.master_addr() {
        None => field("role", &"master"),
        Some((host, port)) => {
            let st = &repl.link;
            let state = st.state.load(Ordering::Relaxed);
            let up = state == link::CONNECTED;
            let (read, applied) = match (up, repl.cached()) {
                (true, _) => (
                    st.read_reploff.load(Ordering::Relaxed),
                    st.reploff.load(Ordering::Relaxed),
                ),
                (false, Some(c)) => (c.offset, c.offset),
                (false, None) => (1, 1),
            };
            field("role", &"slave");
            field("master_host", &host);
            field("master_port", &port);
            field("master_link_status", &if up { "up" } else { "down" });
            let last_io = if up {
                now.saturating_sub(st.last_io.load(Ordering::Relaxed)) as i64
            } else {
                -1
            };
            field("master_last_io_seconds_ago", &last_io);
            field(
                "master_sync_in_progress",
                &u8::from(state == link::TRANSFER),
            );
            field("slave_read_repl_offset", &read);
            field("slave_repl_offset", &applied);
            if state == link::TRANSFER {
                let size = st.transfer_size.load(Ordering::Relaxed);
                let got = st.transfer_read.load(Ordering::Relaxed) as i64;
                let perc = if size > 0 {
                    got as f64 * 100.0 / size as f64
                } else {
                    0.0
                };
                field("master_sync_total_bytes", &size);
                field("master_sync_read_bytes", &got);
                field("master_sync_left_bytes", &(size - got));
                field("master_sync_perc", &format!("{perc:.2}"));
                let io = now.saturating_sub(st.transfer_last_io.load(Ordering::Relaxed));
                field("master_sync_last_io_seconds_ago", &io);
            }
            if !up {
                let since = st.down_since.load(Ordering::Relaxed);
                let down = if since == 0 {
                    -1
                } else {
                    now.saturating_sub(since) as i64
                };
                field("master_link_down_since_seconds", &down);
            }
            field("slave_priority", &c.replica_priority);
            field("slave_read_only", &u8::from(c.replica_read_only));
            field("replica_announced", &u8::from(c.replica_announced));
            // Strata's own: how much of the stream was applied on several workers.
            let counters = &repl.counters;
            field(
                "replica_apply_split_runs",
                &counters.split_runs.load(Ordering::Relaxed),
            );
            field(
                "replica_apply_split_writes",
                &counters.split_writes.load(Ordering::Relaxed),
            );
        }
    }
    let peers = repl.peers();
    field("connected_slaves", &peers.len());
    if c.min_replicas_to_write > 0 && c.min_replicas_max_lag > 0 {
        field("min_slaves_good_slaves", &repl.good_replicas());
    }
    for (i, p) in peers.iter().enumerate() {
        let state = p.state.load(Ordering::Relaxed);
        let lag = if state == peer::ONLINE {
            now.saturating_sub(p.ack_time.load(Ordering::Relaxed))
        } else {
            0
        };
        field(
            &format!("slave{i}"),
            &format!(
                "ip={},port={},state={},offset={},lag={lag}",
                p.addr,
                p.listening_port,
                peer::name(state),
                p.ack_off.load(Ordering::Relaxed)
            ),
        );
    }
    let ids = repl.ids();
    let shape = repl.backlog.shape();
    field("master_failover_state", &repl.failover.state_name());
    field("master_replid", &ids.replid);
    field("master_replid2", &ids.replid2);
    field("master_repl_offset", &repl.backlog.end());
    field("second_repl_offset", &ids.second_offset);
    field("repl_backlog_active", &u8::from(shape.active));
    field("repl_backlog_size", &shape.size);
    field("repl_backlog_first_byte_offset", &shape.first_byte);
    field("repl_backlog_histlen", &shape.histlen);
}

/// What ROLE answers.
pub enum RoleReply {
    /// `master`, its offset, and (ip, port, acknowledged offset) per online replica.
    Master(u64, Vec<(String, u16, i64)>),
    /// `slave`, the primary, the link's state, the offset applied (-1 when not linked).
    Replica(String, u16, &'static str, i64),
}

pub fn role_reply(server: &Server) -> RoleReply {
    let repl = &server.repl;
    match repl.master_addr() {
        None => RoleReply::Master(
            repl.backlog.end(),
            repl.peers()
                .iter()
                .filter(|p| p.state.load(Ordering::Relaxed) == peer::ONLINE)
                .map(|p| {
                    (
                        p.addr.clone(),
                        p.listening_port,
                        p.ack_off.load(Ordering::Relaxed),
                    )
                })
                .collect(),
        ),
        Some((host, port)) => {
            let state = repl.link.state.load(Ordering::Relaxed);
            let name = match state {
                link::NONE => "none",
                link::CONNECT => "connect",
                link::CONNECTING => "connecting",
                link::HANDSHAKE => "handshake",
                link::TRANSFER => "sync",
                _ => "connected",
            };
            let off = if state == link::CONNECTED {
                repl.link.reploff.load(Ordering::Relaxed)
            } else {
                -1
            };
            RoleReply::Replica(host, port, name, off)
        }
    }
}

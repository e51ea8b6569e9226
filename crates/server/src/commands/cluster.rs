//! The cluster group: CLUSTER and its subcommands, ASKING, READONLY, READWRITE. Strata
//! runs as Redis does with `cluster-enabled no`: each is declared as Redis declares it
//! (COMMAND lists them, ACL rules and scripts see their flags) and each answers that
//! cluster support is disabled.

use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "cluster",
    since: "3.0.0",
    handler: disabled,
    ..Command::DEFAULT
};

/// The flags of the subcommands that change the cluster's configuration.
const CONFIGURES: u32 = ADMIN | STALE | NO_ASYNC_LOADING;
const NONDETERMINISTIC: &[&str] = &["nondeterministic_output"];
/// The connection-level commands of cluster clients.
const CONNECTION: &[&str] = &["@connection"];

/// A subcommand of CLUSTER: its name, arity (counting CLUSTER), flags and summary.
const fn sub(name: &'static str, arity: i32, flags: u32, summary: &'static str) -> Command {
    Command {
        name,
        arity,
        flags,
        summary,
        ..FAMILY
    }
}

pub const COMMANDS: &[Command] = &[
    Command {
        name: "cluster",
        arity: -2,
        summary: "A container for cluster commands",
        complexity: "Depends on subcommand.",
        handler: super::container,
        subcommands: CLUSTER,
        ..FAMILY
    },
    Command {
        name: "asking",
        flags: FAST,
        summary: "Sent by cluster clients after an -ASK redirect",
        acl: CONNECTION,
        ..FAMILY
    },
    Command {
        name: "readonly",
        flags: FAST | LOADING | STALE,
        summary: "Enables read queries for a connection to a cluster replica node",
        acl: CONNECTION,
        ..FAMILY
    },
    Command {
        name: "readwrite",
        flags: FAST | LOADING | STALE,
        summary: "Disables read queries for a connection to a cluster replica node",
        acl: CONNECTION,
        ..FAMILY
    },
];

/// The slot range arguments of ADDSLOTSRANGE and DELSLOTSRANGE.
const SLOT_RANGES: &str = "start-slot_end-slot=(start-slot#int end-slot#int)...";
const RANGES_COMPLEXITY: &str =
    "O(N) where N is the total number of the slots between the start slot and end slot arguments.";

const CLUSTER: &[Command] = &[
    Command {
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: "slot#int...",
        ..sub("addslots", -3, CONFIGURES, "Assign new hash slots to receiving node")
    },
    Command {
        since: "7.0.0",
        complexity: RANGES_COMPLEXITY,
        args: SLOT_RANGES,
        ..sub("addslotsrange", -4, CONFIGURES, "Assign new hash slots to receiving node")
    },
    Command {
        tips: NONDETERMINISTIC,
        ..sub("bumpepoch", 2, CONFIGURES, "Advance the cluster config epoch")
    },
    Command {
        complexity: "O(N) where N is the number of failure reports",
        args: "node-id",
        tips: NONDETERMINISTIC,
        ..sub(
            "count-failure-reports",
            3,
            ADMIN | STALE,
            "Return the number of failure reports active for a given node",
        )
    },
    Command {
        args: "slot#int",
        ..sub(
            "countkeysinslot",
            3,
            STALE,
            "Return the number of local keys in the specified hash slot",
        )
    },
    Command {
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: "slot#int...",
        ..sub("delslots", -3, CONFIGURES, "Set hash slots as unbound in receiving node")
    },
    Command {
        since: "7.0.0",
        complexity: RANGES_COMPLEXITY,
        args: SLOT_RANGES,
        ..sub("delslotsrange", -4, CONFIGURES, "Set hash slots as unbound in receiving node")
    },
    Command {
        args: "[options=(FORCE | TAKEOVER)]",
        ..sub(
            "failover",
            -2,
            CONFIGURES,
            "Forces a replica to perform a manual failover of its master.",
        )
    },
    sub("flushslots", 2, CONFIGURES, "Delete a node's own slots information"),
    Command {
        args: "node-id",
        ..sub("forget", 3, CONFIGURES, "Remove a node from the nodes table")
    },
    Command {
        complexity: "O(log(N)) where N is the number of requested keys",
        args: "slot#int count#int",
        tips: NONDETERMINISTIC,
        ..sub("getkeysinslot", 4, STALE, "Return local key names in the specified hash slot")
    },
    Command {
        since: "5.0.0",
        ..sub("help", 2, LOADING | STALE, "Show helpful text about the different subcommands")
    },
    Command {
        tips: NONDETERMINISTIC,
        ..sub("info", 2, STALE, "Provides info about Redis Cluster node state")
    },
    Command {
        complexity: "O(N) where N is the number of bytes in the key",
        args: "key",
        ..sub("keyslot", 3, STALE, "Returns the hash slot of the specified key")
    },
    Command {
        since: "7.0.0",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: NONDETERMINISTIC,
        ..sub(
            "links",
            2,
            STALE,
            "Returns a list of all TCP links to and from peer nodes in cluster",
        )
    },
    Command {
        args: "ip port#int [cluster_bus_port#int]",
        ..sub("meet", -4, CONFIGURES, "Force a node cluster to handshake with another node")
    },
    sub("myid", 2, STALE, "Return the node id"),
    Command {
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: NONDETERMINISTIC,
        ..sub("nodes", 2, STALE, "Get Cluster config for the node")
    },
    Command {
        since: "5.0.0",
        args: "node-id",
        tips: NONDETERMINISTIC,
        ..sub("replicas", 3, ADMIN | STALE, "List replica nodes of the specified master node")
    },
    Command {
        args: "node-id",
        ..sub(
            "replicate",
            3,
            CONFIGURES,
            "Reconfigure a node as a replica of the specified master node",
        )
    },
    Command {
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        args: "[hard_soft=(HARD | SOFT)]",
        ..sub("reset", -2, ADMIN | STALE | NOSCRIPT, "Reset a Redis Cluster node")
    },
    sub("saveconfig", 2, CONFIGURES, "Forces the node to save cluster state on disk"),
    Command {
        args: "config-epoch#int",
        ..sub("set-config-epoch", 3, CONFIGURES, "Set the configuration epoch in a new node")
    },
    Command {
        args: "slot#int subcommand=(IMPORTING:node-id | MIGRATING:node-id | NODE:node-id | STABLE)",
        ..sub("setslot", -4, CONFIGURES, "Bind a hash slot to a specific node")
    },
    Command {
        since: "7.0.0",
        complexity: "O(N) where N is the total number of cluster nodes",
        tips: NONDETERMINISTIC,
        ..sub("shards", 2, STALE, "Get array of cluster slots to node mappings")
    },
    Command {
        args: "node-id",
        tips: NONDETERMINISTIC,
        ..sub("slaves", 3, ADMIN | STALE, "List replica nodes of the specified master node")
    },
    Command {
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: NONDETERMINISTIC,
        ..sub("slots", 2, STALE, "Get array of Cluster slot to node mappings")
    },
];

/// Every command of the group, HELP included, as Redis answers with cluster mode off.
fn disabled(_: &mut Ctx<'_>) -> CmdResult {
    Err(CmdError::err("This instance has cluster support disabled"))
}

//! `supervised` on the real binary: under systemd (named, or found by `auto` through
//! NOTIFY_SOCKET, a path or an abstract socket) the server sends sd_notify's loading
//! status, READY=1 once it serves, and STOPPING=1 when SHUTDOWN begins; with `no` it
//! sends nothing. The test plays systemd's side of the socket.

mod common;

use common::{free_port, temp_dir};
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Starts Strata with NOTIFY_SOCKET=`notify` and `--supervised mode`; the child is killed
/// when the guard drops.
struct Server(std::process::Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(notify: &str, mode: &str, dir: &std::path::Path) -> Server {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--port", &port.to_string(), "--supervised", mode])
        .arg("--dir")
        .arg(dir.join("data"))
        .env("NOTIFY_SOCKET", notify)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn strata");
    Server(child, port)
}

/// The next datagram, or None within `wait`.
fn next(socket: &UnixDatagram, wait: Duration) -> Option<String> {
    socket.set_read_timeout(Some(wait)).expect("timeout");
    let mut buf = [0u8; 512];
    let n = socket.recv(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn the_notifications_of_a_start_and_a_shutdown(socket: &UnixDatagram, s: &mut Server) {
    let wait = Duration::from_secs(10);
    assert_eq!(
        next(socket, wait).as_deref(),
        Some("STATUS=Strata is loading...\n")
    );
    assert_eq!(
        next(socket, wait).as_deref(),
        Some("STATUS=Ready to accept connections\n")
    );
    assert_eq!(next(socket, wait).as_deref(), Some("READY=1\n"));
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{}/", s.1))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
        .expect("connect");
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
    assert_eq!(next(socket, wait).as_deref(), Some("STOPPING=1\n"));
    let status = s.0.wait().expect("exit");
    assert!(status.success(), "{status}");
}

#[test]
fn systemd_is_told_when_the_server_is_ready_and_when_it_stops() {
    let dir = temp_dir("supervised");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind");
    let notify = path.to_str().expect("utf-8 path");
    let mut s = start(notify, "systemd", &dir);
    the_notifications_of_a_start_and_a_shutdown(&socket, &mut s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn auto_finds_systemd_through_an_abstract_notify_socket() {
    use std::os::linux::net::SocketAddrExt;
    let dir = temp_dir("supervised-auto");
    std::fs::create_dir_all(&dir).expect("dir");
    let name = format!("strata-test-notify-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(&name).expect("abstract name");
    let socket = UnixDatagram::bind_addr(&addr).expect("bind");
    let mut s = start(&format!("@{name}"), "auto", &dir);
    the_notifications_of_a_start_and_a_shutdown(&socket, &mut s);

    // With `no`, nothing is sent even though NOTIFY_SOCKET is set.
    let mut quiet = start(&format!("@{name}"), "no", &dir);
    let mut c = None;
    for _ in 0..200 {
        let url = format!("redis://127.0.0.1:{}/", quiet.1);
        if let Ok(conn) = redis::Client::open(url).and_then(|c| c.get_connection()) {
            c = Some(conn);
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let mut c = c.expect("the server never listened");
    let _: String = redis::cmd("PING").query(&mut c).expect("PING");
    assert_eq!(next(&socket, Duration::from_millis(300)), None);
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
    let _ = quiet.0.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

//! systemd notifications (`sd_notify`) over the `NOTIFY_SOCKET` unix datagram
//! socket, without libsystemd: `READY=1`, `WATCHDOG=1`, `STOPPING=1`,
//! `STATUS=...`. Outside systemd (no `NOTIFY_SOCKET`) every call is a no-op.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// Sends one notification. Returns `Ok(false)` when not run by systemd.
pub fn notify(state: &str) -> std::io::Result<bool> {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    let path = path.to_string_lossy().to_string();
    let sock = UnixDatagram::unbound()?;
    if let Some(abstract_name) = path.strip_prefix('@') {
        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let addr =
                std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())?;
            sock.send_to_addr(state.as_bytes(), &addr)?;
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = abstract_name;
            return Ok(false);
        }
    } else {
        sock.send_to(state.as_bytes(), &path)?;
    }
    Ok(true)
}

/// The watchdog period systemd asks for (`WATCHDOG_USEC`, honouring
/// `WATCHDOG_PID` when set), `None` when there is no watchdog.
pub fn watchdog_period() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec))
}

#[cfg(test)]
mod tests {
    use super::*;

    // one test touches the process environment, so keep it in one function
    #[test]
    fn sends_to_path_and_abstract_sockets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify.sock");
        let server = UnixDatagram::bind(&path).expect("bind");
        std::env::set_var("NOTIFY_SOCKET", &path);
        assert!(notify("READY=1").expect("send"));
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"READY=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("tailor-test-{}", std::process::id());
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("addr");
        let server2 = UnixDatagram::bind_addr(&addr).expect("bind abstract");
        std::env::set_var("NOTIFY_SOCKET", format!("@{name}"));
        assert!(notify("WATCHDOG=1").expect("send"));
        let n = server2.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"WATCHDOG=1");

        std::env::remove_var("NOTIFY_SOCKET");
        assert!(!notify("READY=1").expect("no-op"));

        std::env::set_var("WATCHDOG_USEC", "30000000");
        std::env::remove_var("WATCHDOG_PID");
        assert_eq!(watchdog_period(), Some(Duration::from_secs(30)));
        std::env::set_var("WATCHDOG_PID", "1");
        assert_eq!(watchdog_period(), None, "for another process");
        std::env::remove_var("WATCHDOG_USEC");
        std::env::remove_var("WATCHDOG_PID");
    }
}

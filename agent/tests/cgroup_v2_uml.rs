//! The agent's cgroup v2 reads on a real kernel. The machines the suite runs
//! on are cgroup v1 hosts, so this test boots one: User-Mode Linux (Debian's
//! `user-mode-linux`, a Linux 6.1 kernel that runs as a process, no
//! virtualisation needed) with the host's root file system as its own
//! (hostfs), the unified hierarchy mounted at `/sys/fs/cgroup`, and this
//! test's own executable as the probe inside it.
//!
//! The probe makes container cgroups where Docker (both drivers) and Podman
//! put them, moves a child process of its own into each (the "hog": it
//! holds as many MiB as it is told, or spins the CPU), and checks what
//! [`agent::cgroup::Cgroups`] reads against what the hog did:
//! - `mem_usage`, `mem_now` and `stats` see the memory held;
//! - `memory.peak` keeps the high-water mark after the memory is freed
//!   (the agent's in-interval peak is the rise of that mark);
//! - a limit written to `memory.max` reads back, and `max` reads as none;
//! - a CFS quota in `cpu.max` shows as throttling in the stats;
//! - a child killed by its cgroup's OOM killer counts in `oom_kills`;
//! - the keys the parsers look for are in the kernel's files;
//! - one reader finds containers under both Docker drivers in turn.
//!
//! One test (`harness = false`: the same executable is the outer test on
//! the host, the probe inside the kernel and the hog, chosen by
//! `TAILOR_UML_ROLE`). `scripts/test.sh` installs `user-mode-linux` when
//! it is missing; with `CI=true` a missing kernel fails the test, elsewhere
//! it skips with a loud message.

use agent::cgroup::{stat_value, Cgroups, Layout};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "TAILOR_UML_ROLE";
const MIB: u64 = 1 << 20;
/// Debian's User-Mode Linux kernel.
const UML: &str = "/usr/bin/linux.uml";
/// The longest the kernel may run before the outer test stops it (a guard
/// against a hung boot, not a measurement: the run takes a few seconds).
const GUARD: Duration = Duration::from_secs(300);

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("probe") => probe(),
        Ok("hog") => hog(),
        _ => outer(),
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// On the host: boots the kernel with the probe as its init's one job and
/// checks the probe's exit status.
fn outer() {
    println!("test cgroup_v2_files_read_on_a_real_kernel ...");
    if !Path::new(UML).exists() {
        let why = format!("{UML} missing (Debian's user-mode-linux; scripts/test.sh installs it)");
        if in_ci() {
            panic!("the cgroup v2 test cannot run in CI: {why}");
        }
        eprintln!("SKIPPED cgroup_v2_uml: {why}");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("tailor-uml-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir");
    let exe = std::env::current_exe().expect("own executable");
    let (out, rc) = (dir.path().join("probe.out"), dir.path().join("probe.rc"));
    let init = dir.path().join("init.sh");
    std::fs::write(
        &init,
        format!(
            "#!/bin/sh\n\
             # init of the kernel agent/tests/cgroup_v2_uml.rs boots\n\
             mount -t proc proc /proc\n\
             mount -t sysfs sysfs /sys\n\
             mount -t cgroup2 cgroup2 /sys/fs/cgroup\n\
             {ROLE}=probe {exe} > {out} 2>&1\n\
             echo $? > {rc}\n\
             sync\n\
             echo o > /proc/sysrq-trigger\n\
             sleep 60\n",
            exe = quote(&exe),
            out = quote(&out),
            rc = quote(&rc),
        ),
    )
    .expect("write init");
    set_executable(&init);
    let console = dir.path().join("console.log");
    let mut kernel = {
        use std::os::unix::process::CommandExt;
        Command::new(UML)
            .args([
                "mem=256M".to_string(),
                "root=/dev/root".to_string(),
                "rootfstype=hostfs".to_string(),
                "rootflags=/".to_string(),
                "rw".to_string(),
                format!("init={}", init.display()),
                "con=null".to_string(),
                "con0=fd:0,fd:1".to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&console).expect("console log"))
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start linux.uml")
    };
    let started = Instant::now();
    while kernel.try_wait().expect("wait for linux.uml").is_none() {
        if started.elapsed() > GUARD {
            // the kernel's helper processes share its process group
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", kernel.id())])
                .status();
            let _ = kernel.wait();
            panic!(
                "linux.uml still running after {} s; console:\n{}",
                GUARD.as_secs(),
                read_or(&console)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = read_or(&out);
    let status = std::fs::read_to_string(&rc).unwrap_or_default();
    println!("{report}");
    assert_eq!(
        status.trim(),
        "0",
        "the probe inside User-Mode Linux failed (exit status {:?}); console:\n{}",
        status.trim(),
        read_or(&console)
    );
    println!(
        "test cgroup_v2_files_read_on_a_real_kernel ... ok ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

fn set_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod init");
}

fn read_or(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| format!("({}: {e})", p.display()))
}

/// A child of the probe in a container's cgroup, told what to hold.
struct Hog {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Hog {
    /// Starts a hog and moves it into cgroup directory `cg`.
    fn start_in(cg: &Path) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("own executable"))
            .env(ROLE, "hog")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the hog");
        write(&cg.join("cgroup.procs"), &child.id().to_string());
        let stdin = child.stdin.take().expect("hog stdin");
        let stdout = BufReader::new(child.stdout.take().expect("hog stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends one command; `true` when the hog answered it.
    fn tell(&mut self, command: &str) -> bool {
        if writeln!(self.stdin, "{command}").is_err() {
            return false;
        }
        let mut line = String::new();
        matches!(self.stdout.read_line(&mut line), Ok(n) if n > 0 && line.trim() == "ok")
    }

    fn hold_mib(&mut self, mib: u64) {
        assert!(
            self.tell(&format!("mem {mib}")),
            "the hog did not hold {mib} MiB"
        );
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hog: `mem N` holds N MiB (touched, in 1 MiB blocks, which glibc maps
/// and unmaps one by one, so a smaller N gives the memory back), `cpu MS`
/// spins for MS ms of wall time; each answered with `ok`.
fn hog() {
    let mut held: Vec<Vec<u8>> = Vec::new();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let mut words = line.split_whitespace();
        let (Some(what), Some(Ok(n))) = (words.next(), words.next().map(str::parse::<u64>)) else {
            return;
        };
        match what {
            "mem" => {
                held.truncate(n as usize);
                while (held.len() as u64) < n {
                    let mut block = vec![0u8; MIB as usize];
                    for page in block.chunks_mut(4096) {
                        page[0] = 1;
                    }
                    held.push(block);
                }
            }
            "cpu" => {
                let until = Instant::now() + Duration::from_millis(n);
                let mut x = 0u64;
                while Instant::now() < until {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            _ => return,
        }
        if writeln!(out, "ok").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

fn write(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap_or_else(|e| panic!("write {text:?} to {}: {e}", p.display()));
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// Prints `what` and checks that it lies in `[lo, hi)` MiB.
fn within_mib(what: &str, bytes: u64, lo: u64, hi: u64) {
    println!("{what}: {:.1} MiB", mib(bytes));
    assert!(
        (lo * MIB..hi * MIB).contains(&bytes),
        "{what}: {:.1} MiB, not in [{lo}, {hi}) MiB",
        mib(bytes)
    );
}

/// Makes directory `rel` below the unified root with the memory and cpu
/// controllers enabled for its children.
fn parent_cgroup(root: &Path, rel: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
    write(&p.join("cgroup.subtree_control"), "+memory +cpu");
    p
}

fn container_cgroup(root: &Path, rel: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
    p
}

/// Inside User-Mode Linux: the checks. Panics (non-zero exit) on the first
/// one that fails; prints what it read.
fn probe() {
    let root = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).expect("cgroup2");
    println!("kernel cgroup2 controllers: {}", controllers.trim());
    write(&root.join("cgroup.subtree_control"), "+memory +cpu");
    let docker_systemd = parent_cgroup(root, "system.slice");
    let docker_cgroupfs = parent_cgroup(root, "docker");
    let podman_cgroupfs = parent_cgroup(root, "libpod_parent");

    // Docker, systemd driver: system.slice/docker-<id>.scope
    let id = "5e1f".repeat(16);
    let cg = container_cgroup(&docker_systemd, &format!("docker-{id}.scope"));
    let docker = Cgroups::new(Layout::Docker);
    let mut hog = Hog::start_in(&cg);
    hog.hold_mib(48);

    let u = docker
        .mem_usage(&id)
        .expect("mem_usage reads the v2 cgroup");
    within_mib("held 48 MiB: memory.current", u.usage_bytes, 48, 64);
    assert_eq!(u.limit_bytes, None, "memory.max is `max`: no limit");
    let now = docker.mem_now(&id).expect("mem_now");
    within_mib("held 48 MiB: working set", now.working_set_bytes, 46, 64);
    let s = docker.stats(&id).expect("stats");
    within_mib("held 48 MiB: stats usage", s.mem_usage_bytes, 48, 64);
    let peak_48 = s.mem_peak_bytes.expect("memory.peak");
    within_mib("held 48 MiB: stats peak", peak_48, 48, 64);
    assert!(peak_48 >= s.mem_usage_bytes, "peak below usage: {s:?}");
    assert!(s.cpu_total_ns > 0, "no CPU time: {s:?}");
    assert!(
        s.read_s.is_some() && s.mem_limit_bytes.is_none(),
        "stats {s:?}"
    );

    // the kernel's files carry the keys the parsers look for
    let file = |name: &str| std::fs::read_to_string(cg.join(name)).expect(name);
    for (name, key) in [
        ("memory.stat", "inactive_file"),
        ("memory.events", "oom_kill"),
        ("cpu.stat", "usage_usec"),
        ("cpu.stat", "nr_throttled"),
        ("cpu.stat", "throttled_usec"),
    ] {
        assert!(
            stat_value(&file(name), key).is_some(),
            "{name} has no `{key}`"
        );
    }

    // freed: usage falls, the high-water mark stays
    hog.hold_mib(8);
    let s = docker.stats(&id).expect("stats");
    println!(
        "back to 8 MiB: stats usage {:.1} MiB, peak {:.1} MiB",
        mib(s.mem_usage_bytes),
        mib(s.mem_peak_bytes.unwrap_or(0))
    );
    assert!(s.mem_usage_bytes < 24 * MIB, "usage after freeing: {s:?}");
    assert!(s.mem_peak_bytes >= Some(peak_48), "memory.peak fell: {s:?}");

    // a limit, as a resize writes it
    write(&cg.join("memory.max"), &(40 * MIB).to_string());
    let u = docker.mem_usage(&id).expect("mem_usage");
    println!("memory.max 40 MiB: limit read {:?}", u.limit_bytes);
    assert_eq!(u.limit_bytes, Some(40 * MIB));
    assert_eq!(
        docker.stats(&id).and_then(|s| s.mem_limit_bytes),
        Some(40 * MIB)
    );

    // a CFS quota: 10 ms per 100 ms, then half a second of spinning
    write(&cg.join("cpu.max"), "10000 100000");
    let before = docker.stats(&id).expect("stats");
    assert!(hog.tell("cpu 500"), "the hog did not spin");
    let after = docker.stats(&id).expect("stats");
    let used_ms = (after.cpu_total_ns - before.cpu_total_ns) as f64 / 1e6;
    println!(
        "spun 500 ms under a 10% quota: {used_ms:.1} ms of CPU, throttled {:?} periods, {:?} ns",
        after.cpu_nr_throttled, after.cpu_throttled_ns
    );
    assert!(
        used_ms > 5.0,
        "no CPU time counted: {before:?} -> {after:?}"
    );
    assert!(
        after.cpu_nr_throttled > before.cpu_nr_throttled.or(Some(0))
            && after.cpu_throttled_ns > Some(0),
        "no throttling counted: {before:?} -> {after:?}"
    );

    // over the limit: the cgroup's OOM killer
    assert_eq!(docker.oom_kills(&id), Some(0));
    let answered = hog.tell("mem 64");
    let status = hog.child.wait().expect("wait for the hog");
    println!("asked 64 MiB under 40: answered {answered}, {status}");
    assert!(!answered, "the hog held 64 MiB under a 40 MiB limit");
    let kills = docker.oom_kills(&id);
    println!("oom_kills after: {kills:?}");
    assert_eq!(kills, Some(1), "the OOM kill is not counted");
    drop(hog);

    // Docker, cgroupfs driver: docker/<id>; the same reader finds both
    let id2 = "c0de".repeat(16);
    let cg2 = container_cgroup(&docker_cgroupfs, &id2);
    let mut hog2 = Hog::start_in(&cg2);
    hog2.hold_mib(16);
    let u2 = docker.mem_usage(&id2).expect("mem_usage under docker/<id>");
    within_mib(
        "cgroupfs driver, held 16 MiB: usage",
        u2.usage_bytes,
        16,
        32,
    );
    let u1 = docker.mem_usage(&id).expect("the systemd one again");
    assert!(
        u1.usage_bytes < 8 * MIB,
        "the killed container's usage: {u1:?}"
    );
    assert_eq!(docker.oom_kills(&id2), Some(0));

    // Podman, cgroupfs driver: libpod_parent/libpod-<id>
    let id3 = "9a7e".repeat(16);
    let cg3 = container_cgroup(&podman_cgroupfs, &format!("libpod-{id3}"));
    let mut hog3 = Hog::start_in(&cg3);
    hog3.hold_mib(12);
    let podman = Cgroups::new(Layout::Podman);
    let n3 = podman.mem_now(&id3).expect("mem_now under libpod_parent");
    within_mib(
        "podman layout, held 12 MiB: working set",
        n3.working_set_bytes,
        12,
        28,
    );
    assert_eq!(podman.oom_kills(&id3), Some(0));
    assert!(
        podman.mem_now(&id).is_none(),
        "a Docker id under Podman's layout"
    );
    assert!(docker.mem_usage("../docker").is_none(), "a path for an id");
    println!("all checks passed");
}

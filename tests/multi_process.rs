//! Several processes on one log directory on the real disk (model (g), `seglog model
//! check --model writers`): concurrent `seglog append`s, with `roll`, `compact` and
//! `retain` as separate processes among them and appends killed with `kill -9` at
//! random moments. Without the writer lock, twenty rounds of two concurrent appends
//! acknowledged offsets whose records were not in the log afterwards, and a
//! `compact` beside appends left the log in an ambiguous state.
//!
//! Invariants: every command either succeeds or is refused with the `Locked` error
//! (nothing else); every acknowledged append (exit 0, with its `base_offset`) is in
//! the log at that offset afterwards; a killed writer never leaves the log locked;
//! a refused writer changes no byte.

mod cli_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use seglog::{Log, LogConfig};

use cli_support::{seglog, snapshot};

const LOCKED: &str = "is locked by another writer";

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `args` until it is not refused for the lock; the last output.
fn until_unlocked(args: &[&str]) -> Output {
    loop {
        let out = seglog(args);
        if out.status.success() || !stderr(&out).contains(LOCKED) {
            return out;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Offset -> value of every record `seglog dump` reads.
fn dump(d: &str) -> BTreeMap<i64, String> {
    let out = seglog(&["dump", d]);
    assert!(out.status.success(), "dump: {}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["offset"].as_i64().unwrap(),
                r["value"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn batch(value: &str) -> String {
    // Every key distinct: compaction keeps every record, so each acknowledged one
    // must still be there.
    format!(r#"[{{"key":"{value}","value":"{value}","ts":1}}]"#)
}

#[test]
fn a_second_writer_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p0");
    let d = dir.to_str().unwrap();
    assert!(seglog(&["append", d, "--batch", &batch("a")])
        .status
        .success());
    let (log, _) = Log::open(&dir, LogConfig::default()).unwrap();
    let before = snapshot(&dir);
    for args in [
        vec!["append", d, "--batch", &batch("b")][..].to_vec(),
        vec!["roll", d],
        vec!["recover", d],
        vec!["compact", d, "--now", "10", "--delete-retention-ms", "0"],
        vec!["retain", d, "--now", "10", "--retention-ms", "0"],
    ] {
        let out = seglog(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(LOCKED), "{args:?}: {err}");
        assert!(err.contains("p0.lock"), "{err}");
        // The holder is this test process (its `Log::open`); Linux names it.
        if cfg!(target_os = "linux") {
            let holder = format!("process {}", std::process::id());
            assert!(err.contains(&holder), "{args:?}: {err}");
        }
        assert_eq!(snapshot(&dir), before, "{args:?} changed the log");
    }
    // A read-only command needs no lock.
    assert_eq!(dump(d).len(), 1);
    drop(log);
    let out = seglog(&["append", d, "--batch", &batch("b")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(dump(d).len(), 2);
}

#[test]
fn concurrent_processes_lose_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("p0");
    let d = dir.to_str().unwrap().to_string();
    let segment = ["--segment-bytes", "400"];
    // The log exists before anything runs: `roll`, `compact` and `retain` refuse a
    // missing log (and create nothing).
    let first = seglog(&["append", &d, "--batch", &batch("first")]);
    assert!(first.status.success(), "{}", stderr(&first));
    let acked: Arc<Mutex<Vec<(i64, String)>>> = Arc::new(Mutex::new(vec![(0, "first".into())]));
    let mut threads = Vec::new();
    for w in 0..3 {
        let (d, acked) = (d.clone(), Arc::clone(&acked));
        threads.push(thread::spawn(move || {
            for n in 0..8 {
                let value = format!("w{w}-{n}");
                let b = batch(&value);
                let out = until_unlocked(&[&["append", &d, "--batch", &b][..], &segment].concat());
                assert!(out.status.success(), "append {value}: {}", stderr(&out));
                let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let base = json["base_offset"].as_i64().unwrap();
                acked.lock().unwrap().push((base, value));
            }
        }));
    }
    // Directory-level commands as processes of their own among the appends.
    {
        let d = d.clone();
        threads.push(thread::spawn(move || {
            for n in 0..4 {
                let now = (1000 + n).to_string();
                for args in [
                    vec!["roll", &d],
                    vec!["compact", &d, "--now", &now, "--delete-retention-ms", "0"],
                    vec!["retain", &d, "--now", &now, "--retention-ms", "100000000"],
                ] {
                    let out = until_unlocked(&[&args[..], &segment].concat());
                    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
                }
            }
        }));
    }
    // Appends killed (SIGKILL) at moments spread over their run: whatever they
    // did not acknowledge may be lost; what others acknowledged may not, and the
    // kernel releases their lock.
    {
        let d = d.clone();
        threads.push(thread::spawn(move || {
            for n in 0..6u64 {
                let b = batch(&format!("killed-{n}"));
                let mut child = Command::new(env!("CARGO_BIN_EXE_seglog"))
                    .args(["append", &d, "--batch", &b])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                thread::sleep(Duration::from_millis(1 + n * 3));
                let _ = child.kill();
                let _ = child.wait();
            }
        }));
    }
    // A reader among them: `dump` takes no lock, and whatever state the others
    // leave it in, it reads the log or says an install is pending, nothing else.
    let reading = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let reader = {
        let (d, reading) = (d.clone(), Arc::clone(&reading));
        thread::spawn(move || {
            let (mut reads, mut pending) = (0u32, 0u32);
            while reading.load(std::sync::atomic::Ordering::Relaxed) {
                let out = seglog(&["dump", &d]);
                if out.status.success() {
                    reads += 1;
                } else {
                    let err = stderr(&out);
                    assert!(err.contains("install is pending"), "dump: {err}");
                    pending += 1;
                }
            }
            (reads, pending)
        })
    };
    for t in threads {
        t.join().unwrap();
    }
    reading.store(false, std::sync::atomic::Ordering::Relaxed);
    let (reads, _pending) = reader.join().unwrap();
    assert!(reads > 0, "no dump succeeded");
    // Nothing runs now: an append must get the lock at the first try.
    let out = seglog(&["append", &d, "--batch", &batch("last")]);
    assert!(
        out.status.success(),
        "a killed writer left the log locked: {}",
        stderr(&out)
    );
    let records = dump(&d);
    let acked = acked.lock().unwrap();
    assert_eq!(acked.len(), 25);
    for (offset, value) in acked.iter() {
        assert_eq!(
            records.get(offset),
            Some(value),
            "acknowledged {value} at {offset} is not in the log"
        );
    }
    // Offsets were handed out once each.
    let mut offsets: Vec<i64> = acked.iter().map(|(o, _)| *o).collect();
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(offsets.len(), acked.len());
}

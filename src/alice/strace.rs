//! Parsing `strace -f -qq -xx -s BIG` output into the file-system calls a run made.
//!
//! `-xx` prints every string as `\xHH` escapes, so a path or a write's bytes hold no
//! quote or comma to trip over; `-s` must exceed the largest write, or the data
//! ends in `...` and the parse refuses it. File descriptors are followed through
//! `open`/`openat`/`creat`/`dup*`/`close`; `*at` calls resolve their names against
//! the directory descriptor. Failed calls changed nothing and are dropped; only
//! calls on paths under the run's root are kept.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The system calls `strace -e trace=` must list for [`parse`].
pub const TRACED_CALLS: &str = "open,openat,creat,write,pwrite64,writev,fsync,fdatasync,\
    rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,rmdir,ftruncate,\
    truncate,close,dup,dup2,dup3";

/// One file-system-changing system call, on absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysCall {
    /// `mkdir`/`mkdirat`.
    Mkdir(PathBuf),
    /// An `open` with `O_CREAT` (`truncate`: with `O_TRUNC`), or `creat`.
    Create { path: PathBuf, truncate: bool },
    /// `ftruncate`/`truncate`, or an `open` with `O_TRUNC` but no `O_CREAT`.
    Truncate { path: PathBuf, len: u64 },
    /// `write`/`writev` (at the end: the engine's files are opened `O_APPEND`), or
    /// `pwrite64` at `offset`. Only the bytes the call reported written.
    Write {
        path: PathBuf,
        data: Vec<u8>,
        offset: Option<u64>,
    },
    /// `fsync`/`fdatasync` of a file or directory descriptor.
    Fsync(PathBuf),
    /// `rename`/`renameat`/`renameat2`.
    Rename { from: PathBuf, to: PathBuf },
    /// `link`/`linkat`: a new name `to` for the file at `from` (a carried segment,
    /// a cleaning's tail).
    Link { from: PathBuf, to: PathBuf },
    /// `unlink`, or `unlinkat` without `AT_REMOVEDIR`.
    Unlink(PathBuf),
    /// `rmdir`, or `unlinkat` with `AT_REMOVEDIR`.
    Rmdir(PathBuf),
}

impl SysCall {
    /// The paths the call touches.
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            SysCall::Mkdir(p)
            | SysCall::Create { path: p, .. }
            | SysCall::Truncate { path: p, .. }
            | SysCall::Write { path: p, .. }
            | SysCall::Fsync(p)
            | SysCall::Unlink(p)
            | SysCall::Rmdir(p) => vec![p],
            SysCall::Rename { from, to } | SysCall::Link { from, to } => vec![from, to],
        }
    }
}

impl std::fmt::Display for SysCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SysCall::Mkdir(p) => write!(f, "mkdir {}", p.display()),
            SysCall::Create { path, truncate } => write!(
                f,
                "open {} O_CREAT{}",
                path.display(),
                if *truncate { "|O_TRUNC" } else { "" }
            ),
            SysCall::Truncate { path, len } => write!(f, "truncate {} {len}", path.display()),
            SysCall::Write { path, data, offset } => match offset {
                Some(at) => write!(f, "pwrite {} {} bytes at {at}", path.display(), data.len()),
                None => write!(f, "write {} {} bytes", path.display(), data.len()),
            },
            SysCall::Fsync(p) => write!(f, "fsync {}", p.display()),
            SysCall::Rename { from, to } => {
                write!(f, "rename {} {}", from.display(), to.display())
            }
            SysCall::Link { from, to } => write!(f, "link {} {}", from.display(), to.display()),
            SysCall::Unlink(p) => write!(f, "unlink {}", p.display()),
            SysCall::Rmdir(p) => write!(f, "rmdir {}", p.display()),
        }
    }
}

/// Why a trace could not be read.
fn refuse(line: &str, why: &str) -> String {
    format!("strace line not understood ({why}): {line}")
}

/// Decodes the C escapes strace prints inside a quoted string.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 4);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let escape = bytes.get(i + 1).copied().ok_or("dangling backslash")?;
        match escape {
            b'x' => {
                let hex = s.get(i + 2..i + 4).ok_or("short \\x escape")?;
                out.push(u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
                i += 4;
                continue;
            }
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            other => return Err(format!("escape \\{}", other as char)),
        }
        i += 2;
    }
    Ok(out)
}

/// The quoted strings of an argument list, decoded, each with whether strace cut
/// it short (`"..."...`).
fn quoted(args: &str) -> Result<Vec<(Vec<u8>, bool)>, String> {
    let mut out = Vec::new();
    let mut rest = args;
    while let Some(start) = rest.find('"') {
        let body = &rest[start + 1..];
        // With -xx a quote inside a string is `\x22`, so the next quote closes it.
        let end = body.find('"').ok_or("unclosed string")?;
        let after = &body[end + 1..];
        out.push((unescape(&body[..end])?, after.starts_with("...")));
        rest = after;
    }
    Ok(out)
}

fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// Parses a whole trace: the calls on paths under `root`, in order.
pub fn parse(text: &str, root: &Path) -> Result<Vec<SysCall>, String> {
    let mut fds: HashMap<i64, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for raw_line in text.lines() {
        // "PID name(args) = result"
        let line = raw_line
            .split_once(' ')
            .map_or(raw_line, |(_, rest)| rest)
            .trim();
        if line.starts_with("---") || line.starts_with("+++") || line.is_empty() {
            continue; // signals, exits
        }
        if line.contains("<unfinished") || line.contains("resumed>") {
            // Two threads interleaved: the order of their calls is not this line's.
            return Err(refuse(raw_line, "an interleaved call"));
        }
        let Some((call, rest)) = line.split_once('(') else {
            continue;
        };
        let Some((args, result)) = rest.rsplit_once(')') else {
            continue;
        };
        let Some(result) = result.trim_start().strip_prefix('=') else {
            continue;
        };
        let result: i64 = result
            .split_whitespace()
            .next()
            .and_then(|r| r.parse().ok())
            .unwrap_or(-1);
        let fields: Vec<&str> = args.split(',').map(str::trim).collect();
        let int = |i: usize| -> i64 {
            fields
                .get(i)
                .and_then(|a| a.parse::<i64>().ok())
                .unwrap_or(-1)
        };
        let strings = quoted(args).map_err(|why| refuse(raw_line, &why))?;
        let string = |i: usize| -> Result<PathBuf, String> {
            strings
                .get(i)
                .map(|(bytes, _)| path_of(bytes))
                .ok_or_else(|| refuse(raw_line, "a path is missing"))
        };
        // A name relative to the directory descriptor in argument `fd_arg`.
        let at = |name: PathBuf, fd_arg: Option<usize>| -> Result<PathBuf, String> {
            if name.is_absolute() {
                return Ok(name);
            }
            let dir = fd_arg
                .and_then(|i| fds.get(&int(i)))
                .ok_or_else(|| refuse(raw_line, "a relative path with no known directory"))?;
            Ok(dir.join(name))
        };
        let fd_path = || fds.get(&int(0)).cloned();
        let op = match call {
            "open" | "openat" | "creat" if result >= 0 => {
                let (name, fd_arg) = if call == "openat" {
                    (string(0)?, Some(0))
                } else {
                    (string(0)?, None)
                };
                let path = at(name, fd_arg)?;
                fds.insert(result, path.clone());
                let truncate = args.contains("O_TRUNC") || call == "creat";
                if args.contains("O_CREAT") || call == "creat" {
                    Some(SysCall::Create { path, truncate })
                } else if truncate {
                    Some(SysCall::Truncate { path, len: 0 })
                } else {
                    None
                }
            }
            "close" => {
                fds.remove(&int(0));
                None
            }
            "dup" | "dup2" | "dup3" if result >= 0 => {
                if let Some(p) = fd_path() {
                    fds.insert(result, p);
                }
                None
            }
            "write" | "pwrite64" | "writev" if result >= 0 => match fd_path() {
                Some(path) => {
                    let mut data = Vec::new();
                    for (bytes, cut) in &strings {
                        if *cut {
                            return Err(refuse(raw_line, "data cut short: raise strace -s"));
                        }
                        data.extend_from_slice(bytes);
                    }
                    let written = usize::try_from(result).unwrap_or(usize::MAX);
                    if data.len() < written {
                        return Err(refuse(raw_line, "fewer bytes printed than written"));
                    }
                    data.truncate(written);
                    let offset = (call == "pwrite64")
                        .then(|| fields.last().and_then(|f| f.parse().ok()))
                        .flatten();
                    Some(SysCall::Write { path, data, offset })
                }
                None => None,
            },
            "ftruncate" if result == 0 => fd_path().map(|path| SysCall::Truncate {
                path,
                len: u64::try_from(int(1)).unwrap_or(0),
            }),
            "truncate" if result == 0 => Some(SysCall::Truncate {
                path: string(0)?,
                len: u64::try_from(int(1)).unwrap_or(0),
            }),
            "fsync" | "fdatasync" if result == 0 => fd_path().map(SysCall::Fsync),
            "rename" if result == 0 => Some(SysCall::Rename {
                from: string(0)?,
                to: string(1)?,
            }),
            "renameat" | "renameat2" if result == 0 => Some(SysCall::Rename {
                from: at(string(0)?, Some(0))?,
                to: at(string(1)?, Some(2))?,
            }),
            "link" if result == 0 => Some(SysCall::Link {
                from: string(0)?,
                to: string(1)?,
            }),
            "linkat" if result == 0 => Some(SysCall::Link {
                from: at(string(0)?, Some(0))?,
                to: at(string(1)?, Some(2))?,
            }),
            "unlink" if result == 0 => Some(SysCall::Unlink(string(0)?)),
            "unlinkat" if result == 0 => {
                let path = at(string(0)?, Some(0))?;
                Some(if args.contains("AT_REMOVEDIR") {
                    SysCall::Rmdir(path)
                } else {
                    SysCall::Unlink(path)
                })
            }
            "rmdir" if result == 0 => Some(SysCall::Rmdir(string(0)?)),
            "mkdir" if result == 0 => Some(SysCall::Mkdir(string(0)?)),
            "mkdirat" if result == 0 => Some(SysCall::Mkdir(at(string(0)?, Some(0))?)),
            _ => None,
        };
        if let Some(op) = op {
            if op.paths().iter().all(|p| p.starts_with(root)) {
                out.push(op);
            } else if op.paths().iter().any(|p| p.starts_with(root)) {
                return Err(refuse(raw_line, "a rename across the run's root"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("\\x{b:02x}")).collect()
    }

    #[test]
    fn follows_descriptors_and_decodes_data() {
        let root = Path::new("/r");
        let text = [
            format!(
                "7 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 3",
                hex("/r/a")
            ),
            format!("7 write(3, \"{}\", 3) = 2", hex("xyz")),
            "7 fsync(3) = 0".to_string(),
            "7 close(3) = 0".to_string(),
            format!("7 write(3, \"{}\", 3) = 3", hex("lost")),
            format!(
                "7 openat(AT_FDCWD, \"{}\", O_RDONLY|O_DIRECTORY) = 4",
                hex("/r")
            ),
            format!("7 unlinkat(4, \"{}\", AT_REMOVEDIR) = 0", hex("d")),
            format!("7 unlinkat(4, \"{}\", 0) = -1 ENOENT (x)", hex("e")),
            format!("7 rename(\"{}\", \"{}\") = 0", hex("/r/a"), hex("/r/b")),
            format!(
                "7 linkat(4, \"{}\", AT_FDCWD, \"{}\", 0) = 0",
                hex("b"),
                hex("/r/t/b")
            ),
            format!("7 mkdir(\"{}\", 0777) = 0", hex("/elsewhere")),
            "7 --- SIGCHLD {si_signo=SIGCHLD} ---".to_string(),
        ]
        .join("\n");
        let calls = parse(&text, root).unwrap();
        assert_eq!(
            calls,
            vec![
                SysCall::Create {
                    path: "/r/a".into(),
                    truncate: true
                },
                SysCall::Write {
                    path: "/r/a".into(),
                    data: b"xy".to_vec(),
                    offset: None
                },
                SysCall::Fsync("/r/a".into()),
                SysCall::Rmdir("/r/d".into()),
                SysCall::Rename {
                    from: "/r/a".into(),
                    to: "/r/b".into()
                },
                SysCall::Link {
                    from: "/r/b".into(),
                    to: "/r/t/b".into()
                },
            ]
        );
    }

    #[test]
    fn refuses_cut_data_and_interleaved_threads() {
        let root = Path::new("/r");
        let open = format!("1 open(\"{}\", O_WRONLY|O_APPEND) = 3\n", hex("/r/a"));
        let cut = format!("{open}1 write(3, \"{}\"..., 9) = 9", hex("ab"));
        assert!(parse(&cut, root).unwrap_err().contains("cut short"));
        let split = format!("{open}1 write(3, <unfinished ...>");
        assert!(parse(&split, root).unwrap_err().contains("interleaved"));
    }
}

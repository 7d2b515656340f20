//! Parsing `strace -f -qq -xx -s BIG` output into the file-system calls a run made.
//!
//! `-xx` prints every string as `\xHH` escapes, so a path or a write's bytes hold no
//! quote or comma to trip over; `-s` must exceed the largest write, or the data
//! ends in `...` and the parse refuses it. File descriptors are followed through
//! `open`/`openat`/`creat`/`dup*`/`close`; `*at` calls resolve their names against
//! the directory descriptor. Failed calls changed nothing and are dropped; only
//! calls on paths under the run's root are kept.
//!
//! Two tracees ([`Tracee`]). The `seglog` binary ([`parse`]) writes its files
//! `O_APPEND` and makes its calls on one thread: a `write` goes to the end, and a
//! call split across threads (`<unfinished ...>`) is refused. A JVM
//! ([`parse_as`] with [`Tracee::Jvm`], traced with [`JVM_TRACED_CALLS`]) runs
//! threads of its own beside the one that does the work, and Java's `FileChannel`
//! writes at the descriptor's position: a split call is joined with its
//! `<... resumed>` line (and ordered there, where it returned), the position of
//! each open file description is followed through `open`, `lseek`, `write` and
//! `writev` (shared by `dup`), so a `write` carries the offset it wrote at. Java's
//! reads of a file it writes are positional (`pread64`), which moves no position;
//! a `read` on a written descriptor would, and is not traced: a wrong position
//! shows as a write the replay refuses or as bytes the recording check finds
//! different. A JVM's memory-mapped writes (Kafka's indexes) make no system call:
//! only where `mmap`, `msync` and `munmap` of a file under the root happen is kept.
//! The markers a traced workload leaves at its acknowledgments, a failed
//! `access`/`faccessat` of a [`MARK_PREFIX`] name under the root, are kept as
//! [`SysCall::Mark`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The system calls `strace -e trace=` must list for [`parse`].
pub const TRACED_CALLS: &str = "open,openat,creat,write,pwrite64,writev,fsync,fdatasync,\
    rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,rmdir,ftruncate,\
    truncate,close,dup,dup2,dup3";

/// The system calls a JVM's trace must list for [`parse_as`] with [`Tracee::Jvm`]:
/// [`TRACED_CALLS`], the position moves, the memory maps and the markers.
pub const JVM_TRACED_CALLS: &str = "open,openat,creat,write,pwrite64,writev,pwritev,fsync,\
    fdatasync,rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,rmdir,\
    ftruncate,truncate,close,dup,dup2,dup3,lseek,mmap,munmap,msync,access,faccessat,faccessat2";

/// The file-name prefix of a workload's markers (see [`SysCall::Mark`]).
pub const MARK_PREFIX: &str = ".seglog-mark-";

/// Whose trace it is: how its writes find their offset, and whether its calls may
/// interleave with other threads'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracee {
    /// The `seglog` binary: one thread, `O_APPEND` files.
    Seglog,
    /// A JVM started in the working directory `cwd` (names relative to
    /// `AT_FDCWD` resolve against it).
    Jvm { cwd: PathBuf },
}

/// One file-system-changing system call, on absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysCall {
    /// `mkdir`/`mkdirat`.
    Mkdir(PathBuf),
    /// An `open` with `O_CREAT` (`truncate`: with `O_TRUNC`), or `creat`.
    Create { path: PathBuf, truncate: bool },
    /// `ftruncate`/`truncate`, or an `open` with `O_TRUNC` but no `O_CREAT`.
    Truncate { path: PathBuf, len: u64 },
    /// `write`/`writev` (`offset` `None`: at the end, the engine's files are
    /// opened `O_APPEND`; in a JVM's trace, a descriptor without `O_APPEND` writes
    /// at its position, `Some`), or `pwrite64`/`pwritev` at `offset`. Only the
    /// bytes the call reported written.
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
    /// A JVM's `mmap` of `len` bytes of the file at `offset`, `MAP_SHARED`;
    /// `writable` (`PROT_WRITE`): writes to it reach the file without a system
    /// call.
    Mmap {
        path: PathBuf,
        offset: u64,
        len: u64,
        writable: bool,
    },
    /// `msync` of (part of) a mapping of the file: its written pages made durable.
    Msync(PathBuf),
    /// `munmap` of a mapping of the file.
    Munmap(PathBuf),
    /// A traced workload's acknowledgment: `access`/`faccessat` of a name under the
    /// root starting with [`MARK_PREFIX`] (it exists nowhere; the call changes
    /// nothing and marks a point of the trace).
    Mark(PathBuf),
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
            | SysCall::Rmdir(p)
            | SysCall::Mmap { path: p, .. }
            | SysCall::Msync(p)
            | SysCall::Munmap(p)
            | SysCall::Mark(p) => vec![p],
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
            SysCall::Mmap {
                path,
                offset,
                len,
                writable,
            } => write!(
                f,
                "mmap {} {len} bytes at {offset}{}",
                path.display(),
                if *writable { " writable" } else { "" }
            ),
            SysCall::Msync(p) => write!(f, "msync {}", p.display()),
            SysCall::Munmap(p) => write!(f, "munmap {}", p.display()),
            SysCall::Mark(p) => write!(f, "mark {}", p.display()),
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

/// An open file description: its file, its position, and whether it appends.
#[derive(Debug, Clone)]
struct Description {
    path: PathBuf,
    position: u64,
    append: bool,
}

/// What a trace has opened and mapped so far.
#[derive(Debug, Default)]
struct Tables {
    /// Descriptor -> index into `descriptions` (a `dup` shares one).
    fds: HashMap<i64, usize>,
    descriptions: Vec<Description>,
    /// File-backed `MAP_SHARED` mappings: start address, length, file.
    maps: Vec<(u64, u64, PathBuf)>,
}

impl Tables {
    fn description(&mut self, fd: i64) -> Option<&mut Description> {
        let index = *self.fds.get(&fd)?;
        self.descriptions.get_mut(index)
    }

    fn open(&mut self, fd: i64, path: PathBuf, append: bool) {
        self.descriptions.push(Description {
            path,
            position: 0,
            append,
        });
        self.fds.insert(fd, self.descriptions.len() - 1);
    }

    /// The mapping holding `address`, as an index into `maps`.
    fn mapping(&self, address: u64) -> Option<usize> {
        self.maps
            .iter()
            .position(|&(start, len, _)| start <= address && address < start.saturating_add(len))
    }
}

/// A number as strace prints it: decimal or `0x` hexadecimal.
fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Parses a whole trace of the `seglog` binary: the calls on paths under `root`, in
/// order.
pub fn parse(text: &str, root: &Path) -> Result<Vec<SysCall>, String> {
    parse_as(text, root, &Tracee::Seglog)
}

/// Parses a whole trace of `tracee`: the calls on paths under `root`, in order.
pub fn parse_as(text: &str, root: &Path, tracee: &Tracee) -> Result<Vec<SysCall>, String> {
    let mut tables = Tables::default();
    // A JVM's calls cut short by another thread's: the start, by thread id.
    let mut started: HashMap<&str, String> = HashMap::new();
    let mut out = Vec::new();
    for raw_line in text.lines() {
        // "PID name(args) = result"
        let (pid, line) = raw_line.split_once(' ').unwrap_or(("", raw_line));
        let line = line.trim();
        if line.starts_with("---") || line.starts_with("+++") || line.is_empty() {
            continue; // signals, exits
        }
        let joined;
        let line = if line.contains("<unfinished") || line.contains("resumed>") {
            if *tracee == Tracee::Seglog {
                // Two threads interleaved: the order of their calls is not this line's.
                return Err(refuse(raw_line, "an interleaved call"));
            }
            if let Some(start) = line.strip_suffix("<unfinished ...>") {
                started.insert(pid, start.to_string());
                continue;
            }
            let (_, tail) = line
                .split_once("resumed>")
                .ok_or_else(|| refuse(raw_line, "an unfinished call that goes on"))?;
            let start = started
                .remove(pid)
                .ok_or_else(|| refuse(raw_line, "a resumed call that never started"))?;
            joined = format!("{start}{tail}");
            joined.as_str()
        } else {
            line
        };
        let Some(op) = parse_line(line, raw_line, tracee, &mut tables)? else {
            continue;
        };
        if op.paths().iter().all(|p| p.starts_with(root)) {
            out.push(op);
        } else if op.paths().iter().any(|p| p.starts_with(root)) {
            return Err(refuse(raw_line, "a rename across the run's root"));
        }
    }
    Ok(out)
}

/// One whole call (`name(args) = result`): the file-system call it made, if any.
fn parse_line(
    line: &str,
    raw_line: &str,
    tracee: &Tracee,
    tables: &mut Tables,
) -> Result<Option<SysCall>, String> {
    let jvm = match tracee {
        Tracee::Seglog => None,
        Tracee::Jvm { cwd } => Some(cwd.as_path()),
    };
    let Some((call, rest)) = line.split_once('(') else {
        return Ok(None);
    };
    // The binary's failed calls (`= -1 ENOENT (No such file)`) end in a `)` of
    // their own and are dropped here; a JVM's markers are failed calls, split at
    // the result's ` = ` instead (strings are escaped: no ` = ` inside them).
    let split = match jvm {
        None => rest
            .rsplit_once(')')
            .and_then(|(args, result)| Some((args, result.trim_start().strip_prefix('=')?))),
        Some(_) => rest
            .rsplit_once(" = ")
            .and_then(|(args, result)| Some((args.trim_end().strip_suffix(')')?, result))),
    };
    let Some((args, result)) = split else {
        return Ok(None);
    };
    let result_text = result.split_whitespace().next().unwrap_or("");
    let result: i64 = result_text.parse().unwrap_or(-1);
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
    let at = |tables: &Tables, name: PathBuf, fd_arg: Option<usize>| -> Result<PathBuf, String> {
        if name.is_absolute() {
            return Ok(name);
        }
        // A JVM's names relative to its working directory (`AT_FDCWD`, or no
        // directory argument at all).
        if let Some(cwd) = jvm {
            if fd_arg.is_none_or(|i| fields.get(i) == Some(&"AT_FDCWD")) {
                return Ok(cwd.join(name));
            }
        }
        let dir = fd_arg
            .and_then(|i| tables.fds.get(&int(i)))
            .and_then(|&d| tables.descriptions.get(d))
            .map(|d| &d.path)
            .ok_or_else(|| refuse(raw_line, "a relative path with no known directory"))?;
        Ok(dir.join(name))
    };
    // The path argument `i` of a call with no directory argument (`rename`,
    // `unlink`, ...): a JVM's relative names resolve against its working directory.
    let named = |i: usize| -> Result<PathBuf, String> {
        let name = string(i)?;
        Ok(match jvm {
            Some(cwd) if name.is_relative() => cwd.join(name),
            _ => name,
        })
    };
    let fd_path = |tables: &mut Tables| tables.description(int(0)).map(|d| d.path.clone());
    let op = match call {
        "open" | "openat" | "creat" if result >= 0 => {
            let fd_arg = (call == "openat").then_some(0);
            let path = at(tables, string(0)?, fd_arg)?;
            tables.open(result, path.clone(), args.contains("O_APPEND"));
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
            tables.fds.remove(&int(0));
            None
        }
        "dup" | "dup2" | "dup3" if result >= 0 => {
            if let Some(&d) = tables.fds.get(&int(0)) {
                tables.fds.insert(result, d);
            }
            None
        }
        "lseek" if jvm.is_some() && result >= 0 => {
            if let Some(d) = tables.description(int(0)) {
                d.position = result.unsigned_abs();
            }
            None
        }
        "write" | "pwrite64" | "writev" | "pwritev" if result >= 0 => {
            let Some(description) = tables.description(int(0)) else {
                return Ok(None);
            };
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
            let positional = call == "pwrite64" || call == "pwritev";
            let offset = if positional {
                fields.last().and_then(|f| f.parse().ok())
            } else if jvm.is_some() && !description.append {
                let at = description.position;
                description.position += result.unsigned_abs();
                Some(at)
            } else {
                None
            };
            Some(SysCall::Write {
                path: description.path.clone(),
                data,
                offset,
            })
        }
        "ftruncate" if result == 0 => fd_path(tables).map(|path| SysCall::Truncate {
            path,
            len: u64::try_from(int(1)).unwrap_or(0),
        }),
        "truncate" if result == 0 => Some(SysCall::Truncate {
            path: named(0)?,
            len: u64::try_from(int(1)).unwrap_or(0),
        }),
        "fsync" | "fdatasync" if result == 0 => fd_path(tables).map(SysCall::Fsync),
        "rename" if result == 0 => Some(SysCall::Rename {
            from: named(0)?,
            to: named(1)?,
        }),
        "renameat" | "renameat2" if result == 0 => Some(SysCall::Rename {
            from: at(tables, string(0)?, Some(0))?,
            to: at(tables, string(1)?, Some(2))?,
        }),
        "link" if result == 0 => Some(SysCall::Link {
            from: named(0)?,
            to: named(1)?,
        }),
        "linkat" if result == 0 => Some(SysCall::Link {
            from: at(tables, string(0)?, Some(0))?,
            to: at(tables, string(1)?, Some(2))?,
        }),
        "unlink" if result == 0 => Some(SysCall::Unlink(named(0)?)),
        "unlinkat" if result == 0 => {
            let path = at(tables, string(0)?, Some(0))?;
            Some(if args.contains("AT_REMOVEDIR") {
                SysCall::Rmdir(path)
            } else {
                SysCall::Unlink(path)
            })
        }
        "rmdir" if result == 0 => Some(SysCall::Rmdir(named(0)?)),
        "mkdir" if result == 0 => Some(SysCall::Mkdir(named(0)?)),
        "mkdirat" if result == 0 => Some(SysCall::Mkdir(at(tables, string(0)?, Some(0))?)),
        "mmap" if jvm.is_some() && fields.get(3).is_some_and(|f| f.contains("MAP_SHARED")) => {
            let (Some(address), Some(len), Some(offset)) = (
                number(result_text),
                fields.get(1).and_then(|f| number(f)),
                fields.get(5).and_then(|f| number(f)),
            ) else {
                return Ok(None);
            };
            let Some(path) = tables.description(int(4)).map(|d| d.path.clone()) else {
                return Ok(None);
            };
            tables.maps.push((address, len, path.clone()));
            Some(SysCall::Mmap {
                path,
                offset,
                len,
                writable: fields.get(2).is_some_and(|p| p.contains("PROT_WRITE")),
            })
        }
        "munmap" if jvm.is_some() && result == 0 => {
            let Some(index) = fields
                .first()
                .and_then(|f| number(f))
                .and_then(|a| tables.mapping(a))
            else {
                return Ok(None);
            };
            let (_, _, path) = tables.maps.remove(index);
            Some(SysCall::Munmap(path))
        }
        "msync" if jvm.is_some() && result == 0 => fields
            .first()
            .and_then(|f| number(f))
            .and_then(|a| tables.mapping(a))
            .and_then(|index| tables.maps.get(index))
            .map(|(_, _, path)| SysCall::Msync(path.clone())),
        "access" | "faccessat" | "faccessat2" if jvm.is_some() => {
            let fd_arg = (call != "access").then_some(0);
            let path = at(tables, string(0)?, fd_arg)?;
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(MARK_PREFIX))
                .then_some(SysCall::Mark(path))
        }
        _ => None,
    };
    Ok(op)
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

    #[test]
    fn follows_a_jvm_position_through_seeks_threads_and_dups() {
        let root = Path::new("/r");
        let jvm = Tracee::Jvm { cwd: "/w".into() };
        let text = [
            format!(
                "10 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT, 0666) = 5",
                hex("/r/0.log")
            ),
            "10 lseek(5, 0, SEEK_SET)            = 0".to_string(),
            format!("10 write(5, \"{}\", 3) = 3", hex("abc")),
            // Another thread's call cuts this one in two.
            format!("10 write(5, \"{}\", 2 <unfinished ...>", hex("de")),
            format!("11 openat(AT_FDCWD, \"{}\", O_RDONLY) = 6", hex("x.jar")),
            "10 <... write resumed>)             = 2".to_string(),
            format!("10 pwrite64(5, \"{}\", 1, 1) = 1", hex("Z")),
            "10 lseek(5, 0, SEEK_END) = 5".to_string(),
            "10 dup(5) = 8".to_string(),
            format!("10 write(8, \"{}\", 1) = 1", hex("f")),
            format!("10 write(5, \"{}\", 1) = 1", hex("g")),
            format!("10 open(\"{}\", O_WRONLY|O_APPEND) = 9", hex("/r/a")),
            format!("10 write(9, \"{}\", 1) = 1", hex("h")),
            format!(
                "10 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0666) = 10",
                hex("rel")
            ),
            format!("10 write(10, \"{}\", 1) = 1", hex("i")),
        ]
        .join("\n");
        let calls = parse_as(&text, root, &jvm).unwrap();
        let write = |data: &[u8], offset: Option<u64>, path: &str| SysCall::Write {
            path: path.into(),
            data: data.to_vec(),
            offset,
        };
        assert_eq!(
            calls,
            vec![
                SysCall::Create {
                    path: "/r/0.log".into(),
                    truncate: false
                },
                write(b"abc", Some(0), "/r/0.log"),
                write(b"de", Some(3), "/r/0.log"),
                write(b"Z", Some(1), "/r/0.log"),
                write(b"f", Some(5), "/r/0.log"),
                write(b"g", Some(6), "/r/0.log"),
                write(b"h", None, "/r/a"),
            ]
        );
        // The binary's own trace: a split call is refused, a write is at the end.
        assert!(parse(&text, root).unwrap_err().contains("interleaved"));
        let whole: Vec<&str> = text.lines().take(3).collect();
        assert_eq!(
            parse(&whole.join("\n"), root).unwrap()[1],
            write(b"abc", None, "/r/0.log")
        );
    }

    #[test]
    fn keeps_a_jvm_index_map_and_the_markers() {
        let root = Path::new("/r");
        let jvm = Tracee::Jvm { cwd: "/w".into() };
        let index = "/r/0.index";
        let text = [
            format!(
                "10 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT, 0666) = 7",
                hex(index)
            ),
            "10 ftruncate(7, 4096) = 0".to_string(),
            "10 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 7, 0) = 0x7f0000001000"
                .to_string(),
            "10 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE|MAP_DENYWRITE, 7, 0x2000) = 0x7f0000100000"
                .to_string(),
            "10 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 7, 0x2000) = 0x7f0000200000".to_string(),
            "10 close(7) = 0".to_string(),
            "10 msync(0x7f0000001800, 16, MS_SYNC) = 0".to_string(),
            "10 msync(0x7f0000100000, 16, MS_SYNC) = 0".to_string(),
            "10 munmap(0x7f0000001000, 4096) = 0".to_string(),
            "10 msync(0x7f0000001000, 16, MS_SYNC) = 0".to_string(),
            format!(
                "10 access(\"{}\", F_OK) = -1 ENOENT (No such file or directory)",
                hex("/r/.seglog-mark-3-flush")
            ),
            format!("10 access(\"{}\", F_OK) = 0", hex("/r/0.index")),
            format!(
                "10 access(\"{}\", F_OK) = -1 ENOENT (No such file)",
                hex("/elsewhere/.seglog-mark-0-x")
            ),
        ]
        .join("\n");
        let calls = parse_as(&text, root, &jvm).unwrap();
        assert_eq!(
            calls,
            vec![
                SysCall::Create {
                    path: index.into(),
                    truncate: false
                },
                SysCall::Truncate {
                    path: index.into(),
                    len: 4096
                },
                SysCall::Mmap {
                    path: index.into(),
                    offset: 0,
                    len: 4096,
                    writable: true
                },
                SysCall::Mmap {
                    path: index.into(),
                    offset: 8192,
                    len: 4096,
                    writable: false
                },
                SysCall::Msync(index.into()),
                SysCall::Munmap(index.into()),
                SysCall::Mark("/r/.seglog-mark-3-flush".into()),
            ]
        );
        // The binary's trace keeps none of them.
        assert_eq!(parse(&text, root).unwrap().len(), 2);
    }

    #[test]
    fn resolves_a_jvm_relative_name_against_its_working_directory() {
        let root = Path::new("/r");
        let text = format!("10 unlink(\"{}\") = 0", hex("sub/x"));
        let inside = Tracee::Jvm { cwd: "/r".into() };
        assert_eq!(
            parse_as(&text, root, &inside).unwrap(),
            vec![SysCall::Unlink("/r/sub/x".into())]
        );
        let outside = Tracee::Jvm { cwd: "/w".into() };
        assert_eq!(parse_as(&text, root, &outside).unwrap(), vec![]);
        assert_eq!(parse(&text, root).unwrap(), vec![]);
    }
}

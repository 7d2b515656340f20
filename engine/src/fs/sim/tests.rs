//! Tests of the SimFs persistence model, one per rule of docs/verification.md,
//! "The simulated file system and its persistence model".

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;

fn p(s: &str) -> &Path {
    Path::new(s)
}

type Tree = BTreeMap<PathBuf, Vec<u8>>;

fn power_loss(fs: &SimFs) -> Vec<CrashImage> {
    fs.crash_images(CrashMode::PowerLoss, usize::MAX)
}

/// The distinct file trees the power-loss images hold.
fn trees(fs: &SimFs) -> BTreeSet<Tree> {
    power_loss(fs).iter().map(|i| i.fs.snapshot()).collect()
}

fn tree(files: &[(&str, &[u8])]) -> Tree {
    files
        .iter()
        .map(|(path, data)| (PathBuf::from(path), data.to_vec()))
        .collect()
}

/// A directory `/d` whose creation is durable.
fn fs_with_dir() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(p("/d")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    assert_eq!(fs.pending_dir_ops(), 0);
    fs
}

#[test]
fn behaves_like_a_file_system() {
    let fs = SimFs::new();
    fs.create_dir_all(p("/a/b")).unwrap();
    fs.create_dir_all(p("/a/b")).unwrap();
    fs.write_new(p("/a/b/z"), b"zz").unwrap();
    fs.write_new(p("/a/b/y"), b"hello").unwrap();
    fs.append(p("/a/b/y"), b" world").unwrap();
    assert_eq!(fs.read_all(p("/a/b/y")).unwrap(), b"hello world");
    let mut buf = [0u8; 4];
    assert_eq!(fs.read_at(p("/a/b/y"), 9, &mut buf).unwrap(), 2);
    assert_eq!(&buf[..2], b"ld");
    assert_eq!(fs.read_at(p("/a/b/y"), 99, &mut buf).unwrap(), 0);
    assert_eq!(fs.list_dir(p("/a/b")).unwrap(), vec!["y", "z"]);
    assert_eq!(fs.len(p("/a/b/y")).unwrap(), 11);
    fs.set_len(p("/a/b/y"), 5).unwrap();
    assert_eq!(fs.read_all(p("/a/b/y")).unwrap(), b"hello");
    fs.set_len(p("/a/b/y"), 7).unwrap();
    assert_eq!(fs.read_all(p("/a/b/y")).unwrap(), b"hello\0\0");
    fs.create_file(p("/a/b/y")).unwrap();
    assert_eq!(fs.len(p("/a/b/y")).unwrap(), 0);
    assert!(
        fs.exists(p("a/b/z")),
        "relative paths resolve from the root"
    );
    assert!(fs.is_dir(p("/a/b")));
    assert!(!fs.is_dir(p("/a/b/z")));
    fs.rename(p("/a/b/z"), p("/a/b/y")).unwrap();
    assert_eq!(fs.read_all(p("/a/b/y")).unwrap(), b"zz");
    assert!(!fs.exists(p("/a/b/z")));
    // A whole directory moves with its entries.
    fs.rename(p("/a/b"), p("/a/b.compact-bak")).unwrap();
    assert_eq!(fs.read_all(p("/a/b.compact-bak/y")).unwrap(), b"zz");
    assert!(!fs.exists(p("/a/b")));
    fs.remove_file(p("/a/b.compact-bak/y")).unwrap();
    assert!(fs.list_dir(p("/a/b.compact-bak")).unwrap().is_empty());
    fs.remove_dir_all(p("/a")).unwrap();
    assert_eq!(fs.snapshot_dirs(), BTreeSet::from([PathBuf::from("/")]));
    assert!(fs.snapshot().is_empty());
}

#[test]
fn errors_match_the_os() {
    let fs = SimFs::new();
    let kind = |r: io::Result<()>| r.unwrap_err().kind();
    assert_eq!(kind(fs.append(p("/x"), b"1")), ErrorKind::NotFound);
    assert_eq!(kind(fs.create_file(p("/no/x"))), ErrorKind::NotFound);
    assert_eq!(kind(fs.remove_file(p("/x"))), ErrorKind::NotFound);
    assert_eq!(kind(fs.rename(p("/x"), p("/y"))), ErrorKind::NotFound);
    assert_eq!(kind(fs.sync_file(p("/x"))), ErrorKind::NotFound);
    assert_eq!(
        fs.list_dir(p("/x")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    fs.create_dir_all(p("/d/e")).unwrap();
    fs.write_new(p("/f"), b"1").unwrap();
    assert_eq!(kind(fs.create_dir_all(p("/f"))), ErrorKind::AlreadyExists);
    assert_eq!(kind(fs.create_dir_all(p("/f/g"))), ErrorKind::NotADirectory);
    assert_eq!(kind(fs.create_file(p("/f/g"))), ErrorKind::NotADirectory);
    assert_eq!(kind(fs.create_file(p("/d"))), ErrorKind::IsADirectory);
    assert_eq!(kind(fs.append(p("/d"), b"1")), ErrorKind::IsADirectory);
    assert_eq!(kind(fs.remove_file(p("/d"))), ErrorKind::IsADirectory);
    assert_eq!(kind(fs.remove_dir_all(p("/f"))), ErrorKind::NotADirectory);
    assert_eq!(kind(fs.sync_dir(p("/f"))), ErrorKind::NotADirectory);
    assert_eq!(
        fs.list_dir(p("/f")).unwrap_err().kind(),
        ErrorKind::NotADirectory
    );
    assert_eq!(kind(fs.rename(p("/f"), p("/d"))), ErrorKind::IsADirectory);
    assert_eq!(kind(fs.rename(p("/d"), p("/f"))), ErrorKind::NotADirectory);
    fs.create_dir_all(p("/full/x")).unwrap();
    assert_eq!(
        kind(fs.rename(p("/d"), p("/full"))),
        ErrorKind::DirectoryNotEmpty
    );
    assert_eq!(
        kind(fs.rename(p("/d"), p("/d/e/in"))),
        ErrorKind::InvalidInput
    );
    // A directory may replace an empty one, as rename(2) allows.
    fs.rename(p("/d"), p("/full/x")).unwrap();
    assert!(fs.is_dir(p("/full/x/e")));
    // Nothing that failed changed the tree.
    assert_eq!(fs.snapshot(), tree(&[("/f", b"1")]));
}

#[test]
fn synced_data_and_synced_entries_always_survive() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"durable").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/a"), b"+more").unwrap();
    fs.write_new(p("/d/b"), b"new").unwrap();
    let images = power_loss(&fs);
    assert!(images.len() > 3);
    for image in &images {
        let data = image.fs.read_all(p("/d/a")).unwrap();
        assert!(data.starts_with(b"durable"), "{:?}", image.lost);
        assert!(b"durable+more".starts_with(&data), "{:?}", image.lost);
        assert_eq!(image.fs.pending_dir_ops(), 0, "images are fully durable");
    }
    // Nothing pending: a single image, equal to the current tree.
    let quiet = fs_with_dir();
    quiet.write_new(p("/d/a"), b"x").unwrap();
    quiet.sync_file(p("/d/a")).unwrap();
    quiet.sync_dir(p("/d")).unwrap();
    let images = power_loss(&quiet);
    assert_eq!(images.len(), 1);
    assert!(images[0].lost.is_empty());
    assert_eq!(images[0].fs.snapshot(), quiet.snapshot());
}

#[test]
fn unsynced_append_keeps_none_all_or_a_torn_cut() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/seg"), b"0123456789").unwrap();
    fs.sync_file(p("/d/seg")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/seg"), b"abcdefgh").unwrap();
    let lens: BTreeSet<usize> = trees(&fs)
        .iter()
        .map(|t| t[Path::new("/d/seg")].len())
        .collect();
    // none, a cut inside the (last) append, one byte short, all.
    assert_eq!(lens, BTreeSet::from([10, 14, 17, 18]));
    let torn = power_loss(&fs)
        .into_iter()
        .find(|i| i.fs.len(p("/d/seg")).unwrap() == 14)
        .unwrap();
    assert_eq!(
        torn.lost,
        vec![LostItem::FileBytes {
            path: "/d/seg".into(),
            kept: 14,
            written: 18,
        }]
    );
    assert_eq!(torn.fs.read_all(p("/d/seg")).unwrap(), b"0123456789abcd");
}

#[test]
fn several_appends_cut_at_the_last_boundary_and_inside_it() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/seg"), b"").unwrap();
    fs.sync_file(p("/d/seg")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/seg"), b"aaaa").unwrap();
    fs.append(p("/d/seg"), b"bbbb").unwrap();
    fs.append(p("/d/seg"), b"cccc").unwrap();
    let lens: BTreeSet<usize> = trees(&fs)
        .iter()
        .map(|t| t[Path::new("/d/seg")].len())
        .collect();
    // none, inside first (2), boundary (4), boundary before last (8),
    // inside last (10), one short (11), all (12).
    assert_eq!(lens, BTreeSet::from([0, 2, 4, 8, 10, 11, 12]));
}

#[test]
fn write_temp_sync_rename_without_dir_sync_shows_both_outcomes() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/ckpt"), b"old").unwrap();
    fs.sync_file(p("/d/ckpt")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.write_new(p("/d/ckpt.tmp"), b"new").unwrap();
    fs.sync_file(p("/d/ckpt.tmp")).unwrap();
    fs.rename(p("/d/ckpt.tmp"), p("/d/ckpt")).unwrap();
    let outcomes = trees(&fs);
    assert!(outcomes.contains(&tree(&[("/d/ckpt", b"new")])));
    assert!(outcomes.contains(&tree(&[("/d/ckpt", b"old")])));
    assert!(outcomes.contains(&tree(&[("/d/ckpt", b"old"), ("/d/ckpt.tmp", b"new")])));
    for outcome in &outcomes {
        // Rename is atomic: never a missing or a mixed checkpoint.
        let ckpt = &outcome[Path::new("/d/ckpt")];
        assert!(ckpt == b"old" || ckpt == b"new", "{outcome:?}");
    }
    // With the directory synced only the new name remains.
    fs.sync_dir(p("/d")).unwrap();
    assert_eq!(trees(&fs), BTreeSet::from([tree(&[("/d/ckpt", b"new")])]));
}

#[test]
fn lost_rename_of_a_synced_file_brings_the_old_name_back() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"data").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.rename(p("/d/a"), p("/d/b")).unwrap();
    let images = power_loss(&fs);
    let lost: Vec<_> = images.iter().filter(|i| !i.lost.is_empty()).collect();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].fs.snapshot(), tree(&[("/d/a", b"data")]));
    assert_eq!(
        lost[0].lost[0].to_string(),
        "dir-op seq=2 dir=/d op=rename a -> b"
    );
    assert_eq!(images[0].fs.snapshot(), tree(&[("/d/b", b"data")]));
}

#[test]
fn synced_file_with_unsynced_entry_may_vanish() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"data").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    assert_eq!(
        trees(&fs),
        BTreeSet::from([tree(&[]), tree(&[("/d/a", b"data")])])
    );
    // A new directory needs its parent synced too, not only itself.
    fs.sync_dir(p("/d")).unwrap();
    fs.create_dir_all(p("/d/sub")).unwrap();
    fs.write_new(p("/d/sub/x"), b"x").unwrap();
    fs.sync_file(p("/d/sub/x")).unwrap();
    fs.sync_dir(p("/d/sub")).unwrap();
    assert!(trees(&fs).contains(&tree(&[("/d/a", b"data")])));
    fs.sync_dir(p("/d")).unwrap();
    assert_eq!(
        trees(&fs),
        BTreeSet::from([tree(&[("/d/a", b"data"), ("/d/sub/x", b"x")])])
    );
}

#[test]
fn unsynced_remove_brings_the_file_back_with_its_durable_data() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"durable").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/a"), b"+unsynced").unwrap();
    fs.remove_file(p("/d/a")).unwrap();
    assert_eq!(
        trees(&fs),
        BTreeSet::from([tree(&[]), tree(&[("/d/a", b"durable")])])
    );
    fs.sync_dir(p("/d")).unwrap();
    assert_eq!(trees(&fs), BTreeSet::from([tree(&[])]));
}

#[test]
fn directory_rename_carries_its_entries() {
    let fs = SimFs::new();
    fs.create_dir_all(p("/log/p-0")).unwrap();
    fs.write_new(p("/log/p-0/0.log"), b"seg").unwrap();
    fs.sync_file(p("/log/p-0/0.log")).unwrap();
    fs.sync_dir(p("/log/p-0")).unwrap();
    fs.sync_dir(p("/log")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    fs.rename(p("/log/p-0"), p("/log/p-0.compact-bak")).unwrap();
    fs.create_dir_all(p("/log/p-0")).unwrap();
    let outcomes = trees(&fs);
    assert!(outcomes.contains(&tree(&[("/log/p-0/0.log", b"seg")])));
    assert!(outcomes.contains(&tree(&[("/log/p-0.compact-bak/0.log", b"seg")])));
    for outcome in &outcomes {
        assert_eq!(outcome.len(), 1, "the segment is in exactly one place");
    }
    // Keeping the mkdir of the new p-0 needs the rename that freed the name.
    let both_dirs = power_loss(&fs)
        .into_iter()
        .filter(|i| i.fs.is_dir(p("/log/p-0")) && i.fs.is_dir(p("/log/p-0.compact-bak")))
        .count();
    assert_eq!(both_dirs, 1);
    fs.sync_dir(p("/log")).unwrap();
    let after = power_loss(&fs);
    assert_eq!(after.len(), 1);
    assert!(after[0].fs.list_dir(p("/log/p-0")).unwrap().is_empty());
}

#[test]
fn removed_directory_comes_back_whole_unless_the_parent_is_synced() {
    let fs = fs_with_dir();
    fs.create_dir_all(p("/d/old")).unwrap();
    fs.write_new(p("/d/old/x"), b"x").unwrap();
    fs.sync_file(p("/d/old/x")).unwrap();
    fs.sync_dir(p("/d/old")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.remove_dir_all(p("/d/old")).unwrap();
    assert_eq!(
        trees(&fs),
        BTreeSet::from([tree(&[]), tree(&[("/d/old/x", b"x")])])
    );
}

#[test]
fn few_pending_ops_give_every_subset() {
    let fs = fs_with_dir();
    for name in ["a", "b", "c"] {
        fs.create_file(&Path::new("/d").join(name)).unwrap();
    }
    let images = power_loss(&fs);
    assert_eq!(images.len(), 8, "2^3 subsets");
    let names: BTreeSet<Vec<String>> = images
        .iter()
        .map(|i| i.fs.list_dir(p("/d")).unwrap())
        .collect();
    assert_eq!(names.len(), 8);
}

#[test]
fn many_pending_ops_give_prefixes_and_single_losses() {
    let fs = fs_with_dir();
    let names = ["a", "b", "c", "d", "e", "f"];
    for name in names {
        fs.create_file(&Path::new("/d").join(name)).unwrap();
    }
    let listed: BTreeSet<Vec<String>> = power_loss(&fs)
        .iter()
        .map(|i| i.fs.list_dir(p("/d")).unwrap())
        .collect();
    let mut expected = BTreeSet::new();
    for kept in 0..=names.len() {
        expected.insert(names[..kept].iter().map(|s| s.to_string()).collect());
    }
    for lost in names {
        expected.insert(
            names
                .iter()
                .filter(|n| **n != lost)
                .map(|s| s.to_string())
                .collect(),
        );
    }
    assert_eq!(listed, expected);
    assert_eq!(listed.len(), 7 + 5);
}

#[test]
fn cross_directory_rename_needs_both_parents_synced() {
    let fs = SimFs::new();
    fs.create_dir_all(p("/a")).unwrap();
    fs.create_dir_all(p("/b")).unwrap();
    fs.write_new(p("/a/x"), b"x").unwrap();
    fs.sync_file(p("/a/x")).unwrap();
    for dir in ["/a", "/b", "/"] {
        fs.sync_dir(p(dir)).unwrap();
    }
    fs.rename(p("/a/x"), p("/b/y")).unwrap();
    fs.sync_dir(p("/b")).unwrap();
    let outcomes = trees(&fs);
    assert_eq!(
        outcomes,
        BTreeSet::from([tree(&[("/a/x", b"x")]), tree(&[("/b/y", b"x")])]),
        "atomic: the file is never in both places nor lost"
    );
    fs.sync_dir(p("/a")).unwrap();
    assert_eq!(trees(&fs), BTreeSet::from([tree(&[("/b/y", b"x")])]));
}

#[test]
fn truncating_durable_data_may_be_undone() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/idx"), b"0123456789").unwrap();
    fs.sync_file(p("/d/idx")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.set_len(p("/d/idx"), 4).unwrap();
    fs.append(p("/d/idx"), b"ab").unwrap();
    let images = power_loss(&fs);
    let contents: BTreeSet<Vec<u8>> = images
        .iter()
        .map(|i| i.fs.read_all(p("/d/idx")).unwrap())
        .collect();
    let expected: BTreeSet<Vec<u8>> = [&b"0123456789"[..], b"0123", b"0123a", b"0123ab"]
        .iter()
        .map(|s| s.to_vec())
        .collect();
    assert_eq!(contents, expected);
    assert!(images.iter().any(|i| i.lost
        == vec![LostItem::FileRewrite {
            path: "/d/idx".into()
        }]));
}

#[test]
fn process_crash_keeps_everything_completed_but_not_durability() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"data").unwrap();
    let images = fs.crash_images(CrashMode::Process, 10);
    assert_eq!(images.len(), 1);
    assert!(images[0].lost.is_empty());
    assert_eq!(images[0].fs.snapshot(), fs.snapshot());
    // The page cache survives a process crash; a later power loss can still bite.
    assert!(trees(&images[0].fs).contains(&tree(&[])));
    assert!(fs.crash_images(CrashMode::Process, 0).is_empty());
}

#[test]
fn crash_before_k_freezes_the_state_before_op_k() {
    let workload = |fs: &SimFs| -> io::Result<()> {
        fs.create_dir_all(p("/d"))?;
        fs.write_new(p("/d/a"), b"1")?;
        fs.sync_file(p("/d/a"))?;
        fs.rename(p("/d/a"), p("/d/b"))?;
        fs.sync_dir(p("/d"))
    };
    let full = SimFs::new();
    workload(&full).unwrap();
    let ops = full.mutating_ops();
    assert_eq!(ops, 6);
    let mut trees_seen = Vec::new();
    for k in 0..=ops {
        let fs = SimFs::new();
        fs.set_crash_before(k);
        let result = workload(&fs);
        assert_eq!(result.is_err(), k < ops, "k={k}");
        assert_eq!(fs.mutating_ops(), k);
        assert_eq!(fs.is_crashed(), k < ops);
        if k < ops {
            let err = result.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Other);
            assert_eq!(err.to_string(), CRASH_MESSAGE);
            assert!(
                fs.read_all(p("/d/a")).is_err(),
                "reads fail after the crash too"
            );
            assert!(fs.sync_dir(p("/")).is_err());
        }
        trees_seen.push(fs.snapshot());
    }
    assert_eq!(trees_seen[0], tree(&[]));
    assert_eq!(trees_seen[2], tree(&[("/d/a", b"")]));
    assert_eq!(trees_seen[3], tree(&[("/d/a", b"1")]));
    assert_eq!(trees_seen[5], tree(&[("/d/b", b"1")]));
    assert_eq!(trees_seen[6], full.snapshot());
}

#[test]
fn fail_nth_fails_one_op_only() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"1").unwrap();
    let next = fs.mutating_ops();
    fs.fail_nth(next);
    let err = fs.append(p("/d/a"), b"2").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Other);
    assert_eq!(err.to_string(), INJECTED_MESSAGE);
    assert_eq!(
        fs.read_all(p("/d/a")).unwrap(),
        b"1",
        "the failed op changed nothing"
    );
    fs.append(p("/d/a"), b"3").unwrap();
    assert_eq!(fs.read_all(p("/d/a")).unwrap(), b"13");
    assert!(!fs.is_crashed());
    assert_eq!(fs.mutating_ops(), next + 2);
}

/// A state with pending ops, unsynced appends and a truncation, for the
/// determinism and replay tests.
fn busy_fs() -> SimFs {
    let fs = fs_with_dir();
    fs.write_new(p("/d/0.log"), b"batch-0").unwrap();
    fs.sync_file(p("/d/0.log")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/0.log"), b"batch-1").unwrap();
    fs.append(p("/d/0.log"), b"batch-2").unwrap();
    fs.write_new(p("/d/0.index"), b"idx").unwrap();
    fs.set_len(p("/d/0.index"), 1).unwrap();
    fs.write_new(p("/d/ckpt.tmp"), b"7").unwrap();
    fs.sync_file(p("/d/ckpt.tmp")).unwrap();
    fs.rename(p("/d/ckpt.tmp"), p("/d/ckpt")).unwrap();
    fs.create_dir_all(p("/d/sub")).unwrap();
    fs
}

#[test]
fn images_are_deterministic_and_replayable_from_their_lost_items() {
    let fs = busy_fs();
    let first = power_loss(&fs);
    let second = power_loss(&fs);
    assert!(first.len() > 10);
    assert_eq!(first.len(), second.len());
    let mut descriptions = BTreeSet::new();
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.lost, b.lost);
        assert_eq!(a.fs.snapshot(), b.fs.snapshot());
        assert!(
            descriptions.insert(a.lost.clone()),
            "duplicate image {:?}",
            a.lost
        );
        // Print, parse, rebuild: the same image.
        let lines: Vec<String> = a.lost.iter().map(ToString::to_string).collect();
        let parsed: Vec<LostItem> = lines.iter().map(|l| l.parse().unwrap()).collect();
        assert_eq!(parsed, a.lost);
        let rebuilt = fs.crash_image_with(&parsed).unwrap();
        assert_eq!(rebuilt.snapshot(), a.fs.snapshot(), "{lines:?}");
        assert_eq!(rebuilt.snapshot_dirs(), a.fs.snapshot_dirs(), "{lines:?}");
    }
    assert!(first[0].lost.is_empty(), "everything completed comes first");
    assert_eq!(first[0].fs.snapshot(), fs.snapshot());
    let only_durable = first[1].fs.snapshot();
    assert_eq!(only_durable, tree(&[("/d/0.log", b"batch-0")]));
}

#[test]
fn limit_keeps_the_required_images_first() {
    let fs = busy_fs();
    let all = power_loss(&fs);
    let few = fs.crash_images(CrashMode::PowerLoss, 3);
    assert_eq!(few.len(), 3);
    for (a, b) in few.iter().zip(&all) {
        assert_eq!(a.lost, b.lost);
    }
}

#[test]
fn replay_rejects_items_that_do_not_fit() {
    let fs = busy_fs();
    let bad = [
        LostItem::DirOp {
            seq: 999,
            dir: "/d".into(),
            op: "create x".into(),
        },
        LostItem::FileBytes {
            path: "/d/0.log".into(),
            kept: 3,
            written: 21,
        },
        LostItem::FileBytes {
            path: "/d/0.log".into(),
            kept: 10,
            written: 99,
        },
        LostItem::FileRewrite {
            path: "/d/0.log".into(),
        },
        LostItem::FileBytes {
            path: "/nope".into(),
            kept: 0,
            written: 0,
        },
    ];
    for item in bad {
        let err = fs
            .crash_image_with(std::slice::from_ref(&item))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{item}");
    }
    assert!("garbage".parse::<LostItem>().is_err());
}

#[test]
fn images_share_file_buffers() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/big"), &vec![7u8; 1 << 16]).unwrap();
    fs.sync_file(p("/d/big")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/big"), &[8u8; 100]).unwrap();
    let images = fs.crash_images(CrashMode::PowerLoss, 10);
    assert!(images.len() >= 3);
    let content = |sim: &SimFs| {
        let inner = sim.lock();
        let ino = inner.state.resolve(p("/d/big")).unwrap();
        match &inner.state.nodes[&ino] {
            Node::File(file) => file.data.clone(),
            Node::Dir(_) => panic!("not a file"),
        }
    };
    let original = content(&fs);
    for image in &images {
        // Torn cuts included: every image is a view of the same buffer.
        assert!(
            original.shares_buffer(&content(&image.fs)),
            "{:?}",
            image.lost
        );
    }
    // Writing to an image copies only there; the original and other images keep theirs.
    let torn = &images[2].fs;
    let torn_len = torn.len(p("/d/big")).unwrap();
    assert!(torn_len < (1 << 16) + 100);
    torn.append(p("/d/big"), b"x").unwrap();
    assert!(!original.shares_buffer(&content(torn)));
    assert_eq!(torn.len(p("/d/big")).unwrap(), torn_len + 1);
    assert_eq!(fs.len(p("/d/big")).unwrap(), (1 << 16) + 100);
    assert_eq!(fs.read_all(p("/d/big")).unwrap()[(1 << 16)..], [8u8; 100]);
    assert_eq!(images[0].fs.len(p("/d/big")).unwrap(), (1 << 16) + 100);
}

#[test]
fn settle_makes_everything_durable_without_counting() {
    let fs = busy_fs();
    assert!(power_loss(&fs).len() > 1);
    let ops = fs.mutating_ops();
    fs.settle();
    assert_eq!(fs.mutating_ops(), ops);
    assert_eq!(fs.pending_dir_ops(), 0);
    let images = power_loss(&fs);
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].fs.snapshot(), fs.snapshot());
    assert_eq!(images[0].fs.snapshot_dirs(), fs.snapshot_dirs());
}

#[test]
fn syncing_a_later_op_makes_the_earlier_op_on_its_entry_durable() {
    let fs = SimFs::new();
    fs.create_dir_all(p("/e")).unwrap();
    fs.create_dir_all(p("/d")).unwrap();
    fs.write_new(p("/e/x"), b"x").unwrap();
    fs.sync_file(p("/e/x")).unwrap();
    fs.settle();
    fs.rename(p("/e/x"), p("/d/x")).unwrap();
    fs.rename(p("/d/x"), p("/d/z")).unwrap();
    // The second rename is durable by itself; it cannot be without the first one.
    fs.sync_dir(p("/d")).unwrap();
    assert_eq!(fs.pending_dir_ops(), 0);
    assert_eq!(trees(&fs), BTreeSet::from([tree(&[("/d/z", b"x")])]));
}

#[test]
fn a_kept_op_never_outlives_the_lost_op_it_depends_on() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/tmp"), b"t").unwrap();
    fs.sync_file(p("/d/tmp")).unwrap();
    fs.rename(p("/d/tmp"), p("/d/final")).unwrap();
    let images = power_loss(&fs);
    // Losing the create loses the rename of the same entry: 3 images, not 4.
    assert_eq!(images.len(), 3);
    let create = images[1].lost[0].clone();
    let rename = images[1].lost[1].clone();
    assert!(create.to_string().ends_with("op=create tmp"), "{create}");
    let err = fs.crash_image_with(&[create]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let image = fs.crash_image_with(&[rename]).unwrap();
    assert_eq!(image.snapshot(), tree(&[("/d/tmp", b"t")]));
}

#[test]
fn crash_control_works_through_an_arc_dyn_file_system() {
    let sim = Arc::new(SimFs::new());
    let engine_fs: Arc<dyn FileSystem> = sim.clone();
    engine_fs.create_dir_all(p("/d")).unwrap();
    sim.set_crash_before(sim.mutating_ops());
    assert!(!sim.is_crashed());
    let err = engine_fs.create_file(p("/d/x")).unwrap_err();
    assert_eq!(err.to_string(), CRASH_MESSAGE);
    assert!(sim.is_crashed());
    assert!(!sim.snapshot_dirs().is_empty());
    assert!(sim.snapshot().is_empty());
    // Asking for a crash before a call that already ran crashes at once.
    let late = SimFs::new();
    late.create_dir_all(p("/a")).unwrap();
    late.set_crash_before(0);
    assert!(late.is_crashed());
    assert!(late.create_dir_all(p("/b")).is_err());
    assert_eq!(late.snapshot_dirs().len(), 2);
}

#[test]
fn fail_nth_with_returns_real_errors_and_a_short_write_keeps_a_prefix() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"12").unwrap();
    let next = fs.mutating_ops();
    fs.fail_nth_with(next, FaultKind::Eio);
    fs.fail_nth_with(next + 1, FaultKind::Enospc);
    fs.fail_nth_with(next + 2, FaultKind::ShortWrite);
    fs.fail_nth_with(next + 3, FaultKind::ShortWrite);
    let eio = fs.append(p("/d/a"), b"xx").unwrap_err();
    assert_eq!(eio.raw_os_error(), Some(EIO));
    let enospc = fs.create_file(p("/d/b")).unwrap_err();
    assert_eq!(enospc.kind(), ErrorKind::StorageFull);
    assert!(!fs.exists(p("/d/b")), "a failed create creates nothing");
    let short = fs.append(p("/d/a"), b"3456").unwrap_err();
    assert_eq!(short.raw_os_error(), Some(ENOSPC));
    assert_eq!(
        fs.read_all(p("/d/a")).unwrap(),
        b"1234",
        "half the data landed"
    );
    // A short write on any other call fails like ENOSPC and changes nothing.
    assert!(fs.sync_file(p("/d/a")).is_err());
    let fired: Vec<(Call, FaultKind)> =
        fs.fired_faults().iter().map(|f| (f.call, f.kind)).collect();
    assert_eq!(
        fired,
        vec![
            (Call::Append, FaultKind::Eio),
            (Call::CreateFile, FaultKind::Enospc),
            (Call::Append, FaultKind::ShortWrite),
            (Call::SyncFile, FaultKind::ShortWrite),
        ]
    );
    // The prefix is unsynced: a power loss may drop it.
    assert!(trees(&fs).contains(&tree(&[("/d/a", b"")])));
}

#[test]
fn a_sync_out_of_descriptors_dooms_nothing_and_a_later_sync_holds() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"ab").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/a"), b"cd").unwrap();
    fs.fail_nth_with(fs.mutating_ops(), FaultKind::Emfile);
    let error = fs.sync_file(p("/d/a")).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(crate::fs::sim::EMFILE));
    fs.sync_file(p("/d/a")).unwrap();
    // The fsync that failed never ran: the later one makes every byte durable.
    for image in power_loss(&fs) {
        assert_eq!(
            image.fs.read_all(p("/d/a")).unwrap(),
            b"abcd",
            "{:?}",
            image.lost
        );
    }
}

#[test]
fn a_failed_sync_dooms_the_unsynced_bytes_even_after_a_later_sync() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/a"), b"ab").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.append(p("/d/a"), b"cd").unwrap();
    fs.fail_nth_with(fs.mutating_ops(), FaultKind::Eio);
    assert!(fs.sync_file(p("/d/a")).is_err());
    assert_eq!(
        fs.read_all(p("/d/a")).unwrap(),
        b"abcd",
        "the pages still read"
    );
    fs.append(p("/d/a"), b"ef").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    // The later sync "succeeded", yet the doomed pages never reach the disk.
    let images = power_loss(&fs);
    let doomed: Vec<&CrashImage> = images
        .iter()
        .filter(|i| {
            i.lost
                == vec![LostItem::FailedWriteback {
                    path: PathBuf::from("/d/a"),
                }]
        })
        .collect();
    assert_eq!(doomed.len(), 1);
    assert_eq!(doomed[0].fs.snapshot(), tree(&[("/d/a", b"ab\0\0ef")]));
    let line = doomed[0].lost[0].to_string();
    assert_eq!(line, "failed-writeback path=/d/a");
    assert_eq!(line.parse::<LostItem>().unwrap(), doomed[0].lost[0]);
    let rebuilt = fs.crash_image_with(&doomed[0].lost).unwrap();
    assert_eq!(rebuilt.snapshot(), doomed[0].fs.snapshot());
    // A truncation below the doomed range drops it; then a sync is a sync again.
    fs.set_len(p("/d/a"), 2).unwrap();
    fs.append(p("/d/a"), b"gh").unwrap();
    fs.sync_file(p("/d/a")).unwrap();
    assert_eq!(trees(&fs), BTreeSet::from([tree(&[("/d/a", b"abgh")])]));
    assert!(fs
        .crash_image_with(&doomed[0].lost)
        .is_err_and(|e| e.kind() == ErrorKind::InvalidInput));
}

#[test]
fn a_sync_is_idle_only_when_nothing_is_pending_for_it() {
    let fs = fs_with_dir();
    fs.write_new(p("/d/f"), b"abc").unwrap();
    fs.sync_file(p("/d/f")).unwrap(); // the bytes were pending
    fs.sync_file(p("/d/f")).unwrap(); // nothing since
    fs.sync_dir(p("/d")).unwrap(); // the create was pending
    fs.sync_dir(p("/d")).unwrap(); // nothing since
    fs.set_len(p("/d/f"), 1).unwrap();
    fs.sync_file(p("/d/f")).unwrap(); // a truncation was pending
    fs.rename(p("/d/f"), p("/d/g")).unwrap();
    fs.sync_file(p("/d/g")).unwrap(); // a rename is the directory's, not the file's
    fs.sync_dir(p("/d")).unwrap();
    let idle: Vec<bool> = fs.syncs().into_iter().map(|(_, call)| call.idle).collect();
    // fs_with_dir synced "/" first, with the mkdir pending.
    assert_eq!(idle, [false, false, true, false, true, false, true, false]);
}

#[test]
fn an_ablated_step_skips_only_the_syncs_right_after_its_fail_point() {
    let fs = fs_with_dir();
    let ablation = crate::fs::failpoint::Ablation::of("test::sync_ablated");
    fs.write_new(p("/d/a"), b"kept").unwrap();
    crate::fs::failpoint::reached("test::sync_kept");
    fs.sync_file(p("/d/a")).unwrap();
    fs.write_new(p("/d/b"), b"lost").unwrap();
    crate::fs::failpoint::reached("test::sync_ablated");
    fs.sync_file(p("/d/b")).unwrap();
    // The fail point was consumed by its sync: the next one is not skipped.
    fs.sync_dir(p("/d")).unwrap();
    crate::fs::failpoint::reached("test::sync_ablated");
    fs.sync_file(p("/d/b")).unwrap(); // skipped again, the bytes still pending
    assert_eq!(ablation.pending_skipped(), 2);
    drop(ablation);
    // Both syncs of /d/b were no-ops, so a power loss may lose its bytes; /d/a's hold.
    let images = power_loss(&fs);
    assert!(images
        .iter()
        .all(|i| i.fs.read_all(p("/d/a")).unwrap() == b"kept"));
    assert!(images
        .iter()
        .any(|i| i.fs.read_all(p("/d/b")).unwrap() != b"lost"));
    // With the ablation over, the same fail point no longer skips anything.
    crate::fs::failpoint::reached("test::sync_ablated");
    fs.sync_file(p("/d/b")).unwrap();
    assert!(power_loss(&fs)
        .iter()
        .all(|i| i.fs.read_all(p("/d/b")).unwrap() == b"lost"));
}

/// A durable file `/live/seg` and an empty durable directory `/tmp`.
fn fs_with_linkable_file() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(p("/live")).unwrap();
    fs.create_dir_all(p("/tmp")).unwrap();
    fs.write_new(p("/live/seg"), b"closed").unwrap();
    fs.sync_file(p("/live/seg")).unwrap();
    fs.sync_dir(p("/live")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    assert_eq!(fs.pending_dir_ops(), 0);
    fs
}

#[test]
fn a_hard_link_is_a_second_name_of_one_inode() {
    let fs = fs_with_linkable_file();
    fs.hard_link(p("/live/seg"), p("/tmp/seg")).unwrap();
    assert_eq!(fs.read_all(p("/tmp/seg")).unwrap(), b"closed");
    // One inode: a write through one name is read through the other.
    fs.append(p("/live/seg"), b"+").unwrap();
    assert_eq!(fs.read_all(p("/tmp/seg")).unwrap(), b"closed+");
    assert_eq!(
        fs.snapshot(),
        tree(&[("/live/seg", b"closed+"), ("/tmp/seg", b"closed+")])
    );
    // Removing one name (or its whole directory) leaves the other and the data.
    fs.remove_dir_all(p("/live")).unwrap();
    assert_eq!(fs.read_all(p("/tmp/seg")).unwrap(), b"closed+");
    let kind = |r: io::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        kind(fs.hard_link(p("/tmp/seg"), p("/tmp/seg"))),
        ErrorKind::AlreadyExists
    );
    assert_eq!(
        kind(fs.hard_link(p("/tmp"), p("/dir-link"))),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        kind(fs.hard_link(p("/live/seg"), p("/x"))),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(fs.hard_link(p("/tmp/seg"), p("/no/x"))),
        ErrorKind::NotFound
    );
}

#[test]
fn a_link_is_a_directory_entry_durable_only_after_its_directory_sync() {
    let fs = fs_with_linkable_file();
    fs.hard_link(p("/live/seg"), p("/tmp/seg")).unwrap();
    let with = tree(&[("/live/seg", b"closed"), ("/tmp/seg", b"closed")]);
    let without = tree(&[("/live/seg", b"closed")]);
    // The content needs no sync (it is the durable inode's); the entry may be lost.
    assert_eq!(trees(&fs), BTreeSet::from([with.clone(), without]));
    let lost: Vec<String> = power_loss(&fs)
        .iter()
        .flat_map(|i| i.lost.iter().map(ToString::to_string))
        .collect();
    let line = "dir-op seq=3 dir=/tmp op=link /live/seg -> seg";
    assert_eq!(lost, [line]);
    // The lost item parses back and rebuilds the image without the link.
    let image = fs.crash_image_with(&[line.parse().unwrap()]).unwrap();
    assert!(!image.exists(p("/tmp/seg")));
    assert_eq!(image.read_all(p("/live/seg")).unwrap(), b"closed");
    // Syncing the source's directory does not make the new name durable.
    fs.sync_dir(p("/live")).unwrap();
    assert_eq!(trees(&fs).len(), 2);
    fs.sync_dir(p("/tmp")).unwrap();
    assert_eq!(trees(&fs), BTreeSet::from([with]));
}

#[test]
fn removing_one_name_never_loses_the_data_of_a_durable_other_name() {
    // The install's backup removal: `/live` (the old content) goes, `/tmp` (the new
    // content, holding a durable link) stays; in no image does the linked file lose
    // its data, and if the removal is lost the old name comes back whole too.
    let fs = fs_with_linkable_file();
    fs.hard_link(p("/live/seg"), p("/tmp/seg")).unwrap();
    fs.sync_dir(p("/tmp")).unwrap();
    fs.remove_dir_all(p("/live")).unwrap();
    let images = power_loss(&fs);
    assert!(images.len() >= 2);
    let mut saw_removal = false;
    for image in &images {
        assert_eq!(image.fs.read_all(p("/tmp/seg")).unwrap(), b"closed");
        match image.fs.read_all(p("/live/seg")) {
            Ok(data) => assert_eq!(data, b"closed"),
            Err(_) => saw_removal = true,
        }
    }
    assert!(saw_removal);
    // A lost link after the removal of the only other name loses the file: the
    // order matters, and the images show it.
    let fs = fs_with_linkable_file();
    fs.hard_link(p("/live/seg"), p("/tmp/seg")).unwrap();
    fs.remove_dir_all(p("/live")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    assert!(trees(&fs).contains(&Tree::new()));
}

#[test]
fn hard_link_counts_as_a_mutating_call_and_takes_faults() {
    let fs = fs_with_linkable_file();
    let before = fs.mutating_ops();
    fs.fail_nth_with(before, FaultKind::Eio);
    let err = fs.hard_link(p("/live/seg"), p("/tmp/seg")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(EIO));
    assert!(!fs.exists(p("/tmp/seg")), "a failed link changes nothing");
    assert_eq!(fs.fired_faults()[0].call, Call::HardLink);
    fs.set_crash_before(before + 1);
    assert!(fs.hard_link(p("/live/seg"), p("/tmp/seg")).is_err());
    assert!(fs.is_crashed());
    assert!(!fs.exists(p("/tmp/seg")));
}

/// The descriptor count keeps `StdFs`'s cache: reads of more files than the budget
/// close the least recently used, writes pin a file until its sync, a rename or a
/// removal forgets it, and a writer lock counts beside the budget.
#[test]
fn the_descriptor_count_keeps_the_budget_beside_locks_and_unsynced_files() {
    let fs = SimFs::new();
    fs.create_dir_all(p("/d")).unwrap();
    let files: Vec<PathBuf> = (0..5).map(|i| PathBuf::from(format!("/d/f{i}"))).collect();
    for file in &files {
        fs.write_new(file, b"bytes").unwrap();
        fs.sync_file(file).unwrap();
    }
    assert_eq!(fs.descriptors(), None, "not counting yet");
    fs.count_descriptors(2);
    let mut buf = [0u8; 5];
    for file in &files {
        fs.read_at(file, 0, &mut buf).unwrap();
    }
    let count = fs.descriptors().unwrap();
    assert_eq!((count.peak, count.over_budget), (2, 0), "{count:?}");
    // A writer lock is one more, beside the budget.
    let lock = fs.try_lock(p("/d/.lock")).unwrap();
    fs.read_at(&files[0], 0, &mut buf).unwrap();
    let count = fs.descriptors().unwrap();
    assert_eq!((count.peak, count.peak_locks, count.over_budget), (3, 1, 0));
    drop(lock);
    // Unsynced appends pin their files past the budget until their sync.
    fs.count_descriptors(2);
    for file in &files[..4] {
        fs.append(file, b"more").unwrap();
    }
    let count = fs.descriptors().unwrap();
    assert_eq!(
        (count.peak, count.peak_unsynced, count.over_budget),
        (4, 4, 0)
    );
    for file in &files[..4] {
        fs.sync_file(file).unwrap();
    }
    fs.read_at(&files[4], 0, &mut buf).unwrap();
    // Synced, they are evicted again: the next reads stay within the budget.
    fs.count_descriptors(2);
    for file in files.iter().rev() {
        fs.read_at(file, 0, &mut buf).unwrap();
    }
    assert_eq!(fs.descriptors().unwrap().peak, 2);
    // A removed or renamed file's handle is gone with it.
    assert_eq!(fs.descriptors().unwrap().open, 2);
    fs.remove_file(&files[0]).unwrap();
    assert_eq!(fs.descriptors().unwrap().open, 1);
    fs.rename(&files[1], p("/d/g")).unwrap();
    assert_eq!(fs.descriptors().unwrap().open, 0);
}

/// Two durable directories, `/a` and `/b`, and a synced file created in each, `/a/x`
/// first: the two creates are the only pending operations.
fn creates_in_two_dirs(persistence: Persistence) -> SimFs {
    let fs = SimFs::new();
    fs.set_persistence(persistence);
    fs.create_dir_all(p("/a")).unwrap();
    fs.create_dir_all(p("/b")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    for path in ["/a/x", "/b/y"] {
        fs.write_new(p(path), b"1").unwrap();
        fs.sync_file(p(path)).unwrap();
    }
    assert_eq!(fs.pending_dir_ops(), 2);
    fs
}

#[test]
fn any_subset_may_keep_a_later_directory_op_and_lose_an_earlier_one() {
    let fs = creates_in_two_dirs(Persistence::AnySubset);
    let found = trees(&fs);
    assert!(found.contains(&tree(&[("/b/y", b"1")])), "{found:?}");
    assert_eq!(
        found.len(),
        4,
        "each create kept or lost on its own: {found:?}"
    );
}

#[test]
fn ordered_metadata_keeps_a_prefix_of_the_directory_ops() {
    let fs = creates_in_two_dirs(Persistence::OrderedMetadata);
    let found = trees(&fs);
    let expected: BTreeSet<Tree> = [
        tree(&[]),
        tree(&[("/a/x", b"1")]),
        tree(&[("/a/x", b"1"), ("/b/y", b"1")]),
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected);
    for image in power_loss(&fs) {
        assert_eq!(image.fs.persistence(), Persistence::OrderedMetadata);
    }
    // The image that keeps the later create and loses the earlier one is refused.
    let any = creates_in_two_dirs(Persistence::AnySubset);
    let later_only = power_loss(&any)
        .into_iter()
        .find(|i| i.fs.snapshot() == tree(&[("/b/y", b"1")]))
        .expect("any-subset has it");
    let refused = fs.crash_image_with(&later_only.lost).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidInput);
}

#[test]
fn ordered_metadata_makes_earlier_ops_durable_with_a_later_dir_sync() {
    let ordered = creates_in_two_dirs(Persistence::OrderedMetadata);
    ordered.sync_dir(p("/b")).unwrap();
    assert_eq!(ordered.pending_dir_ops(), 0);
    assert_eq!(
        trees(&ordered),
        [tree(&[("/a/x", b"1"), ("/b/y", b"1")])]
            .into_iter()
            .collect()
    );
    let any = creates_in_two_dirs(Persistence::AnySubset);
    any.sync_dir(p("/b")).unwrap();
    assert_eq!(any.pending_dir_ops(), 1, "only /b's create is durable");
}

#[test]
fn persistence_names_round_trip() {
    for persistence in Persistence::ALL {
        assert_eq!(
            persistence.name().parse::<Persistence>().unwrap(),
            persistence
        );
    }
    assert!("ext4".parse::<Persistence>().is_err());
}

//! Model (f): ours holds every property and reaches the interleavings it claims; each
//! refuted variant fails with the shortest counterexample the design predicts.

use stateright::{Checker, HasDiscoveries, Model};

use super::recovery::{decide, Row};
use super::state::{ConcurrentState, DirObj, PName, PObj};
use super::*;
use crate::check::{run, CheckOptions, ModelKind, Variant};
use crate::models::dir::DirOp;

#[test]
fn ours_holds_every_property_and_reaches_the_windows() {
    let checker = ConcurrentModel::new(ConcurrentVariant::Ours)
        .checker()
        .spawn_bfs()
        .join();
    // Also every `sometimes`: an append lands during a build, a crash hits a swap
    // step and recovers, a read spans an install.
    checker.assert_properties();
    // Pinned: a change here means the explored space changed; review before updating.
    assert_eq!(checker.unique_state_count(), 21_935);
}

fn trace(variant: Variant, property: &str) -> Vec<String> {
    let r = run(&CheckOptions::new(ModelKind::Concurrent).with_variant(variant));
    assert!(!r.ok(), "{variant:?} passed");
    r.violations
        .iter()
        .find(|v| v.property == property)
        .unwrap_or_else(|| panic!("{variant:?} does not break {property}: {r:?}"))
        .trace
        .clone()
}

fn position(trace: &[String], action: &str) -> usize {
    trace
        .iter()
        .position(|a| a.starts_with(action))
        .unwrap_or_else(|| panic!("no {action} in {trace:?}"))
}

#[test]
fn stale_tail_copy_loses_an_append_made_during_the_build() {
    let t = trace(Variant::StaleTailCopy, "no_acknowledged_record_lost");
    // Snapshot, append, build, then the swap to its install (a, b, c, d, d).
    assert_eq!(t.len(), 8, "{t:?}");
    assert!(position(&t, "Snapshot") < position(&t, "Append"));
    assert!(position(&t, "Append") < position(&t, "Swap"));
    assert!(t[7].contains("Installed"), "{t:?}");
}

#[test]
fn unlocked_swap_loses_a_segment_rolled_after_the_link() {
    let t = trace(Variant::UnlockedSwap, "no_acknowledged_record_lost");
    // Two appends fill segment 0; snapshot, build, link; the third append rolls a
    // segment in the old directory, which the install then drops.
    assert_eq!(t.len(), 10, "{t:?}");
    let linked = t.iter().position(|a| a.contains("Linked")).expect("a link");
    assert!(t[linked + 1].starts_with("Append"), "{t:?}");
    assert!(t[9].contains("Installed"), "{t:?}");
}

#[test]
fn no_cleaning_lock_resurrects_what_retention_deleted() {
    let t = trace(Variant::NoCleaningLock, "no_retention_while_cleaning");
    assert_eq!(t.len(), 5, "{t:?}");
    let t = trace(Variant::NoCleaningLock, "no_partial_log_exposed");
    // Retention deletes segment 0 after the snapshot; the install brings it back.
    assert_eq!(t.len(), 11, "{t:?}");
    assert!(position(&t, "Snapshot") < position(&t, "RetentionCheckpoint"));
    assert!(t[10].contains("Installed"), "{t:?}");
}

/// Every counterexample's JSON actions replay, and only the last state breaks it.
#[test]
fn counterexamples_replay_from_json() {
    for variant in [
        Variant::StaleTailCopy,
        Variant::NoCleaningLock,
        Variant::UnlockedSwap,
        Variant::UnboundedMap,
    ] {
        let model = ConcurrentModel::new(crate::check::concurrent_variant(variant));
        let r = run(&CheckOptions::new(ModelKind::Concurrent).with_variant(variant));
        assert!(!r.violations.is_empty());
        for v in &r.violations {
            let actions: Vec<ConcurrentAction> =
                serde_json::from_value(v.actions.clone()).expect("actions deserialize");
            let states = crate::check::replay(&model, &actions).expect("every action enabled");
            let property = model.property(v.property);
            assert!(!(property.condition)(
                &model,
                states.last().expect("a state")
            ));
            for state in &states[..states.len() - 1] {
                assert!((property.condition)(&model, state), "{}", v.property);
            }
        }
    }
}

#[test]
fn two_cleaner_threads_never_clean_one_partition_at_once() {
    let two = ConcurrentModel {
        cleaner_threads: 2,
        cleanings_max: 2,
        appends_max: 2,
        reads_max: 0,
        ..ConcurrentModel::new(ConcurrentVariant::Ours)
    };
    let checker = two.clone().checker().spawn_bfs().join();
    checker.assert_no_discovery("one_cleaner_per_partition");
    checker.assert_no_discovery("no_acknowledged_record_lost");
    checker.assert_no_discovery("recovers_to_old_or_new_plus_appends");
    // Teeth: without the per-partition guard the second thread starts at once.
    let unguarded = ConcurrentModel {
        unguarded_cleaners: true,
        ..two
    };
    let checker = unguarded
        .checker()
        .finish_when(HasDiscoveries::AnyOf(["one_cleaner_per_partition"].into()))
        .spawn_bfs()
        .join();
    checker.assert_any_discovery("one_cleaner_per_partition");
}

fn parent_with(names: &[(PName, PObj)]) -> ConcurrentState {
    let mut s = ConcurrentState::initial(1);
    s.parent = crate::models::dir::Dir::synced(names.iter().copied().collect());
    s
}

#[test]
fn recovery_removes_the_trash_in_every_row() {
    let old = PObj::Dir(DirObj::Old);
    let new = PObj::Dir(DirObj::New(0));
    let manifest = PObj::Manifest(DirObj::New(0));
    // After e (manifest gone): the trash is removed, `D` (new) stays.
    let (row, plan) = decide(&parent_with(&[(PName::Live, new), (PName::Trash, old)])).unwrap();
    assert_eq!(row, Row::NotCommitted);
    assert_eq!(plan, vec![DirOp::Remove(PName::Trash)]);
    // Between e's two steps: roll forward, trash and manifest removed.
    let (row, plan) = decide(&parent_with(&[
        (PName::Live, new),
        (PName::Trash, old),
        (PName::Manifest, manifest),
    ]))
    .unwrap();
    assert_eq!(row, Row::RollForward);
    assert_eq!(
        plan,
        vec![DirOp::Remove(PName::Trash), DirOp::Remove(PName::Manifest)]
    );
    // The same old directory as a backup, without a manifest, stays ambiguous.
    assert!(decide(&parent_with(&[(PName::Live, new), (PName::Backup, old)])).is_err());
    // With the manifest, rows are decided as before: the backup rolls back.
    let (row, _) = decide(&parent_with(&[
        (PName::Backup, old),
        (PName::Temp, PObj::Dir(DirObj::New(1))),
        (PName::Manifest, manifest),
    ]))
    .unwrap();
    assert_eq!(row, Row::RollBack);
}

/// docs/counterexamples/concurrent-*.txt are the model's own shortest traces (the
/// crash-scenario format cannot express interleavings yet).
#[test]
fn counterexample_files_match_the_model() {
    for (variant, property) in [
        (Variant::StaleTailCopy, "no_acknowledged_record_lost"),
        (Variant::UnlockedSwap, "no_acknowledged_record_lost"),
        (Variant::NoCleaningLock, "no_partial_log_exposed"),
        (Variant::UnboundedMap, "no_acknowledged_record_lost"),
    ] {
        let path = format!(
            "{}/../docs/counterexamples/concurrent-{}.txt",
            env!("CARGO_MANIFEST_DIR"),
            variant.name()
        );
        let text = std::fs::read_to_string(&path).expect("counterexample file");
        assert!(text.contains(&format!("`{property}`")), "{path}");
        let actions: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        assert_eq!(actions, trace(variant, property), "{path}");
    }
}

/// The model's clean pass (`SpecView::cleaned`) is the spec's compaction when the map
/// covers the whole log (`map_end` = the log end, horizon = the active base): every
/// key sequence of up to 5 appends over 2 keys, segments of 2 one-record batches.
#[test]
fn spec_view_clean_agrees_with_the_spec() {
    use crate::spec::{SpecLog, SpecRecordInput};
    let mut checked = 0;
    for len in 1..=5u32 {
        for keys in 0..1u32 << len {
            let mut log = SpecLog::new(140);
            let mut view = state::SpecView::default();
            for i in 0..len {
                let key = u8::try_from((keys >> i) & 1).expect("a bit");
                let input = SpecRecordInput {
                    key: Some(vec![b'a' + key]),
                    value: Some(vec![b'v']),
                    timestamp: 0,
                };
                log.append(&[input]).expect("append");
                view.append(key);
            }
            let snap = state::Snapshot {
                generation: 0,
                log_start: 0,
                closed: Vec::new(),
                active_base: log.active().base_offset,
                map_end: log.next_offset(),
                tail_copy: None,
            };
            log.compact_full(0, 1_000, None).expect("compaction");
            let spec: Vec<Rec> = log
                .read(0)
                .expect("read")
                .iter()
                .map(|r| {
                    let key = r.key.as_ref().expect("keyed")[0] - b'a';
                    (r.offset, key)
                })
                .collect();
            assert_eq!(view.cleaned(&snap).records, spec, "keys {keys:b} len {len}");
            checked += 1;
        }
    }
    assert_eq!(checked, 62);
}

/// stateright's `LinearizabilityTester` over the recorded histories and the
/// hand-written `reads_linearizable` agree: both hold for ours, both refute every
/// broken variant.
#[test]
fn linearizability_tester_agrees_with_reads_linearizable() {
    for variant in [
        ConcurrentVariant::Ours,
        ConcurrentVariant::StaleTailCopy,
        ConcurrentVariant::NoCleaningLock,
        ConcurrentVariant::UnlockedSwap,
    ] {
        // No crash: a crash ends every history (the tester judges the operations
        // before it), and the histories separate otherwise equal states.
        let model = ConcurrentModel {
            history: true,
            crashes_max: 0,
            ..ConcurrentModel::new(variant)
        };
        let both = ["history_linearizable", "reads_linearizable"];
        // Ours is checked exhaustively; a variant until both have refuted it.
        let checker = if variant == ConcurrentVariant::Ours {
            model.checker().spawn_bfs().join()
        } else {
            model
                .checker()
                .finish_when(HasDiscoveries::AllOf(both.into()))
                .spawn_bfs()
                .join()
        };
        let tester = checker.discovery("history_linearizable").is_some();
        let hand = checker.discovery("reads_linearizable").is_some();
        eprintln!(
            "{variant:?}: {} states, tester refutes: {tester}, hand-written refutes: {hand}",
            checker.unique_state_count()
        );
        assert_eq!(tester, hand, "{variant:?}");
        assert_eq!(tester, variant != ConcurrentVariant::Ours, "{variant:?}");
        if variant == ConcurrentVariant::Ours {
            // The tester judged reads that spanned an install.
            checker.assert_any_discovery("read_across_swap");
            checker.assert_no_discovery("no_partial_log_exposed");
        }
    }
}

/// `unbounded-map`: the build maps records appended after its snapshot. With an
/// explicit roll, a record of a key in a closed segment can be appended during the
/// build; the variant drops the older record in this pass, which the spec's
/// cleaning of the snapshot keeps. Ours holds in the same space.
#[test]
fn unbounded_map_drops_a_record_for_an_append_made_during_the_build() {
    // The space `ConcurrentModel::new` gives `unbounded-map`: explicit rolls, two
    // appends, everything else as the default.
    let small = |variant| ConcurrentModel {
        explicit_rolls: true,
        appends_max: 2,
        ..ConcurrentModel::new(variant)
    };
    assert_eq!(
        small(ConcurrentVariant::UnboundedMap),
        ConcurrentModel::new(ConcurrentVariant::UnboundedMap)
    );
    let ours = small(ConcurrentVariant::Ours).checker().spawn_bfs().join();
    // Every property, `sometimes` ones included.
    ours.assert_properties();
    let broken = small(ConcurrentVariant::UnboundedMap)
        .checker()
        .spawn_bfs()
        .join();
    // A crash after the install loses the only copy of the key the pass dropped
    // (the newer record was not yet durable); a read sees the pass drop a record
    // the spec's pass keeps.
    for property in [
        "no_acknowledged_record_lost",
        "no_partial_log_exposed",
        "recovers_to_old_or_new_plus_appends",
        "reads_linearizable",
    ] {
        assert!(broken.discovery(property).is_some(), "{property}");
    }
    let path = broken
        .discovery("no_partial_log_exposed")
        .expect("unbounded-map is refuted");
    let t: Vec<String> = path
        .into_actions()
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    // An append of the key between the snapshot and the build.
    let (snapshot, build) = (position(&t, "Snapshot"), position(&t, "Build"));
    assert!(
        t[snapshot..build].iter().any(|a| a.starts_with("Append")),
        "{t:?}"
    );
}

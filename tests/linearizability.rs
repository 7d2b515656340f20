//! Linearizability of real-engine histories: an appender, a cleaner
//! (snapshot, build, swap), a retention round and a reader run at once on one
//! `LogManager` partition with real threads; every invocation and return is
//! recorded, and stateright's `LinearizabilityTester` looks for a total order of
//! the operations, respecting real time, that the model's sequential `SpecLog`
//! accepts (tests/linearizability_support: the spec adapter and the scenario).
//!
//! Invariants checked: every history of many seeded runs is linearizable (offsets
//! appended, records read, the log start, what retention deleted, the cleaning's
//! counts); retention deletes nothing while a cleaner holds the partition.
//! Teeth: hand-corrupted histories are refused (unit tests of the adapter below);
//! the engine's broken variants are caught deterministically under shuttle
//! (tests/shuttle_linearizability.rs).

mod linearizability_support;

use linearizability_support::{
    linearizable, scenario, Op, Rec, Recorder, Ret, SpecPartition, Summary, Variant,
};
use stateright::semantics::ConsistencyTester;

fn runs() -> u64 {
    std::env::var("SEGLOG_LINEARIZABILITY_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn real_thread_histories_are_linearizable() {
    let mut concurrent = 0;
    for seed in 0..runs() {
        let history = scenario(seed, Variant::Ours);
        assert!(
            linearizable(&history),
            "seed {seed}: no linearization of {history:#?}"
        );
        let order = history.serialized_history().expect("linearizable");
        if order
            .iter()
            .any(|(op, _)| matches!(op, Op::CleanSwap { .. }))
        {
            concurrent += 1;
        }
    }
    // Coverage: the cleaner did swap in most runs (its snapshot can find no
    // closed segment only when retention emptied the log first).
    assert!(concurrent > 0, "no run cleaned");
}

fn spec() -> SpecPartition {
    SpecPartition::new(1 << 30)
}

fn rec(offset: i64, key: &str, value: &str) -> Rec {
    (
        offset,
        Some(key.as_bytes().to_vec()),
        Some(value.as_bytes().to_vec()),
    )
}

fn append_op(key: &str, value: &str) -> Op {
    Op::Append(vec![(
        key.as_bytes().to_vec(),
        Some(value.as_bytes().to_vec()),
    )])
}

/// Whether the history of `(thread, op, ret)`, recorded
/// in this order, each op completing before the next starts, is linearizable.
fn sequential(ops: &[(u8, Op, Ret)]) -> bool {
    let recorder = Recorder::new(spec());
    for (thread, op, ret) in ops {
        recorder.run(*thread, op.clone(), || ((), ret.clone()));
    }
    linearizable(&recorder.history())
}

#[test]
fn the_adapter_accepts_a_true_history_and_refuses_corrupted_ones() {
    let good = vec![
        (
            1,
            append_op("a", "1"),
            Ret::Appended {
                base_offset: 0,
                last_offset: 0,
            },
        ),
        (
            2,
            append_op("b", "2"),
            Ret::Appended {
                base_offset: 1,
                last_offset: 1,
            },
        ),
        (
            3,
            Op::Read { from: 0 },
            Ret::Records(vec![rec(0, "a", "1"), rec(1, "b", "2")]),
        ),
    ];
    assert!(sequential(&good), "the true history");
    // Each corruption alone makes it refused.
    let mut duplicate = good.clone();
    duplicate[1].2 = Ret::Appended {
        base_offset: 0,
        last_offset: 0,
    };
    assert!(!sequential(&duplicate), "an offset handed out twice");
    let mut lost = good.clone();
    lost[2].2 = Ret::Records(vec![rec(1, "b", "2")]);
    assert!(!sequential(&lost), "an acknowledged record missing");
    let mut changed = good.clone();
    changed[2].2 = Ret::Records(vec![rec(0, "a", "X"), rec(1, "b", "2")]);
    assert!(!sequential(&changed), "a value changed");
    let mut failed = good;
    failed[0].2 = Ret::Failed("io".into());
    assert!(!sequential(&failed), "an engine error");
}

#[test]
fn overlapping_operations_may_take_either_order_but_not_an_impossible_one() {
    // The read overlaps the second append: it may see it or not...
    for seen in [
        vec![rec(0, "a", "1")],
        vec![rec(0, "a", "1"), rec(1, "b", "2")],
    ] {
        let recorder = Recorder::new(spec());
        recorder.run(1, append_op("a", "1"), || {
            (
                (),
                Ret::Appended {
                    base_offset: 0,
                    last_offset: 0,
                },
            )
        });
        let mut history = recorder.history();
        history.on_invoke(1, append_op("b", "2")).unwrap();
        history.on_invoke(3, Op::Read { from: 0 }).unwrap();
        history.on_return(3, Ret::Records(seen.clone())).unwrap();
        history
            .on_return(
                1,
                Ret::Appended {
                    base_offset: 1,
                    last_offset: 1,
                },
            )
            .unwrap();
        assert!(linearizable(&history), "{seen:?}");
    }
    // ...but a read that completed before the append was invoked cannot see it.
    let recorder = Recorder::new(spec());
    let mut history = recorder.history();
    history.on_invoke(3, Op::Read { from: 0 }).unwrap();
    history
        .on_return(3, Ret::Records(vec![rec(0, "a", "1")]))
        .unwrap();
    history.on_invoke(1, append_op("a", "1")).unwrap();
    history
        .on_return(
            1,
            Ret::Appended {
                base_offset: 0,
                last_offset: 0,
            },
        )
        .unwrap();
    assert!(!linearizable(&history), "a read from the future");
}

/// A cleaning's snapshot, then an append, then the swap: the pass must keep the
/// record the map did not see, and a read after it must show both; retention
/// during the cleaning must skip.
#[test]
fn the_adapter_judges_a_cleaning_by_its_snapshot() {
    let recorder = Recorder::new(spec());
    let appended = |base| Ret::Appended {
        base_offset: base,
        last_offset: base,
    };
    recorder.run(0, append_op("k", "old"), || ((), appended(0)));
    recorder.run(0, Op::Roll, || ((), Ret::Rolled { active_base: 1 }));
    recorder.run(0, append_op("k", "mid"), || ((), appended(1)));
    recorder.run(0, Op::Roll, || ((), Ret::Rolled { active_base: 2 }));
    recorder.run(2, Op::CleanSnapshot, || {
        ((), Ret::Snapshot(Some((vec![0, 1], 2, 2))))
    });
    recorder.run(1, append_op("k", "new"), || ((), appended(2)));
    let during = recorder.history();
    let swap = Op::CleanSwap {
        closed: vec![0, 1],
        active_base: 2,
        map_end: 2,
    };
    // The spec's own summary for this pass (checked against the engine in the
    // real-thread test): it drops "old" only.
    let summary = {
        let mut s = spec();
        let order = [
            append_op("k", "old"),
            Op::Roll,
            append_op("k", "mid"),
            Op::Roll,
            Op::CleanSnapshot,
            append_op("k", "new"),
            swap.clone(),
        ];
        let mut last = None;
        for op in &order {
            last = Some(stateright::semantics::SequentialSpec::invoke(&mut s, op));
        }
        match last {
            Some(Ret::Swapped(summary)) => summary,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(summary.records_before, 2);
    assert_eq!(summary.records_after, 1, "the map saw mid, not new");
    let kept_mid = vec![rec(1, "k", "mid"), rec(2, "k", "new")];
    let mut good = during.clone();
    good.on_invoke(2, swap.clone()).unwrap();
    good.on_return(2, Ret::Swapped(summary.clone())).unwrap();
    good.on_invoke(3, Op::Read { from: 1 }).unwrap();
    good.on_return(3, Ret::Records(kept_mid.clone())).unwrap();
    assert!(linearizable(&good));
    // A pass that used a map seeing "new" (dropping "mid") is refused.
    let mut too_much = during.clone();
    too_much.on_invoke(2, swap.clone()).unwrap();
    too_much
        .on_return(
            2,
            Ret::Swapped(Summary {
                records_after: 0,
                ..summary.clone()
            }),
        )
        .unwrap();
    assert!(!linearizable(&too_much));
    let mut lost_tail = during.clone();
    lost_tail.on_invoke(2, swap).unwrap();
    lost_tail.on_return(2, Ret::Swapped(summary)).unwrap();
    lost_tail.on_invoke(3, Op::Read { from: 1 }).unwrap();
    lost_tail
        .on_return(3, Ret::Records(vec![rec(1, "k", "mid")]))
        .unwrap();
    assert!(
        !linearizable(&lost_tail),
        "the append after the snapshot lost"
    );
    // Retention inside the cleaning: deleting is refused, skipping accepted.
    for (ret, ok) in [
        (Ret::Retained(Some(vec![])), false),
        (Ret::Retained(None), true),
    ] {
        let mut h = during.clone();
        h.on_invoke(3, Op::Retain).unwrap();
        h.on_return(3, ret.clone()).unwrap();
        assert_eq!(linearizable(&h), ok, "{ret:?}");
    }
}

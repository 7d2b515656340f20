use stateright::{Checker, Model};

use super::*;

#[test]
fn ours_holds() {
    let checker = ConcurrentModel::new(ConcurrentVariant::Ours)
        .checker()
        .spawn_bfs()
        .join();
    eprintln!("unique states: {}", checker.unique_state_count());
    checker.assert_properties();
}

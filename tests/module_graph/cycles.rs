//! Cycles in a graph of modules.

use std::collections::{BTreeMap, BTreeSet};

/// One cycle of `edges`, if there is any (depth-first search, the path on the stack).
pub fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_owned(), Mark::Open);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            match marks.get(next.as_str()) {
                Some(Mark::Open) => {
                    let start = stack.iter().position(|n| n == next).expect("on the stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(cycle) = visit(next, edges, marks, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if !marks.contains_key(node) {
            if let Some(cycle) = visit(node, edges, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

/// The modules on some cycle (a node reaches itself), for the failure message.
pub fn on_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = edges[from].iter().map(String::as_str).collect();
        while let Some(node) = todo.pop() {
            if seen.insert(node.to_owned()) {
                todo.extend(edges[node].iter().map(String::as_str));
            }
        }
        seen
    };
    edges
        .keys()
        .filter(|node| reach(node).contains(*node))
        .cloned()
        .collect()
}

/// Each module on a cycle of `edges`, with the modules on cycles it names:
/// `module -> a, b`, for a failure message.
pub fn cycle_listing(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let members = on_cycles(edges);
    members
        .iter()
        .map(|m| {
            let inside: Vec<&str> = edges[m]
                .iter()
                .filter(|t| members.contains(*t))
                .map(String::as_str)
                .collect();
            format!("{m} -> {}", inside.join(", "))
        })
        .collect()
}

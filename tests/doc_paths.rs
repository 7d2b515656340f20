//! The documents are checked like code: README.md and every Markdown file in docs/
//! name only what exists.
//!
//! Invariants checked:
//! * every `src/`, `tests/`, `model/`, `fuzz/`, `docs/`, `crash-scenarios/`, `benches/`,
//!   `examples/` and `interop/` path a document names exists in the
//!   repository (a `{a,b}` group names each of its members; a `*` names the directory
//!   before it);
//! * every `seglog <command> [<subcommand>] --flag ...` in code (a fenced block or a
//!   backtick span), also spelled `cargo run [--release] -- <command> ...`, names a
//!   command the CLI has, and each of its `--flag`s is one of that command's (the
//!   CLI's clap definition, `seglog_suite::cli::Cli`, is the oracle);
//! * a value given to a flag with a fixed set of values (`--only`, `--budget`,
//!   `--policy`, ...) is one of them: a `bench --only` row the code does not have
//!   fails here;
//! * a `--flag` in a backtick span outside a command is a flag of some command (or
//!   one of cargo's, listed below);
//! * every row docs/performance.md's table names is a `seglog bench` row of the code
//!   (`src/cli/bench_cmd.rs`, `src/bench/`), and every row the code has is in it;
//! * docs/design.md's reading guide names every model `seglog model check` has, each
//!   once, each by a letter of its own;
//! * every README guarantee names the checks that hold it, and every check a
//!   document names as `file::name` exists (a test, invariant or stage function, or a
//!   property's string); the invariants and properties of design.md's tables exist;
//! * a count of models, workloads, variants, fail points, sync steps, scenarios,
//!   fuzz targets, bench rows or stages in a document is the code's number;
//! * docs/design.md is at most 1,000 lines and opens with its layer table;
//! * every engine directory has a file map: its module's docs name each child module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::CommandFactory;
use seglog_suite::cli::Cli;

/// Flags of cargo and of the other tools the documents show, which are not `seglog`'s.
const OTHER_TOOLS_FLAGS: &[&str] = &[
    "--release",
    "--workspace",
    "--all-features",
    "--no-default-features",
    "--features",
    "--all-targets",
    "--test",
    "--test-threads",
    "--example",
    "--ignored",
    "--include-ignored",
    "--list",
    "--no-deps",
    "--open",
    "--check",
    "--bin",
    "--lib",
    "--doc",
    "--exact",
    "--nocapture",
    "--package",
    "--no-verify",
    "--allow-dirty",
    "--bench",
    "--cfg",
    // cargo-mutants'
    "--re",
    "--in-diff",
    "--file",
    "--output",
    "--no-shuffle",
    // the Kafka interop harness's (`interop/kafka/`)
    "--lenient-lookups",
    "--parent",
    "--cases",
    "--out",
];

/// Tools whose command lines are not checked flag by flag (unless they run `seglog`,
/// as `cargo run -- verify` does).
const OTHER_TOOLS: &[&str] = &[
    "cargo",
    "rustup",
    "strace",
    "git",
    "bash",
    "sh",
    "env",
    "kafka",
    "java",
    "mvn",
    "perf",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "SEGLOG_",
    "FAILPOINTS",
    ".ci/",
];

/// The repository directories whose paths the documents name.
const PATH_ROOTS: [&str; 10] = [
    "engine/",
    "src/",
    "tests/",
    "model/",
    "fuzz/",
    "docs/",
    "crash-scenarios/",
    "benches/",
    "examples/",
    "interop/",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/.
fn documents() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut paths = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/ is readable") {
            let path = entry.expect("a docs/ entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a document is UTF-8");
            (
                p.strip_prefix(&root).expect("under the root").to_path_buf(),
                text,
            )
        })
        .collect()
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '*' | '{' | '}' | ',')
}

/// Expands one `{a,b}` group (the first) into its members.
fn expand_braces(path: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (path.find('{'), path.find('}')) else {
        return vec![path.to_string()];
    };
    if close < open {
        return vec![path.to_string()];
    }
    let (head, tail) = (&path[..open], &path[close + 1..]);
    path[open + 1..close]
        .split(',')
        .flat_map(|member| expand_braces(&format!("{head}{member}{tail}")))
        .collect()
}

/// The repository paths a text names, with their line numbers.
fn named_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        for (i, &(at, c)) in chars.iter().enumerate() {
            let boundary = i == 0 || !(is_path_char(chars[i - 1].1) || chars[i - 1].1 == ':');
            if !boundary || !c.is_ascii_lowercase() {
                continue;
            }
            let rest = &line[at..];
            if !PATH_ROOTS.iter().any(|p| rest.starts_with(p)) {
                continue;
            }
            let mut token: String = rest.chars().take_while(|&c| is_path_char(c)).collect();
            // A placeholder (`tests/<name>.rs`) names no one file.
            if rest[token.len()..].starts_with('<') {
                continue;
            }
            // Trailing prose punctuation and an unclosed brace group's tail.
            while token.ends_with(['.', ',', '-']) {
                token.pop();
            }
            if token.matches('{').count() != token.matches('}').count() {
                token.truncate(token.find('{').unwrap_or(token.len()));
            }
            found.push((number + 1, token));
        }
    }
    found
}

#[test]
fn every_path_a_document_names_exists() {
    let root = root();
    let mut missing = Vec::new();
    for (doc, text) in documents() {
        for (line, named) in named_paths(&text) {
            for path in expand_braces(&named) {
                // A glob names the directory before it.
                let path = match path.find('*') {
                    Some(star) => path[..star]
                        .rsplit_once('/')
                        .map_or("", |(d, _)| d)
                        .to_string(),
                    None => path,
                };
                if !root.join(&path).exists() {
                    missing.push(format!("{}:{line}: {path}", doc.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documents name paths that do not exist:\n  {}",
        missing.join("\n  ")
    );
}

/// What the CLI accepts: each command path (`["bench"]`, `["model", "check"]`) with
/// its long flags and, per flag, its fixed values (empty when any value goes).
struct CliShape {
    commands: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>,
}

impl CliShape {
    fn read() -> Self {
        let mut commands = BTreeMap::new();
        let top = Cli::command();
        let globals = flags_of(&top);
        fn walk(
            cmd: &clap::Command,
            path: Vec<String>,
            globals: &BTreeMap<String, BTreeSet<String>>,
            out: &mut BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>,
        ) {
            let mut flags = flags_of(cmd);
            flags.extend(globals.clone());
            flags.insert("--help".into(), BTreeSet::new());
            out.insert(path.clone(), flags);
            for sub in cmd.get_subcommands() {
                let mut path = path.clone();
                path.push(sub.get_name().to_string());
                walk(sub, path, globals, out);
            }
        }
        walk(&top, Vec::new(), &globals, &mut commands);
        commands
            .get_mut(&Vec::new())
            .expect("the top command")
            .insert("--version".into(), BTreeSet::new());
        CliShape { commands }
    }

    fn all_flags(&self) -> BTreeSet<String> {
        self.commands
            .values()
            .flat_map(|flags| flags.keys().cloned())
            .collect()
    }

    /// The fixed values of `flag` wherever it is defined; `None` if some command
    /// takes any value for it.
    fn values_anywhere(&self, flag: &str) -> Option<BTreeSet<String>> {
        let mut all = BTreeSet::new();
        for flags in self.commands.values() {
            if let Some(values) = flags.get(flag) {
                if values.is_empty() {
                    return None;
                }
                all.extend(values.iter().cloned());
            }
        }
        Some(all)
    }
}

fn flags_of(cmd: &clap::Command) -> BTreeMap<String, BTreeSet<String>> {
    let mut flags = BTreeMap::new();
    for arg in cmd.get_arguments() {
        let values: BTreeSet<String> = arg
            .get_possible_values()
            .iter()
            .filter(|_| arg.get_action().takes_values())
            .flat_map(|v| {
                v.get_name_and_aliases()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        for long in arg.get_long_and_visible_aliases().into_iter().flatten() {
            flags.insert(format!("--{long}"), values.clone());
        }
    }
    flags
}

/// The code of a document: each command of a fenced block (but Rust, TOML, JSON and
/// plain text; a line ending in `\` continues on the next) and each backtick span
/// (which may run over a line break), with its line number.
fn code_units(text: &str) -> Vec<(usize, String)> {
    let mut units = Vec::new();
    let mut fence: Option<bool> = None; // inside a block: whether it is checked
    let mut command = String::new(); // a fenced command continued over lines
    let mut paragraph = (0, String::new()); // prose since the last blank line
    let flush_paragraph = |paragraph: &mut (usize, String), units: &mut Vec<(usize, String)>| {
        for span in paragraph.1.split('`').skip(1).step_by(2) {
            units.push((paragraph.0, span.to_string()));
        }
        paragraph.1.clear();
    };
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            flush_paragraph(&mut paragraph, &mut units);
            fence = match fence {
                Some(_) => None,
                None => Some(!matches!(info.trim(), "rust" | "toml" | "json" | "text")),
            };
            continue;
        }
        match fence {
            Some(true) => {
                command.push_str(line.trim_end_matches('\\'));
                command.push(' ');
                if !line.ends_with('\\') {
                    units.push((number + 1, std::mem::take(&mut command)));
                }
            }
            Some(false) => {}
            None if trimmed.is_empty() => flush_paragraph(&mut paragraph, &mut units),
            None => {
                if paragraph.1.is_empty() {
                    paragraph.0 = number + 1;
                }
                paragraph.1.push_str(line);
                paragraph.1.push(' ');
            }
        }
    }
    flush_paragraph(&mut paragraph, &mut units);
    units
}

fn is_placeholder(word: &str) -> bool {
    word.is_empty()
        || word.starts_with(['<', '[', '$', '{', '.', '"', '\''])
        || word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        || word.contains('|')
}

/// Checks one command line from its subcommand on; returns what is wrong.
fn check_command(shape: &CliShape, words: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut i = 0;
    // The command (and a nested subcommand: `model check`).
    while let Some(word) = words.get(i) {
        if word.starts_with('-') || is_placeholder(word) {
            break;
        }
        let mut next = path.clone();
        next.push(word.to_string());
        if shape.commands.contains_key(&next) {
            path = next;
            i += 1;
            continue;
        }
        let has_subcommands = shape
            .commands
            .keys()
            .any(|k| k.len() > path.len() && k.starts_with(&path));
        if has_subcommands {
            problems.push(format!("`seglog {}`: no such command", next.join(" ")));
            return problems;
        }
        break;
    }
    let flags = &shape.commands[&path];
    while let Some(word) = words.get(i) {
        i += 1;
        if !word.starts_with("--") || *word == "--" {
            continue;
        }
        let (flag, inline_value) = match word.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (*word, None),
        };
        let flag = flag.trim_end_matches([',', '.', ')', ';', ':']);
        let Some(values) = flags.get(flag) else {
            problems.push(format!("`seglog {}` has no flag {flag}", path.join(" ")));
            continue;
        };
        if values.is_empty() {
            continue;
        }
        let value = inline_value.or_else(|| words.get(i).copied());
        if let Some(value) = value {
            for v in value.trim_end_matches([',', '.', ')', ';', ':']).split(',') {
                if !is_placeholder(v) && !values.contains(v) {
                    problems.push(format!(
                        "`seglog {} {flag} {v}`: not one of {values:?}",
                        path.join(" ")
                    ));
                }
            }
        }
    }
    problems
}

/// Where a unit's `seglog` command starts (the index of its command word), if any.
fn command_starts(words: &[&str]) -> Vec<usize> {
    let mut starts = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let runs_seglog = *word == "seglog" || word.ends_with("/seglog");
        let cargo_run = *word == "--"
            && words[..i].contains(&"run")
            && words[..i].contains(&"cargo")
            && !words[..i].contains(&"-p")
            && !words[..i].iter().any(|w| w.starts_with("--example"));
        // `seglog = { version ... }` is a dependency line, not a command.
        let next_is_a_word = words
            .get(i + 1)
            .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_lowercase() || c == '-'));
        if (runs_seglog || cargo_run) && next_is_a_word {
            starts.push(i + 1);
        }
    }
    starts
}

#[test]
fn every_command_and_flag_a_document_names_exists() {
    let shape = CliShape::read();
    let all_flags = shape.all_flags();
    let mut problems = Vec::new();
    for (doc, text) in documents() {
        for (line, unit) in code_units(&text) {
            // A table cell's `a\|b` lists alternative values, as `a,b` would.
            let unit = unit.replace("\\|", ",");
            // Each shell command of the unit on its own.
            for command in unit.split(['|', ';', '#', '>']).flat_map(|c| c.split("&&")) {
                let words: Vec<&str> = command
                    .split_whitespace()
                    .map(|w| {
                        w.trim_start_matches(['[', '('])
                            .trim_end_matches([']', ')'])
                    })
                    .collect();
                let starts = command_starts(&words);
                if let Some(&start) = starts.first() {
                    if start < words.len() {
                        for p in check_command(&shape, &words[start..]) {
                            problems.push(format!("{}:{line}: {p}", doc.display()));
                        }
                    }
                    continue;
                }
                if words
                    .first()
                    .is_some_and(|w| OTHER_TOOLS.iter().any(|t| w.starts_with(t)))
                {
                    continue;
                }
                // A flag named on its own, with its value if it is given one.
                for (i, word) in words.iter().enumerate() {
                    if !word.starts_with("--") || word.len() < 3 {
                        continue;
                    }
                    let (flag, inline_value) = match word.split_once('=') {
                        Some((f, v)) => (f, Some(v)),
                        None => (*word, None),
                    };
                    let flag = flag.trim_end_matches([',', '.', ')', ';', ':']);
                    if OTHER_TOOLS_FLAGS.contains(&flag) {
                        continue;
                    }
                    if !all_flags.contains(flag) {
                        problems.push(format!(
                            "{}:{line}: no `seglog` command has the flag {flag}",
                            doc.display()
                        ));
                        continue;
                    }
                    let Some(values) = shape.values_anywhere(flag) else {
                        continue;
                    };
                    if let Some(value) = inline_value.or_else(|| words.get(i + 1).copied()) {
                        for v in value.trim_end_matches([',', '.', ')', ';', ':']).split(',') {
                            if !is_placeholder(v) && !v.starts_with('-') && !values.contains(v) {
                                problems.push(format!(
                                    "{}:{line}: `{flag} {v}`: not one of {values:?}",
                                    doc.display()
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "documents name commands or flags the CLI does not have:\n  {}",
        problems.join("\n  ")
    );
}

/// The string literals of a Rust source that look like bench rows (`group/name`, with
/// `{label}` where the code formats a part in).
fn row_literals(source: &str) -> BTreeSet<String> {
    let mut rows = BTreeSet::new();
    for piece in source.split('"').skip(1).step_by(2) {
        let looks_like_row = piece.contains('/')
            && !piece.starts_with('/')
            && !piece.ends_with('/')
            && piece
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_/{}".contains(c));
        if looks_like_row {
            rows.insert(piece.to_string());
        }
    }
    rows
}

/// Whether `name` is a row `pattern` formats: each `{label}` stands for a run of
/// lowercase letters, digits and `_` (never a `/`).
fn matches_pattern(pattern: &str, name: &str) -> bool {
    match pattern.find('{') {
        None => pattern == name,
        Some(open) => {
            let Some(close) = pattern[open..].find('}').map(|c| open + c) else {
                return pattern == name;
            };
            let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
            let Some(rest) = name.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len())
                .take_while(|&k| {
                    rest[..k]
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                })
                .any(|k| matches_pattern(tail, &rest[k..]))
        }
    }
}

#[test]
fn the_performance_table_has_every_bench_row_and_no_other() {
    let root = root();
    let mut sources = vec![root.join("src/cli/bench_cmd.rs")];
    for entry in std::fs::read_dir(root.join("src/bench")).expect("src/bench") {
        sources.push(entry.expect("an entry").path());
    }
    let mut patterns = BTreeSet::new();
    for source in &sources {
        let text = std::fs::read_to_string(source).expect("a source file");
        patterns.extend(row_literals(&text));
    }
    assert!(
        patterns.contains("append/log"),
        "no bench row found in {sources:?}"
    );
    let doc = "docs/performance.md";
    let text = std::fs::read_to_string(root.join(doc)).expect("docs/performance.md");
    // The table's first two cells: the row and its baseline.
    let mut named = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        for cell in line.split('|').skip(1).take(2) {
            for name in cell.split('`').skip(1).step_by(2) {
                if name.contains('/') {
                    named.insert(name.to_string());
                }
            }
        }
    }
    let unknown: Vec<&String> = named
        .iter()
        .filter(|n| !patterns.iter().any(|p| matches_pattern(p, n)))
        .collect();
    assert!(
        unknown.is_empty(),
        "{doc} names bench rows the code does not have: {unknown:?}"
    );
    let absent: Vec<&String> = patterns
        .iter()
        .filter(|p| !named.iter().any(|n| matches_pattern(p, n)))
        .collect();
    assert!(
        absent.is_empty(),
        "{doc} leaves out bench rows the code has: {absent:?}"
    );
}

/// The models `seglog model check --model` knows, by name.
fn model_names() -> BTreeSet<String> {
    use clap::ValueEnum;
    seglog_model::check::ModelKind::value_variants()
        .iter()
        .filter_map(|m| m.to_possible_value())
        .map(|v| v.get_name().to_string())
        .collect()
}

/// The rows of docs/design.md's reading guide: one per model, `| (letter) | `name` |`.
#[test]
fn the_reading_guide_names_every_model_once_by_one_letter() {
    let text = std::fs::read_to_string(root().join("docs/design.md")).expect("design.md");
    let mut letters = BTreeSet::new();
    let mut named = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| (")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (letter, model) = (cells[1], cells[2].trim_matches('`'));
        assert!(
            letters.insert(letter.to_string()),
            "letter {letter} names two models"
        );
        named.push(model.to_string());
    }
    let named_set: BTreeSet<String> = named.iter().cloned().collect();
    assert_eq!(
        named.len(),
        named_set.len(),
        "a model named twice: {named:?}"
    );
    assert_eq!(
        named_set,
        model_names(),
        "docs/design.md's reading guide and `seglog model check --model` disagree"
    );
}

/// A named check, `file::name`: a repository path to a Rust file and a name it
/// defines (`None` for any other span).
fn named_check(span: &str) -> Option<(&str, &str)> {
    let (path, name) = span.split_once("::")?;
    let path_ok = path.ends_with(".rs")
        && PATH_ROOTS.iter().any(|r| path.starts_with(r))
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (path_ok && name_ok).then_some((path, name))
}

/// Whether `source` defines `name`: a function (a test, an invariant, a stage), or
/// a string literal of it (a stateright property, a row name).
fn defines(source: &str, name: &str) -> bool {
    let whole = |at: usize, len: usize| {
        !source[at + len..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    };
    let fn_at = |needle: &str| {
        source
            .match_indices(needle)
            .any(|(at, _)| whole(at, needle.len()))
    };
    fn_at(&format!("fn {name}")) || source.contains(&format!("\"{name}\""))
}

/// The named checks of a document that do not exist, as `doc:line: file::name`.
fn missing_checks(doc: &str, text: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for (line, span) in code_units(text) {
        let Some((path, name)) = named_check(span.trim()) else {
            continue;
        };
        let source = std::fs::read_to_string(root().join(path)).unwrap_or_default();
        if !defines(&source, name) {
            missing.push(format!("{doc}:{line}: {path}::{name}"));
        }
    }
    missing
}

/// Every guarantee names the checks that hold it, and each exists: a `file::name`
/// span in a document is a file that defines the name. The invariants and the
/// crash-safety properties of docs/design.md's tables are functions of
/// `model/src/invariants/` and properties of the models their rows name.
#[test]
fn every_check_a_document_names_exists() {
    let mut missing = Vec::new();
    for (doc, text) in documents() {
        missing.extend(missing_checks(&doc.display().to_string(), &text));
    }
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let guarantees = readme
        .split("## Guarantees")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README.md has its Guarantees");
    for bullet in guarantees.split("\n- ").skip(1) {
        if !bullet.contains("Held by") {
            missing.push(format!(
                "README.md: a guarantee names no check: {:.60}",
                bullet
            ));
        }
    }
    let design = std::fs::read_to_string(root().join("docs/design.md")).expect("design.md");
    let invariants: String = ["mod.rs", "txn.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(root().join("model/src/invariants").join(f)))
        .collect::<Result<_, _>>()
        .expect("model/src/invariants/ is readable");
    let table_rows = |heading: &str| -> Vec<Vec<String>> {
        design
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("docs/design.md has the table `{heading}`"))
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.split('|')
                    .map(|c| c.trim().trim_matches('`').to_string())
                    .collect()
            })
            .collect()
    };
    for row in table_rows("| invariant | meaning | checked by |") {
        if !defines(&invariants, &row[1]) {
            missing.push(format!(
                "docs/design.md: invariant {} in no model/src/invariants/ file",
                row[1]
            ));
        }
    }
    for row in table_rows("| property | model | meaning |") {
        for model in row[2].split(',').map(str::trim) {
            let dir = root().join("model/src/models");
            let source = std::fs::read_to_string(dir.join(format!("{model}.rs")))
                .or_else(|_| std::fs::read_to_string(dir.join(model).join("mod.rs")))
                .unwrap_or_default();
            if !defines(&source, &row[1]) {
                missing.push(format!(
                    "docs/design.md: property {} not in model {model}",
                    row[1]
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documents name checks that do not exist:\n  {}",
        missing.join("\n  ")
    );
}

/// The nouns whose counts come from the code.
const COUNTED: &[&str] = &[
    "models",
    "workloads",
    "named workloads",
    "variants",
    "variant tests",
    "fail points",
    "sync steps",
    "scenarios",
    "fuzz targets",
    "bench rows",
    "stages",
];

/// Documents that record one measured run (their counts are that run's, with its
/// command), not the code's.
const MEASURED: &[&str] = &["docs/mutation-sample.md"];

const NUMBER_WORDS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The counts a text states of a counted noun: `(line, noun, number)`, the number
/// in digits or as an English word.
fn stated_counts(text: &str) -> Vec<(usize, String, usize)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| !w.is_empty())
            .collect();
        for (i, word) in words.iter().enumerate() {
            let lower = word.to_ascii_lowercase();
            let Some(n) = lower
                .parse::<usize>()
                .ok()
                .or_else(|| NUMBER_WORDS.iter().position(|w| *w == lower))
            else {
                continue;
            };
            let after = |k: usize| words.get(i + 1..i + 1 + k).map(|w| w.join(" "));
            let noun = [2, 1]
                .iter()
                .filter_map(|&k| after(k))
                .find(|phrase| COUNTED.contains(&phrase.as_str()));
            if let Some(noun) = noun {
                found.push((number + 1, noun, n));
            }
        }
    }
    found
}

/// Each count a document may state, with the code's own number: `(document, noun,
/// count)`.
fn code_counts() -> Vec<(&'static str, &'static str, usize)> {
    let teeth = std::fs::read_to_string(root().join("tests/sweep_teeth.rs")).expect("sweep_teeth");
    let every_variant = teeth
        .split("fn every_variant_is_caught_at_every_crash_point() {")
        .nth(1)
        .and_then(|body| body.split("\n}").next())
        .expect("tests/sweep_teeth.rs has every_variant_is_caught_at_every_crash_point");
    let variant_tests = every_variant.matches("_at(1);").count();
    vec![
        ("README.md", "models", model_names().len()),
        ("docs/ci.md", "variant tests", variant_tests),
    ]
}

/// A document states a count of models, workloads, variants, fail points, sync
/// steps, scenarios, fuzz targets, bench rows or stages only where the code has the
/// same number: each such count is one of [`code_counts`] and equal to it.
#[test]
fn every_count_a_document_states_is_the_codes() {
    let counts = code_counts();
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    let extra = [
        "crash-scenarios/README.md",
        "fuzz/README.md",
        "model/README.md",
        "engine/README.md",
    ];
    let mut docs = documents();
    for path in extra {
        let text = std::fs::read_to_string(root().join(path)).expect("a README");
        docs.push((PathBuf::from(path), text));
    }
    for (doc, text) in docs {
        let doc = doc.display().to_string();
        if MEASURED.contains(&doc.as_str()) {
            continue;
        }
        for (line, noun, stated) in stated_counts(&text) {
            match counts.iter().find(|(d, n, _)| *d == doc && *n == noun) {
                Some((_, _, code)) => {
                    seen.insert((doc.clone(), noun.clone()));
                    if *code != stated {
                        wrong.push(format!(
                            "{doc}:{line}: {stated} {noun}, the code has {code}"
                        ));
                    }
                }
                None => wrong.push(format!(
                    "{doc}:{line}: {stated} {noun}, a count no check compares with the code \
                     (add it to code_counts, or say it without the number)"
                )),
            }
        }
    }
    for (doc, noun, _) in &counts {
        if !seen.contains(&(doc.to_string(), noun.to_string())) {
            wrong.push(format!(
                "{doc}: states no count of {noun} any more (drop it from code_counts)"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "counts in the documents:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_count_scanner_sees_what_it_must() {
    let text = "checks eight models.\nthe 12 variant tests, 3 named workloads\n32 steps, 9 mutants";
    assert_eq!(
        stated_counts(text),
        [
            (1, "models".to_string(), 8),
            (2, "variant tests".to_string(), 12),
            (2, "named workloads".to_string(), 3),
        ]
    );
}

/// docs/design.md's bound: a map a newcomer reads, not everything known.
const DESIGN_LINES_MAX: usize = 1_000;

/// docs/design.md is a map first: at most [`DESIGN_LINES_MAX`] lines, and its first
/// section is the layer table the workspace import check reads
/// (`tests/module_graph/`), so the picture and the check are one source.
#[test]
fn design_md_is_a_map_first_and_within_its_bound() {
    let text = std::fs::read_to_string(root().join("docs/design.md")).expect("design.md");
    let lines = text.lines().count();
    assert!(
        lines <= DESIGN_LINES_MAX,
        "docs/design.md has {lines} lines, more than {DESIGN_LINES_MAX}: move detail to the \
         module docs it describes or to docs/verification.md"
    );
    let first = text.lines().find(|l| l.starts_with("## "));
    assert_eq!(
        first,
        Some("## Layers"),
        "docs/design.md's first section is its layers"
    );
}

/// The child modules a module file declares (`mod x;`, any visibility), but its
/// tests.
fn child_modules(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) mod ")
                .or_else(|| line.strip_prefix("pub(super) mod "))
                .or_else(|| line.strip_prefix("pub mod "))
                .or_else(|| line.strip_prefix("mod "))?;
            let name = rest.strip_suffix(';')?;
            (name != "tests").then(|| name.to_string())
        })
        .collect()
}

/// Whether a module's docs (`//!`) name its child `name`: `` `name` ``,
/// `` [`name`] ``, `` `name/` ``, `` `name.rs` `` or `` `name::...` ``.
fn docs_name(docs: &str, name: &str) -> bool {
    ["`", "/", ".rs", "::", "]"]
        .iter()
        .any(|end| docs.contains(&format!("`{name}{end}")))
}

/// Every engine directory has a file map: the docs of its module file (`mod.rs`,
/// or `x.rs` beside `x/`) name each of its child modules.
#[test]
fn every_engine_directory_has_a_file_map() {
    let src = root().join("engine/src");
    let mut dirs = vec![src.clone()];
    let mut missing = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("engine/src is readable") {
            let path = entry.expect("an entry").path();
            if !path.is_dir() {
                continue;
            }
            dirs.push(path.clone());
            let module = if path.join("mod.rs").exists() {
                path.join("mod.rs")
            } else {
                path.with_extension("rs")
            };
            let source = std::fs::read_to_string(&module).unwrap_or_default();
            let docs: String = source
                .lines()
                .filter(|l| l.starts_with("//!"))
                .collect::<Vec<_>>()
                .join("\n");
            for child in child_modules(&source) {
                if !docs_name(&docs, &child) {
                    let shown = module
                        .strip_prefix(root())
                        .unwrap_or(&module)
                        .display()
                        .to_string();
                    missing.push(format!("{shown}: `{child}`"));
                }
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "module docs without a line for each of their files (the directory's file map):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_check_scanner_sees_what_it_must() {
    assert_eq!(
        named_check("tests/crash_sweep.rs::a_rejected_operation_is_no_durability_point"),
        Some((
            "tests/crash_sweep.rs",
            "a_rejected_operation_is_no_durability_point"
        ))
    );
    assert_eq!(named_check("seglog::log::Log"), None);
    assert_eq!(named_check("engine/src/log/mod.rs"), None);
    let source = "fn kept() {}\nfn kept_longer() {}\nProperty::always(\"no_hole\", f)";
    assert!(defines(source, "kept") && defines(source, "no_hole"));
    assert!(!defines(source, "kep") && !defines(source, "renamed"));
    let doc = "Held by `tests/crash_sweep.rs::a_renamed_test`.\n";
    assert_eq!(
        missing_checks("doc.md", doc),
        ["doc.md:1: tests/crash_sweep.rs::a_renamed_test"]
    );
}

#[test]
fn the_path_scanner_sees_what_it_must() {
    let found =
        named_paths("see `engine/src/log/write.rs`, tests/{a,b}.rs and model/src/spec/mod.rs.");
    let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "engine/src/log/write.rs",
            "tests/{a,b}.rs",
            "model/src/spec/mod.rs"
        ]
    );
    assert_eq!(
        expand_braces("tests/{a,b}.rs"),
        ["tests/a.rs", "tests/b.rs"]
    );
    // Not a repository path: inside a longer path or an item path.
    assert!(named_paths("kafka/src/x.rs seglog::src/x").is_empty());
    let shape = CliShape::read();
    assert!(check_command(&shape, &["verify", "--budget", "quick"]).is_empty());
    assert_eq!(
        check_command(&shape, &["verify", "--no-such-flag"]).len(),
        1
    );
    assert_eq!(
        check_command(&shape, &["bench", "--only", "no-such-row"]).len(),
        1
    );
    assert_eq!(check_command(&shape, &["no-such-command"]).len(), 1);
    assert!(matches_pattern(
        "incremental/{label}/build",
        "incremental/clustered/build"
    ));
    assert!(matches_pattern(
        "compact_kafka/build{suffix}",
        "compact_kafka/build_partial"
    ));
    assert!(!matches_pattern(
        "compact_kafka/build{suffix}",
        "compact_kafka/x/build"
    ));
    assert!(!matches_pattern("open/clean", "open/cleaner"));
}

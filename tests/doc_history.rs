//! No history in the tree: comments and documents speak of the project as it is.
//! The reason for a piece of code stays (in present tense); the story of how it came
//! to be (an issue, a finder, a before and after, a commit, a machine) does not.
//!
//! Invariants checked, over the Markdown text and the comments (`//`, `/* */`, `#`,
//! `<!-- -->`) of `src/`, `tests/`, `engine/{src,tests,examples,README.md}`,
//! `model/{src,tests,README.md}`, `docs/`, `fuzz/{README.md,fuzz_targets}`,
//! `benches/`, `examples/`, `interop/`, `crash-scenarios/`, `README.md` and `.ci/`
//! (never a `target/` directory, `*.proptest-regressions`, `Cargo.lock` or a file of
//! another kind, such as a binary fuzz corpus):
//! * no issue reference: the word issue (or issues) and a number, with or without a
//!   `#` or a bracket, or a `#` and a number after a space or a bracket;
//! * no history phrase (the list is [`RULES`]): a finder, the branch, session or
//!   machine, a commit, the fix's before, a past value in brackets, a machine's load,
//!   a past habit (a thing that "used to", but not one that is used to do something);
//! * no commit hash: a whole word of 7 to 40 lowercase hex digits holding at least one
//!   digit and one letter (a `0x` literal is one word with its prefix, so never one);
//! * only the spans of [`ALLOWED`] (a Kafka JIRA id, an RFC citation) are exempt, each
//!   with its reason.
//!
//! String literals in code are code, not comments: they are not read here.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// The scanned scope, relative to the repository root: directories (walked) and files.
const SCOPE: &[&str] = &[
    "src",
    "tests",
    "engine/src",
    "engine/tests",
    "engine/examples",
    "engine/README.md",
    "model/src",
    "model/tests",
    "model/README.md",
    "docs",
    "fuzz/README.md",
    "fuzz/fuzz_targets",
    "benches",
    "examples",
    "interop",
    "crash-scenarios",
    "README.md",
    ".ci",
];

/// Real references a comment or document may carry, blanked out before the rules run.
const ALLOWED: &[(&str, &str)] = &[
    (
        r"\bKAFKA-\d+\b",
        "a Kafka JIRA id names Kafka's behaviour, not our history",
    ),
    (
        r"\bKIP-\d+\b",
        "a Kafka Improvement Proposal is the specification we follow",
    ),
    (
        r"\bRFC ?\d+\b",
        "an RFC citation names a format's specification",
    ),
];

/// How a file holds its comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Markdown: every line is read.
    Markdown,
    /// Rust and Java: `//` to the end of the line, and `/* ... */`.
    Slash,
    /// TOML, shell, plain text: `#` to the end of the line.
    Hash,
    /// XML: `<!-- ... -->`.
    Xml,
}

fn kind_of(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".proptest-regressions") || name == "Cargo.lock" {
        return None;
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("md") => Some(Kind::Markdown),
        Some("rs" | "java") => Some(Kind::Slash),
        Some("toml" | "sh" | "txt") => Some(Kind::Hash),
        Some("xml") => Some(Kind::Xml),
        // `.gitignore`, and the extensionless scripts of `.ci/`.
        None if name == ".gitignore" || path.components().any(|c| c.as_os_str() == ".ci") => {
            Some(Kind::Hash)
        }
        _ => None,
    }
}

struct Rule {
    name: &'static str,
    pattern: Regex,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |name, pattern: &str| Rule {
        name,
        pattern: Regex::new(pattern).expect("a rule compiles"),
    };
    vec![
        rule("issue reference", r"(?i)\bissues? \(?#?\d+"),
        rule("issue reference", r"(?:^|[\s(\[,;])(#\d+)\b"),
        rule(
            "history phrase",
            r"(?i)\b(?:found by|this branch|this session|this (?:[\w-]+ )?machine|at commit|before the fix)\b",
        ),
        rule("history phrase", r"(?i)\(before:|\(was \d|\bload ~\d"),
        rule("history phrase", r"(?i)\b(\w+) used to\b"),
        rule("commit hash", r"\b[0-9a-f]{7,40}\b"),
    ]
});

static ALLOWED_SPANS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    ALLOWED
        .iter()
        .map(|(pattern, _reason)| Regex::new(pattern).expect("an allowed pattern compiles"))
        .collect()
});

/// The words before "used to" that make it a purpose, not a past habit.
const PURPOSE_USED_TO: &[&str] = &["is", "are", "be", "been", "being", "gets", "get"];

/// What the rules find in one piece of comment or document text.
fn matches_in(text: &str) -> Vec<String> {
    let mut text = text.to_string();
    for allowed in ALLOWED_SPANS.iter() {
        let spans: Vec<_> = allowed.find_iter(&text).map(|m| m.range()).collect();
        for span in spans {
            text.replace_range(span.clone(), &" ".repeat(span.len()));
        }
    }
    let mut found = Vec::new();
    for rule in RULES.iter() {
        for caps in rule.pattern.captures_iter(&text) {
            let whole = caps.get(0).expect("the whole match");
            let hit = whole.as_str().trim();
            let keep = match rule.name {
                "commit hash" => {
                    hit.bytes().any(|b| b.is_ascii_digit())
                        && hit.bytes().any(|b| b.is_ascii_lowercase())
                }
                _ if rule.pattern.as_str().contains("used to") => {
                    let before = caps.get(1).map_or("", |m| m.as_str());
                    !PURPOSE_USED_TO.contains(&before.to_ascii_lowercase().as_str())
                }
                _ => true,
            };
            if keep {
                found.push(format!("{} ({})", hit, rule.name));
            }
        }
    }
    found
}

/// The comment text of each line of a file (all of it for Markdown), by line number.
fn comments(kind: Kind, text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (number, line) in text.lines().enumerate() {
        let mut comment = String::new();
        match kind {
            Kind::Markdown => comment.push_str(line),
            Kind::Slash | Kind::Xml => {
                let (open, close) = match kind {
                    Kind::Slash => ("/*", "*/"),
                    _ => ("<!--", "-->"),
                };
                let mut rest = line;
                loop {
                    if in_block {
                        match rest.find(close) {
                            Some(end) => {
                                comment.push_str(&rest[..end]);
                                comment.push(' ');
                                rest = &rest[end + close.len()..];
                                in_block = false;
                            }
                            None => {
                                comment.push_str(rest);
                                break;
                            }
                        }
                    } else {
                        let code = code_prefix(rest);
                        let tail = &rest[code..];
                        if kind == Kind::Slash && tail.starts_with("//") {
                            comment.push_str(tail);
                            break;
                        } else if let Some(inner) = tail.strip_prefix(open) {
                            rest = inner;
                            in_block = true;
                        } else {
                            break;
                        }
                    }
                }
            }
            Kind::Hash => {
                let code = hash_prefix(line);
                comment.push_str(&line[code..]);
            }
        }
        if !comment.trim().is_empty() {
            out.push((number + 1, comment));
        }
    }
    out
}

/// The length of `line`'s code before its first `//` or `/*` or `<!--` outside a
/// string literal (the whole line if there is none).
fn code_prefix(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            // A char literal `'"'` opens no string.
            b'\'' if !in_string && bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'/' | b'<' if !in_string => {
                let rest = &line[i..];
                if rest.starts_with("//") || rest.starts_with("/*") || rest.starts_with("<!--") {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    line.len()
}

/// The length of `line`'s code before a `#` comment: a `#` at the start or after
/// white space, outside quotes.
fn hash_prefix(line: &str) -> usize {
    let bytes = line.as_bytes();
    let (mut single, mut double) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' if !single => double = !double,
            b'\'' if !double => single = !single,
            b'#' if !single && !double && (i == 0 || bytes[i - 1].is_ascii_whitespace()) => {
                return i;
            }
            _ => {}
        }
    }
    line.len()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every scanned file, relative to the root, with its kind.
fn scanned_files() -> Vec<(PathBuf, Kind)> {
    let root = root();
    let mut files = Vec::new();
    for entry in SCOPE {
        let start = root.join(entry);
        assert!(
            start.exists(),
            "the scope names {entry}, which does not exist"
        );
        let walk = walkdir::WalkDir::new(&start)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.file_name() != "target");
        for file in walk {
            let file = file.expect("a readable directory entry");
            if !file.file_type().is_file() {
                continue;
            }
            if let Some(kind) = kind_of(file.path()) {
                let relative = file.path().strip_prefix(&root).expect("under the root");
                files.push((relative.to_path_buf(), kind));
            }
        }
    }
    files
}

/// Every hit in the tree, as `path:line: matched text (rule)`.
fn hits_in_tree() -> Vec<String> {
    let root = root();
    let mut hits = Vec::new();
    for (path, kind) in scanned_files() {
        let text = std::fs::read_to_string(root.join(&path))
            .unwrap_or_else(|e| panic!("{} is not readable text: {e}", path.display()));
        for (line, comment) in comments(kind, &text) {
            for hit in matches_in(&comment) {
                hits.push(format!("{}:{line}: {hit}", path.display()));
            }
        }
    }
    hits
}

#[test]
fn no_history_in_comments_and_documents() {
    let files = scanned_files();
    assert!(
        files.len() > 300,
        "the walk found only {} files: is the scope right?",
        files.len()
    );
    let hits = hits_in_tree();
    assert!(
        hits.is_empty(),
        "{} hits: comments and documents tell history (say what is, and why):\n  {}",
        hits.len(),
        hits.join("\n  ")
    );
}

/// The matcher has teeth: planted history is caught, in each file kind, and ordinary
/// text and code are not.
#[test]
fn the_matcher_catches_planted_history_and_spares_real_references() {
    let caught = |kind: Kind, text: &str| -> usize {
        comments(kind, text)
            .iter()
            .map(|(_, c)| matches_in(c).len())
            .sum()
    };
    let planted = [
        (Kind::Slash, "// found by issue 41"),
        (Kind::Slash, "/// Target of the raw-append issue (16)."),
        (
            Kind::Slash,
            "//! Regression (issue #12): the swap lost a record.",
        ),
        (Kind::Slash, "let x = 1; // see #30"),
        (Kind::Slash, "/* issues 11 and 13 */"),
        (Kind::Slash, "    /// measured on this branch"),
        (Kind::Markdown, "measured at commit 6d95ae9 in this session"),
        (Kind::Markdown, "the first two at 02935b4"),
        (Kind::Markdown, "### Sizes (this 2-core machine, shared)"),
        (Kind::Markdown, "| 1.1-2.1 s (load ~10) |"),
        (
            Kind::Markdown,
            "~4.5 min in debug at load ~10 on this machine",
        ),
        (Kind::Markdown, "77 (was 119): compact used to fail"),
        (Kind::Hash, "# Found by the crash sweep"),
        (Kind::Hash, "x = 1 # this branch only"),
        (Kind::Xml, "<!-- before the fix: a panic -->"),
    ];
    for (kind, line) in planted {
        assert!(caught(kind, line) > 0, "not caught ({kind:?}): {line}");
    }
    let legitimate = [
        (
            Kind::Slash,
            "// KAFKA-1234's race: a cleaner and retention at once",
        ),
        (Kind::Slash, "const X: u64 = 0xdeadbeef12; // the mask"),
        (
            Kind::Slash,
            "assert_eq!(crc32c(b\"123456789\"), 0xe3069283);",
        ),
        (
            Kind::Slash,
            "let v = \"e3069283\"; // the CRC-32C check value",
        ),
        (Kind::Slash, "let s = \"found by the crash sweep: {}\";"),
        (Kind::Slash, "let url = \"http://x/issue 4\";"),
        (Kind::Slash, "// the key is used to look up the offset"),
        (
            Kind::Slash,
            "// the gzip member RFC 1952 (KIP-98's markers)",
        ),
        (Kind::Markdown, "a `#[derive(Debug)]` and `color:#222`"),
        (
            Kind::Markdown,
            "header `1f 8b 08 00 00000000 00 ff`, seed 4782200037612593770",
        ),
        (Kind::Markdown, "the previous segment, a deadbeef word"),
        (Kind::Hash, "name = \"a#1\" # the first"),
        (Kind::Hash, "echo \"${#args}\""),
    ];
    for (kind, line) in legitimate {
        let found: Vec<_> = comments(kind, line)
            .iter()
            .flat_map(|(_, c)| matches_in(c))
            .collect();
        assert!(found.is_empty(), "caught ({kind:?}): {line}: {found:?}");
    }
}

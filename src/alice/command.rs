//! A workload operation as the `seglog` command that performs it.
//!
//! Every log command opens the log (recovery), does its one operation and closes it
//! (fsyncs, the clean-shutdown marker), so a `flush` or a `close` between commands
//! has nothing left to do and runs no command; a `read` changes nothing.

use std::path::Path;

use crate::workload::Op;
use seglog::log::LogConfig;

/// The command line arguments (after the binary) that apply `op` to the log at
/// `dir`, `None` when the operation needs no command, or why the command line
/// cannot express it.
pub fn args(
    op: &Op,
    dir: &Path,
    config: &LogConfig,
    variant: &str,
) -> Result<Option<Vec<String>>, String> {
    let expressible = LogConfig {
        segment_bytes: config.segment_bytes,
        index_interval_bytes: config.index_interval_bytes,
        ..LogConfig::default()
    };
    if *config != expressible {
        return Err("the log configuration needs more than --segment-bytes and \
                    --index-interval-bytes"
            .into());
    }
    let mut out: Vec<String> = match op {
        Op::Flush | Op::Close | Op::Read { .. } => return Ok(None),
        Op::Append {
            records,
            codec: None,
            log_append_time: None,
        } => {
            let batch: Vec<serde_json::Value> = records
                .iter()
                .map(|r| serde_json::json!({"key": r.key, "value": r.value, "ts": r.ts}))
                .collect();
            vec![
                "append".into(),
                "--batch".into(),
                serde_json::Value::from(batch).to_string(),
            ]
        }
        Op::Roll => vec!["roll".into()],
        Op::Retain {
            now,
            retention_ms,
            retention_bytes,
        } => {
            let mut out = vec!["retain".into(), "--now".into(), now.to_string()];
            if let Some(ms) = retention_ms {
                out.extend(["--retention-ms".into(), ms.to_string()]);
            }
            if let Some(bytes) = retention_bytes {
                out.extend(["--retention-bytes".into(), bytes.to_string()]);
            }
            out.extend(["--variant".into(), variant.into()]);
            out
        }
        Op::Compact {
            now,
            delete_retention_ms,
            segment_bytes,
        } if segment_bytes.is_none_or(|b| b == config.segment_bytes) => vec![
            "compact".into(),
            "--now".into(),
            now.to_string(),
            "--delete-retention-ms".into(),
            delete_retention_ms.to_string(),
            "--variant".into(),
            variant.into(),
        ],
        other => return Err(format!("no seglog command performs {other}")),
    };
    out.insert(1, dir.display().to_string());
    out.extend([
        "--segment-bytes".into(),
        config.segment_bytes.to_string(),
        "--index-interval-bytes".into(),
        config.index_interval_bytes.to_string(),
    ]);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::RecordSpec;

    #[test]
    fn appends_and_installs_become_commands_flushes_none() {
        let config = LogConfig::default();
        let dir = Path::new("/d/log");
        let append = Op::append(vec![RecordSpec {
            key: Some("k".into()),
            value: None,
            ts: 5,
        }]);
        let line = args(&append, dir, &config, "manifest").unwrap().unwrap();
        assert_eq!(&line[..3], ["append", "/d/log", "--batch"]);
        assert_eq!(line[3], r#"[{"key":"k","value":null,"ts":5}]"#);
        assert_eq!(args(&Op::Flush, dir, &config, "manifest").unwrap(), None);
        let compact = Op::Compact {
            now: 1,
            delete_retention_ms: 2,
            segment_bytes: Some(7),
        };
        assert!(args(&compact, dir, &config, "manifest").is_err());
        let odd = LogConfig {
            max_batch_bytes: 9,
            ..LogConfig::default()
        };
        assert!(args(&Op::Roll, dir, &odd, "manifest").is_err());
    }
}

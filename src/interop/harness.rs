//! The Java harness in `interop/kafka/` (Apache Kafka's storage classes): found,
//! built with Maven at run time (offline first, so a warm `~/.m2` needs no
//! network), and run as `java -cp CLASSPATH seglog.interop.Main COMMAND ...`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The harness's Maven project: `$SEGLOG_KAFKA_HARNESS`, or `interop/kafka` of the
/// source tree this binary was built from.
pub fn project_dir() -> PathBuf {
    std::env::var_os("SEGLOG_KAFKA_HARNESS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/kafka"),
        PathBuf::from,
    )
}

/// A built harness.
#[derive(Debug, Clone)]
pub struct Harness {
    classpath: String,
}

/// Why the harness cannot run here (the stage is then skipped, with this reason).
pub fn unavailable() -> Option<String> {
    for (tool, arg) in [("java", "-version"), ("mvn", "-v")] {
        let found = Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "`{tool}` is not on the PATH (the harness needs Java 17 and Maven)"
            ));
        }
    }
    if !project_dir().join("pom.xml").exists() {
        return Some(format!("no harness at {}", project_dir().display()));
    }
    None
}

impl Harness {
    /// Compiles the harness and resolves its classpath (Maven offline first, then
    /// online for a first fetch).
    pub fn build() -> Result<Harness, String> {
        let dir = project_dir();
        let classpath_file = dir.join("target/classpath.txt");
        let goals = [
            "-B",
            "-q",
            "compile",
            "dependency:build-classpath",
            "-Dmdep.outputFile=target/classpath.txt",
        ];
        let offline = Command::new("mvn")
            .arg("-o")
            .args(goals)
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("cannot run mvn: {e}"))?;
        if !offline.status.success() {
            let online = Command::new("mvn")
                .args(goals)
                .current_dir(&dir)
                .output()
                .map_err(|e| format!("cannot run mvn: {e}"))?;
            if !online.status.success() {
                return Err(format!(
                    "mvn failed to build the harness in {}: {}{}",
                    dir.display(),
                    String::from_utf8_lossy(&online.stdout),
                    String::from_utf8_lossy(&online.stderr)
                ));
            }
        }
        let dependencies = std::fs::read_to_string(&classpath_file)
            .map_err(|e| format!("{}: {e}", classpath_file.display()))?;
        let separator = if cfg!(windows) { ";" } else { ":" };
        Ok(Harness {
            classpath: format!(
                "{}{separator}{}",
                dir.join("target/classes").display(),
                dependencies.trim()
            ),
        })
    }

    /// The harness's classpath, for a `java` command line of the caller's own (one
    /// run under strace).
    pub fn classpath(&self) -> &str {
        &self.classpath
    }

    /// `java -cp CLASSPATH seglog.interop.Main ARGS`, not started: for a
    /// long-lived harness command (`bench`) that the caller talks to.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("java");
        command
            .arg("-cp")
            .arg(&self.classpath)
            .arg("seglog.interop.Main")
            .args(args);
        command
    }

    /// Runs one harness command; `Err` carries its stderr (a failed Kafka check).
    pub fn run(&self, args: &[&str]) -> Result<(), String> {
        let output = Command::new("java")
            .arg("-cp")
            .arg(&self.classpath)
            .arg("seglog.interop.Main")
            .args(args)
            .output()
            .map_err(|e| format!("cannot run java: {e}"))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The first lines say what failed; a Java stack trace can be long.
        let head: Vec<&str> = stderr.lines().take(6).collect();
        Err(format!(
            "harness `{}` exited {}: {}",
            args.first().copied().unwrap_or_default(),
            output.status,
            head.join(" | ")
        ))
    }
}

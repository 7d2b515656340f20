//! Finding, reading and writing scenario files.

use std::path::{Path, PathBuf};

use seglog::fs::FileSystem;
use seglog::{Error, Result};

use super::Scenario;

/// Expands directories into their `*.toml` files, sorted.
pub fn scenario_paths(fs: &dyn FileSystem, inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for input in inputs {
        if fs.is_dir(input) {
            let names = fs
                .list_dir(input)
                .map_err(|e| seglog::Error::io(input, e))?;
            out.extend(
                names
                    .into_iter()
                    .filter(|n| n.ends_with(".toml"))
                    .map(|n| input.join(n)),
            );
        } else {
            out.push(input.clone());
        }
    }
    Ok(out)
}

/// Reads and parses one scenario file.
pub fn load(fs: &dyn FileSystem, path: &Path) -> std::result::Result<Scenario, String> {
    let bytes = fs
        .read_all(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))?;
    Scenario::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `scenario` into `dir` (created if missing) as `<name>.toml`, synced;
/// returns the path.
pub fn save(fs: &dyn FileSystem, dir: &Path, scenario: &Scenario) -> Result<PathBuf> {
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join(format!("{}.toml", scenario.name));
    fs.write_new(&path, scenario.to_toml().as_bytes())
        .map_err(|e| Error::io(&path, e))?;
    fs.sync_file(&path).map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

//! Where the programs a run starts are found: the one lookup that `wirebench doctor`'s
//! table, the check before a run and the run itself all use, so that what the first two
//! call present is what the run starts. A program is looked for on `PATH` only, as the
//! shell would; the run then starts the file it found, never a second lookup by name
//! (`ip netns exec HOST sysctl` is given sysctl's path too).

use std::path::{Path, PathBuf};

/// Where Debian puts programs for root (`sysctl`, `ngircd`, `mosquitto`, `danted`), which
/// an ordinary user's `PATH` lacks: named in the message when a program is there but not
/// on `PATH`, and never searched, so a run and its check see what the user's `PATH` does.
const SYSTEM_DIRS: &[&str] = &["/usr/local/sbin", "/usr/sbin", "/sbin"];

/// `bin` on PATH; a path (`/opt/x/chromium`) is taken as is.
pub fn find_program(bin: &str) -> Option<PathBuf> {
    if bin.contains('/') {
        let p = PathBuf::from(bin);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| is_executable(p))
}

/// [`find_program`], or what was looked for, and where the program is when only `PATH`
/// lacks its directory.
pub fn on_path(bin: &str) -> Result<PathBuf, String> {
    find_program(bin).ok_or_else(|| {
        let elsewhere = SYSTEM_DIRS
            .iter()
            .map(|d| Path::new(d).join(bin))
            .find(|p| !bin.contains('/') && is_executable(p));
        match elsewhere {
            Some(p) => format!(
                "no {bin} on PATH ({}); {} is there: add {} to PATH",
                path_words(),
                p.display(),
                p.parent().unwrap_or(Path::new("/")).display()
            ),
            None => format!("no {bin} on PATH ({})", path_words()),
        }
    })
}

/// The file to start for `bin`: the one [`find_program`] finds, or `bin` itself, so the
/// start fails naming it.
pub fn program_path(bin: &str) -> PathBuf {
    find_program(bin).unwrap_or_else(|| PathBuf::from(bin))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// "PATH has 5 directories", for a lookup that failed: the PATH itself may be long.
fn path_words() -> String {
    match std::env::var_os("PATH") {
        Some(p) => match std::env::split_paths(&p).count() {
            1 => format!("PATH is {}", p.to_string_lossy()),
            n => format!("PATH has {n} directories"),
        },
        None => "PATH is unset".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_or_taken_as_a_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("/bin/sh").is_some());
        assert!(find_program("/nonexistent/sh").is_none());
        assert_eq!(
            program_path("wirebench-no-such-program"),
            PathBuf::from("wirebench-no-such-program")
        );
        assert!(
            on_path("wirebench-no-such-program")
                .unwrap_err()
                .starts_with("no wirebench-no-such-program on PATH (")
        );
    }
}

//! The built-in server's accounts and rosters: Tsung's numbered convention by default
//! (`user<N>` / `pass<N>`, each user's roster the `contacts` neighbours), or files.
//!
//! A users file holds one account per line, `NAME PASSWORD` (whitespace between; the
//! password may not contain whitespace). A roster file holds one user per line,
//! `NAME: CONTACT CONTACT ...`, a contact being a local name (of this server's domain) or
//! a bare JID. In both, blank lines and lines starting with `#` are skipped, and a bad
//! line is an error naming the file and line. Without a roster file, numbered users get
//! the formula's rosters and users from a file get none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wirebench_xmpp::{Directory, NumberedAccounts};

/// A file's path (absolute, for worker processes) and what was read from it.
type Loaded<T> = Option<(PathBuf, Arc<T>)>;

/// Accounts and rosters for [`super::XmppServerConfig`].
#[derive(Debug, Clone)]
pub struct Accounts {
    pub numbered: NumberedAccounts,
    users: Loaded<HashMap<String, String>>,
    rosters: Loaded<HashMap<String, Vec<String>>>,
}

impl Accounts {
    pub fn numbered(numbered: NumberedAccounts) -> Accounts {
        Accounts {
            numbered,
            users: None,
            rosters: None,
        }
    }

    /// Replaces the numbered accounts with those of a users file.
    pub fn load_users(&mut self, path: &Path) -> Result<(), String> {
        let text = read(path)?;
        let map = parse_users(&text, &path.display().to_string())?;
        self.users = Some((absolute(path), Arc::new(map)));
        Ok(())
    }

    /// Takes rosters from a roster file.
    pub fn load_rosters(&mut self, path: &Path) -> Result<(), String> {
        let text = read(path)?;
        let map = parse_rosters(&text, &path.display().to_string(), &self.numbered.domain)?;
        self.rosters = Some((absolute(path), Arc::new(map)));
        Ok(())
    }

    /// The files loaded, for a worker process to load again.
    pub fn files(&self) -> (Option<PathBuf>, Option<PathBuf>) {
        (
            self.users.as_ref().map(|(p, _)| p.clone()),
            self.rosters.as_ref().map(|(p, _)| p.clone()),
        )
    }

    /// How many accounts there are.
    pub fn count(&self) -> u64 {
        match &self.users {
            Some((_, m)) => m.len() as u64,
            None => self.numbered.users,
        }
    }
}

impl Directory for Accounts {
    fn password(&self, user: &str) -> Option<String> {
        match &self.users {
            Some((_, m)) => m.get(user).cloned(),
            None => self.numbered.password(user),
        }
    }

    fn roster(&self, user: &str) -> Vec<String> {
        match (&self.rosters, &self.users) {
            (Some((_, r)), _) => r.get(user).cloned().unwrap_or_default(),
            (None, Some(_)) => Vec::new(),
            (None, None) => self.numbered.roster(user),
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The lines that say something: (line number, text), comments and blanks skipped.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// A local part as RFC 7622 allows it, narrowed to what a lab needs: no `@`, `/`, quotes
/// or angle brackets (which would break the stanzas the server writes), 1-1023 bytes.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 1023
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "@/'\"<>&:".contains(c))
}

/// `NAME PASSWORD` per line; `file` names the source in errors.
pub fn parse_users(text: &str, file: &str) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    for (n, line) in lines(text) {
        let mut words = line.split_whitespace();
        let (Some(name), Some(password), None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "{file}:{n}: expected `NAME PASSWORD`, found `{line}`"
            ));
        };
        if !valid_name(name) {
            return Err(format!(
                "{file}:{n}: `{name}` is not a user name (no spaces, @, /, quotes, <, >, & or :)"
            ));
        }
        if map.insert(name.to_string(), password.to_string()).is_some() {
            return Err(format!("{file}:{n}: user `{name}` is listed twice"));
        }
    }
    if map.is_empty() {
        return Err(format!(
            "{file}: no accounts (one `NAME PASSWORD` per line)"
        ));
    }
    Ok(map)
}

/// `NAME: CONTACT ...` per line; contacts without `@` are of `domain`.
pub fn parse_rosters(
    text: &str,
    file: &str,
    domain: &str,
) -> Result<HashMap<String, Vec<String>>, String> {
    let mut map = HashMap::new();
    for (n, line) in lines(text) {
        let Some((name, contacts)) = line.split_once(':') else {
            return Err(format!(
                "{file}:{n}: expected `NAME: CONTACT CONTACT ...`, found `{line}`"
            ));
        };
        let name = name.trim();
        if !valid_name(name) {
            return Err(format!("{file}:{n}: `{name}` is not a user name"));
        }
        let mut list = Vec::new();
        for c in contacts.split_whitespace() {
            let (local, host) = c.split_once('@').unwrap_or((c, domain));
            if !valid_name(local) || host.is_empty() || host.contains(['/', '@', '\'', '"']) {
                return Err(format!(
                    "{file}:{n}: `{c}` is not a contact (NAME or NAME@DOMAIN)"
                ));
            }
            list.push(format!("{local}@{host}"));
        }
        if map.insert(name.to_string(), list).is_some() {
            return Err(format!("{file}:{n}: user `{name}` has two roster lines"));
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn users_and_rosters_files_are_read() {
        let users = parse_users("# accounts\nalice s3cret\n\nbob  hunter2\n", "u.txt").unwrap();
        assert_eq!(users["alice"], "s3cret");
        assert_eq!(users["bob"], "hunter2");
        let rosters =
            parse_rosters("alice: bob carol@other.test\nbob:\n", "r.txt", "a.test").unwrap();
        assert_eq!(rosters["alice"], ["bob@a.test", "carol@other.test"]);
        assert!(rosters["bob"].is_empty());
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let e = parse_users("alice s3cret\nbob\n", "u.txt").unwrap_err();
        assert!(e.starts_with("u.txt:2: expected `NAME PASSWORD`"), "{e}");
        let e = parse_users("alice a\nalice b\n", "u.txt").unwrap_err();
        assert!(e.contains("u.txt:2: user `alice` is listed twice"), "{e}");
        let e = parse_users("al'ice a\n", "u.txt").unwrap_err();
        assert!(e.starts_with("u.txt:1: `al'ice` is not a user name"), "{e}");
        assert!(
            parse_users("# nothing\n", "u.txt")
                .unwrap_err()
                .contains("no accounts")
        );
        let e = parse_rosters("alice bob\n", "r.txt", "a.test").unwrap_err();
        assert!(e.starts_with("r.txt:1: expected `NAME: CONTACT"), "{e}");
        let e = parse_rosters("alice: b<ob\n", "r.txt", "a.test").unwrap_err();
        assert!(e.starts_with("r.txt:1: `b<ob` is not a contact"), "{e}");
    }

    #[test]
    fn files_replace_the_formula() {
        let numbered = NumberedAccounts {
            user_prefix: "user".into(),
            password_prefix: "pass".into(),
            users: 10,
            contacts: 2,
            domain: "a.test".into(),
        };
        let mut a = Accounts::numbered(numbered);
        assert_eq!(a.password("user3").as_deref(), Some("pass3"));
        assert_eq!(a.roster("user3").len(), 2);
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users");
        std::fs::write(&users, "alice pw\nuser3 other\n").unwrap();
        a.load_users(&users).unwrap();
        assert_eq!(a.password("user3").as_deref(), Some("other"));
        assert_eq!(a.password("user4"), None, "numbered users are gone");
        assert!(a.roster("alice").is_empty());
        let rosters = dir.path().join("rosters");
        std::fs::write(&rosters, "alice: user3\n").unwrap();
        a.load_rosters(&rosters).unwrap();
        assert_eq!(a.roster("alice"), ["user3@a.test"]);
        assert_eq!(a.count(), 2);
        let e = a.load_users(&dir.path().join("missing")).unwrap_err();
        assert!(e.contains("missing"), "{e}");
    }

    proptest! {
        #[test]
        fn any_text_parses_or_fails_with_a_location(text in "[ -~\n\t:@#]{0,200}") {
            if let Err(e) = parse_users(&text, "f") {
                prop_assert!(e.starts_with("f:"), "{}", e);
            }
            if let Err(e) = parse_rosters(&text, "f", "a.test") {
                prop_assert!(e.starts_with("f:"), "{}", e);
            }
        }

        #[test]
        fn written_accounts_read_back(accounts in proptest::collection::hash_map("[a-z][a-z0-9._-]{0,12}", "[!-~]{1,16}", 1..20)) {
            let text: String = accounts.iter().map(|(u, p)| format!("{u} {p}\n")).collect();
            prop_assert_eq!(parse_users(&text, "f").unwrap(), accounts);
        }
    }
}

//! Bearer tokens: read from a file that only its owner may read, compared in
//! constant time.

use crate::ClusterError;
use std::path::Path;

/// Shortest accepted token (bytes): anything shorter is guessable.
pub const MIN_TOKEN_LEN: usize = 16;
/// Longest accepted token (bytes).
pub const MAX_TOKEN_LEN: usize = 4096;

/// A shared secret. Its `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// The token's text (for the `Authorization` header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Builds a token from text (checked like a token file's content).
    pub fn from_text(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.len() < MIN_TOKEN_LEN {
            return Err(format!("token is shorter than {MIN_TOKEN_LEN} characters"));
        }
        if t.len() > MAX_TOKEN_LEN {
            return Err(format!("token is longer than {MAX_TOKEN_LEN} characters"));
        }
        if t.chars()
            .any(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
        {
            return Err("token must be one line of printable ASCII without spaces".to_string());
        }
        Ok(Token(t.to_string()))
    }

    /// True when `candidate` equals the token (time independent of where
    /// they differ).
    pub fn matches(&self, candidate: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), candidate.as_bytes())
    }

    /// True when an `Authorization` header value carries this token.
    pub fn matches_header(&self, header: &str) -> bool {
        bearer_token(header).is_some_and(|t| self.matches(t))
    }
}

/// The token of an `Authorization: Bearer <token>` header value. The scheme
/// is case-insensitive (RFC 9110: `bearer` and `BEARER` are the same).
pub fn bearer_token(header: &str) -> Option<&str> {
    let header = header.trim();
    let (scheme, rest) = header.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case("bearer") || !rest.starts_with(' ') {
        return None;
    }
    let t = rest.trim();
    (!t.is_empty()).then_some(t)
}

// Length is not secret (tokens are long random strings); contents are.
/// Constant-time equality of two equal-length byte strings.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

/// Refuses a TLS private key file that group or others may read (or write):
/// the key must be as private as a token.
pub fn check_private_key_file(path: &Path) -> Result<(), ClusterError> {
    let meta = std::fs::metadata(path).map_err(|source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(ClusterError::Tls(format!(
                "private key {} is readable or writable by group or others (mode {mode:o}); run `chmod 600 {}`",
                path.display(),
                path.display()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(())
}

/// Reads a token file: one line, at least [`MIN_TOKEN_LEN`] characters.
/// Refuses a file that its group or others may read or write (mode must be
/// 0600 or stricter), like ssh does for private keys.
pub fn read_token_file(path: &Path) -> Result<Token, ClusterError> {
    let meta = std::fs::metadata(path).map_err(|source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    check_permissions(path, &meta)?;
    if meta.len() > (MAX_TOKEN_LEN as u64) * 2 {
        return Err(ClusterError::TokenInvalid {
            path: path.to_path_buf(),
            message: "file is too large".to_string(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Token::from_text(&text).map_err(|message| ClusterError::TokenInvalid {
        path: path.to_path_buf(),
        message,
    })
}

#[cfg(unix)]
fn check_permissions(path: &Path, meta: &std::fs::Metadata) -> Result<(), ClusterError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(ClusterError::TokenFilePermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    if !meta.is_file() {
        return Err(ClusterError::TokenInvalid {
            path: path.to_path_buf(),
            message: "not a regular file".to_string(),
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_permissions(path: &Path, meta: &std::fs::Metadata) -> Result<(), ClusterError> {
    if !meta.is_file() {
        return Err(ClusterError::TokenInvalid {
            path: path.to_path_buf(),
            message: "not a regular file".to_string(),
        });
    }
    Ok(())
}

/// Writes `token` to `path` with mode 0600 (tests, `tailor shaper` setup).
#[cfg(unix)]
pub fn write_token_file(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(token.as_bytes())?;
    f.write_all(b"\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_private_token_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("token");
        write_token_file(&p, "0123456789abcdef0123").expect("write");
        let t = read_token_file(&p).expect("read");
        assert!(t.matches("0123456789abcdef0123"));
        assert!(!t.matches("0123456789abcdef0124"));
        assert!(!t.matches("0123456789abcdef012"));
        assert!(t.matches_header("Bearer 0123456789abcdef0123"));
        assert!(!t.matches_header("Basic 0123456789abcdef0123"));
        assert!(t.matches_header("bearer 0123456789abcdef0123"));
        assert!(t.matches_header("BEARER  0123456789abcdef0123 "));
        assert!(!t.matches_header("Bearer0123456789abcdef0123"));
        assert_eq!(bearer_token("Bearer "), None);
        assert!(!format!("{t:?}").contains("0123"));
    }

    #[cfg(unix)]
    #[test]
    fn rejects_group_or_world_readable_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("token");
        write_token_file(&p, "0123456789abcdef0123").expect("write");
        for mode in [0o640, 0o604, 0o660, 0o666] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
            match read_token_file(&p) {
                Err(ClusterError::TokenFilePermissions { mode: m, .. }) => assert_eq!(m, mode),
                other => panic!("mode {mode:o}: expected a permission error, got {other:?}"),
            }
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o400)).expect("chmod");
        assert!(read_token_file(&p).is_ok());
    }

    #[test]
    fn rejects_short_or_multi_word_tokens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("token");
        write_token_file(&p, "short").expect("write");
        assert!(matches!(
            read_token_file(&p),
            Err(ClusterError::TokenInvalid { .. })
        ));
        write_token_file(&p, "0123456789 abcdef0123").expect("write");
        assert!(matches!(
            read_token_file(&p),
            Err(ClusterError::TokenInvalid { .. })
        ));
        assert!(matches!(
            read_token_file(&dir.path().join("missing")),
            Err(ClusterError::Io { .. })
        ));
    }
}

//! Unit tests of the credentials file, its tokens and its publication.

use super::*;

#[cfg(unix)]
#[test]
fn a_chmod_changes_the_stamp() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("creds.toml");
    std::fs::write(&p, "x").expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).expect("chmod");
    let before = FileStamp::of(&p);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert_ne!(before, FileStamp::of(&p));
}

#[test]
fn tokens_verify_only_against_their_own_record() {
    let mut f = CredentialsFile::default();
    let ta = f.add("node-a", "team-a", &[], 1.0).expect("add");
    let tb = f.add("node-b", "team-b", &[], 1.0).expect("add");
    assert!(f.validate().is_ok());
    let idx = f.index();
    assert_eq!(idx.len(), 2);
    let a = idx.verify(&ta).expect("a verifies");
    assert_eq!(&*a.agent_id, "node-a");
    assert_eq!(&*a.tenant, "team-a");
    assert_eq!(&*idx.verify(&tb).expect("b").agent_id, "node-b");
    // A token with a's key id and another secret does not verify.
    let kid = token_key_id(&ta).expect("kid");
    let forged = format!("{TOKEN_PREFIX}.{kid}.{}", "0".repeat(SECRET_HEX));
    assert!(idx.verify(&forged).is_none());
    assert!(idx.verify("not-a-token").is_none());
    assert!(idx.verify(&ta.to_uppercase()).is_none());
    // The file never contains the token.
    let text = toml::to_string(&f).expect("toml");
    assert!(!text.contains(&ta[ta.len() - 20..]));
}

#[test]
fn an_agent_belongs_to_one_tenant_and_revoke_removes_it() {
    let mut f = CredentialsFile::default();
    f.add("n1", "t1", &[], 0.0).expect("add");
    f.add("n1", "t1", &[], 0.0)
        .expect("second key, same tenant");
    assert!(f.add("n1", "t2", &[], 0.0).is_err());
    assert!(f.add("n2", "bad/tenant", &[], 0.0).is_err());
    assert!(f.add("", "t1", &[], 0.0).is_err());
    assert_eq!(f.revoke(Some("n1"), None, 9.0), 2);
    assert!(f.credentials.is_empty());
    assert_eq!(f.revoked.len(), 2, "revoked keys stay as tombstones");
    assert_eq!(f.generation, 3, "two adds and a revoke");
    assert_eq!(f.revoke(Some("n1"), None, 9.0), 0);
    assert_eq!(f.generation, 3, "nothing revoked: same generation");
}

#[test]
fn file_roundtrips_and_is_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("credentials.toml");
    assert!(CredentialsFile::load(&p, true)
        .expect("missing ok")
        .credentials
        .is_empty());
    assert!(CredentialsFile::load(&p, false).is_err());
    let mut f = CredentialsFile::default();
    let t = f.add("n1", "t1", &[], 5.0).expect("add");
    f.save(&p).expect("save");
    let back = CredentialsFile::load(&p, false).expect("load");
    assert_eq!(back, f);
    assert!(back.index().verify(&t).is_some());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let e = CredentialsFile::load(&p, false).expect_err("world-writable");
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(
            CredentialsFile::load(&p, false).is_ok(),
            "world-readable is fine"
        );
    }
    std::fs::write(&p, "[[credential]]\nkey_id = \"x\"\n").expect("write");
    assert!(CredentialsFile::load(&p, false).is_err());
    let mut dup = f.clone();
    dup.credentials.push(f.credentials[0].clone());
    assert!(dup.validate().is_err());
}

#[test]
fn files_without_generation_or_tombstones_still_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("credentials.toml");
    let old = format!(
        "[[credential]]\nkey_id = \"{}\"\nagent_id = \"n1\"\ntenant = \"t\"\nsha256 = \"{}\"\ncreated_s = 1.0\n",
        "0123456789abcdef",
        "a".repeat(64)
    );
    std::fs::write(&p, old).expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let mut f = CredentialsFile::load(&p, false).expect("an old file loads");
    assert_eq!(
        (f.generation, f.credentials.len(), f.revoked.len()),
        (0, 1, 0)
    );
    f.revoke(Some("n1"), None, 2.0);
    f.save(&p).expect("save");
    let text = std::fs::read_to_string(&p).expect("read");
    assert!(
        text.contains("generation = 1") && text.contains("[[revoked]]"),
        "{text}"
    );
    assert_eq!(CredentialsFile::load(&p, false).expect("reload"), f);
}

#[test]
fn a_revoked_key_next_to_its_credential_is_refused_with_its_index() {
    let mut f = CredentialsFile::default();
    f.add("n1", "t", &[], 0.0).expect("add");
    let stale = f.clone();
    f.revoke(Some("n1"), None, 1.0);
    let mut both = f.clone();
    both.credentials = stale.credentials.clone();
    let e = both.validate().expect_err("revoked and present").join("; ");
    assert!(
        e.contains("credential[0].key_id") && e.contains("was revoked (revoked[0])"),
        "{e}"
    );
    // Never verifies, even in an unvalidated set.
    assert!(both.index().is_empty());
}

#[test]
fn publication_keeps_revocations_and_refuses_stale_files() {
    let mut f = CredentialsFile::default();
    f.add("a", "t", &[], 0.0).expect("add");
    f.add("s", "t", &[], 0.0).expect("add");
    // Nothing shared yet: published as is; an empty file publishes nothing.
    let (out, w) = plan_publication(&f, None);
    assert_eq!(out, Publication::Published { generation: 2 });
    assert_eq!(w.as_ref(), Some(&f));
    assert_eq!(
        plan_publication(&CredentialsFile::default(), Some(&f)),
        (Publication::UpToDate, None)
    );
    assert_eq!(
        plan_publication(&f, Some(&f)),
        (Publication::UpToDate, None)
    );
    let backup = f.clone();
    f.revoke(Some("s"), None, 1.0);
    let (out, w) = plan_publication(&f, Some(&backup));
    assert_eq!(out, Publication::Published { generation: 3 });
    let shared = w.expect("write");
    // The backup: older, and it holds a revoked key.
    let (out, w) = plan_publication(&backup, Some(&shared));
    assert!(w.is_none(), "nothing to write");
    match &out {
        Publication::Refused {
            file_generation: 2,
            stored_generation: 3,
            revived,
            differs_for,
            revocations_merged: 0,
        } => {
            assert_eq!(revived.len(), 1);
            assert!(revived[0].ends_with("(s)"), "{revived:?}");
            assert!(
                differs_for.is_empty(),
                "revived keys are listed apart: {differs_for:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        out.to_string().contains("a revoked key never comes back"),
        "{out}"
    );
    // A forged high generation does not revive it.
    let mut high = backup.clone();
    high.generation = 50;
    assert!(matches!(
        plan_publication(&high, Some(&shared)).0,
        Publication::Refused { .. }
    ));
    // Same generation, other credentials: refused (two edits raced).
    let mut side = shared.clone();
    side.credentials.clear();
    side.add("x", "t", &[], 2.0).expect("add");
    side.generation = shared.generation;
    assert!(matches!(
        plan_publication(&side, Some(&shared)).0,
        Publication::Refused {
            revocations_merged: 0,
            ..
        }
    ));
    // A stale file's own revocations still apply to the shared set.
    let mut stale_revoke = backup.clone();
    stale_revoke.revoke(Some("a"), None, 3.0);
    let (out, w) = plan_publication(&stale_revoke, Some(&shared));
    assert!(
        matches!(
            out,
            Publication::Refused {
                revocations_merged: 1,
                ..
            }
        ),
        "{out}"
    );
    let merged = w.expect("merged revocations");
    assert!(merged.credentials.is_empty());
    assert_eq!(merged.revoked.len(), 2);
    assert_eq!(merged.generation, shared.generation);
    // An older copy with the same credentials only adds its tombstones.
    let mut copy = merged.clone();
    copy.revoked.truncate(1);
    copy.generation = 1;
    assert_eq!(
        plan_publication(&copy, Some(&merged)),
        (Publication::UpToDate, None)
    );
}

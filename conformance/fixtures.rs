//! The scratch data the recordings were made with, recreated in a fresh temporary directory.
//!
//! The recordings refer to `/tmp/mcp-fixtures/`: the filesystem server's tree (`fs/`), a git
//! repository (`repo/`), the client root (`project/`) and the home directory servers ran with
//! (`home/`). A replay makes an equivalent `mcp-fixtures/` directory of its own and the
//! `fixture-paths` rule (see `matching`) rewrites the paths, so replays never touch `/tmp/mcp-fixtures`
//! and can run in parallel. The tree is deleted when the [`Fixtures`] value is dropped.
//!
//! The git repository has the recording's history (two commits by `Fixture Author` dated
//! 2026-01-01, then an unstaged change to `README.md`), so blob and commit ids match the
//! recording's. Run the git server with `GIT_AUTHOR_DATE` and `GIT_COMMITTER_DATE` set to
//! `1767312000 +0000` (2026-01-02) and its own commit gets the recorded id too.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

/// The recordings' path prefix for the scratch data.
pub const RECORDED_ROOT: &str = "/tmp/mcp-fixtures";

const FS_FILES: &[(&str, &[u8])] = &[
    ("fs/notes.txt", include_bytes!("recordings/fixtures/fs/notes.txt")),
    ("fs/docs/readme.md", include_bytes!("recordings/fixtures/fs/docs/readme.md")),
    ("fs/docs/config.json", include_bytes!("recordings/fixtures/fs/docs/config.json")),
    ("fs/media/pixel.png", include_bytes!("recordings/fixtures/fs/media/pixel.png")),
    ("fs/media/beep.wav", include_bytes!("recordings/fixtures/fs/media/beep.wav")),
];

/// Every fixture file's modification time: 2026-01-01T00:00:00Z.
const FIXTURE_MTIME: u64 = 1_767_225_600;

/// A live copy of the fixture tree, removed on drop.
#[derive(Debug)]
pub struct Fixtures {
    base: PathBuf,
    root: PathBuf,
}

impl Fixtures {
    /// Creates `mcp-fixtures/{fs,repo,project,home}` in a new directory under the system's
    /// temporary directory. The git repository needs `git` on `PATH`.
    ///
    /// # Errors
    /// When a file cannot be written or `git` fails.
    pub fn create() -> io::Result<Fixtures> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir().join(format!(
            "mcp-conformance-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let root = base.join("mcp-fixtures");
        let fixtures = Fixtures { base, root };
        for dir in ["fs", "repo", "project", "home"] {
            fs::create_dir_all(fixtures.root.join(dir))?;
        }
        let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(FIXTURE_MTIME);
        for (path, bytes) in FS_FILES {
            let path = fixtures.root.join(path);
            fs::create_dir_all(path.parent().expect("fixture files are in directories"))?;
            fs::write(&path, bytes)?;
            set_mode(&path)?;
            fs::File::options().write(true).open(&path)?.set_modified(mtime)?;
        }
        make_repo(&fixtures.root.join("repo"))?;
        Ok(fixtures)
    }

    /// The live directory standing for `/tmp/mcp-fixtures`.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

#[cfg(unix)]
fn set_mode(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_mode(_: &Path) -> io::Result<()> {
    Ok(())
}

fn git(repo: &Path, args: &[&str]) -> io::Result<()> {
    let date = "2026-01-01T00:00:00+00:00";
    let out = Command::new("git")
        .current_dir(repo)
        .args(args)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_AUTHOR_NAME", "Fixture Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Fixture Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
    }
}

fn make_repo(repo: &Path) -> io::Result<()> {
    git(repo, &["init", "-q", "-b", "main"])?;
    git(repo, &["config", "user.name", "Fixture Author"])?;
    git(repo, &["config", "user.email", "author@example.com"])?;
    git(repo, &["config", "commit.gpgsign", "false"])?;
    fs::write(repo.join("README.md"), "# Fixture repo\n\nLine one.\n")?;
    git(repo, &["add", "README.md"])?;
    git(repo, &["commit", "-q", "-m", "Initial commit"])?;
    fs::write(repo.join("hello.py"), "print(\"hello\")\n")?;
    git(repo, &["add", "hello.py"])?;
    git(repo, &["commit", "-q", "-m", "Add hello.py"])?;
    fs::write(repo.join("README.md"), "# Fixture repo\n\nLine one.\nLine two.\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_made_and_removed() {
        let f = Fixtures::create().unwrap();
        let root = f.root().to_owned();
        assert_eq!(fs::read_to_string(root.join("fs/notes.txt")).unwrap(), "alpha\nbeta\ngamma\ndelta\n");
        assert_eq!(fs::metadata(root.join("fs/media/pixel.png")).unwrap().len(), 70);
        assert!(root.join("repo/.git").is_dir());
        drop(f);
        assert!(!root.exists());
    }
}

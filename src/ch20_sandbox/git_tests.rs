//! Tests of the look at git's metadata after each command ([`super::git_watch`]): through the
//! workspace's `bash` as the model calls it, each plant paired with the same plant unconfined
//! (where it stays, and `git status` obeys it), and directly, for what no sandboxed command
//! can set up (a `.mini_agent` that is a symlink out of the root).

use super::dir_fd::Dir;
use super::git_index;
use super::git_watch::GitWatch;
use super::tests::bash;
use super::*;
use crate::ch03_tools::Workspace;
use crate::temp_dir::TempDir;
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Arc;

fn git(root: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(root)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// A repository with one commit, in a fresh root.
fn repository() -> TempDir {
    let root = TempDir::new("git-watch");
    git(root.path(), &["init", "-q"]);
    git(root.path(), &["commit", "-q", "--allow-empty", "-m", "start"]);
    root
}

fn sandboxed(root: &TempDir) -> Workspace {
    let sandbox = Arc::new(Sandbox::new(root.path(), Mode::Workspace, false).unwrap());
    Workspace::new(root.path()).unwrap().confined(sandbox)
}

/// A command that plants `.git/commondir` naming `evil/`, a copy of the repository whose
/// config runs a program that writes `marker`.
fn plant_commondir(marker: &Path) -> String {
    format!(
        "cp -r .git evil && rm -rf evil/hooks && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {}; false\"\\n' > evil/config && echo ../evil > .git/commondir",
        marker.display()
    )
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_planted_commondir_is_moved_aside_before_git_can_obey_it() {
    let outside = TempDir::new("outside");
    let marker = outside.path().join("ran");
    // Unconfined, the plant stays, and the person's next `git status` runs its program.
    let root = repository();
    let output = bash(&mut Workspace::new(root.path()).unwrap(), &plant_commondir(&marker));
    assert!(root.path().join(".git/commondir").exists(), "{}", output.content);
    let _ = Command::new("git").arg("status").current_dir(root.path()).output().unwrap();
    assert!(marker.exists(), "the plant works unconfined: git status ran its fsmonitor");
    std::fs::remove_file(&marker).unwrap();

    let root = repository();
    let mut workspace = sandboxed(&root);
    let output = bash(&mut workspace, &plant_commondir(&marker));
    assert!(!root.path().join(".git/commondir").exists(), "{}", output.content);
    assert!(
        output.content.contains("[sandbox: moved `.git/commondir` (it sent git to `../evil`)"),
        "{}",
        output.content
    );
    assert!(
        output.content.contains("git run outside the sandbox would have taken its config"),
        "{}",
        output.content
    );
    let kept =
        std::fs::read_dir(root.path().join(".mini_agent/quarantine")).unwrap().next().unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(kept.path()).unwrap(), "../evil\n", "kept, for the person to see");
    let _ = Command::new("git").arg("status").current_dir(root.path()).output().unwrap();
    assert!(!marker.exists(), "git status obeyed nothing planted");
    let next = bash(&mut workspace, "true");
    assert!(!next.content.contains("sandbox:"), "said once: {}", next.content);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_commondir_symlink_goes_and_what_it_names_stays() {
    let outside = TempDir::new("outside");
    std::fs::write(outside.path().join("file"), "kept\n").unwrap();
    let root = repository();
    let mut workspace = sandboxed(&root);
    let command = format!("ln -s {} .git/commondir", outside.path().join("file").display());
    let output = bash(&mut workspace, &command);
    assert!(root.path().join(".git/commondir").symlink_metadata().is_err(), "{}", output.content);
    assert!(output.content.contains("[sandbox: moved `.git/commondir`"), "{}", output.content);
    assert_eq!(std::fs::read_to_string(outside.path().join("file")).unwrap(), "kept\n");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1, "nothing moved out of the root");
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_process_left_planting_in_a_loop_is_stopped_before_the_look() {
    // The command leaves a loop behind that plants again and again, waits until it has
    // planted once, and exits. The reaper kills and reaps the loop; only then does the look
    // run, so what it moved aside stays moved aside.
    let root = repository();
    let mut workspace = sandboxed(&root);
    let command = "setsid sh -c 'while :; do echo ../evil > .git/commondir.new && mv .git/commondir.new .git/commondir; done' \
                   >/dev/null 2>&1 & while [ ! -e .git/commondir ]; do :; done; echo planted";
    let output = bash(&mut workspace, command);
    assert!(output.content.contains("planted"), "{}", output.content);
    assert!(output.content.contains("left the command's group"), "{}", output.content);
    assert!(output.content.contains("[sandbox: moved `.git/commondir`"), "{}", output.content);
    assert!(!root.path().join(".git/commondir").exists(), "planted again after the look: {}", output.content);
}

#[test]
fn the_quarantine_never_follows_a_link_out_of_the_root() {
    // No sandboxed command can make `.mini_agent` a link (it is read-only inside); where there
    // is no namespace one could. The planted file is then removed, and nothing leaves the root.
    let outside = TempDir::new("outside");
    let root = repository();
    std::fs::remove_dir_all(root.path().join(".mini_agent")).ok();
    std::os::unix::fs::symlink(outside.path(), root.path().join(".mini_agent")).unwrap();
    let mut watch = GitWatch::start(root.path()).unwrap();
    std::fs::write(root.path().join(".git/commondir"), "../../elsewhere\n").unwrap();
    let line = watch.check().line().unwrap();
    assert!(
        line.starts_with("sandbox: removed `.git/commondir` (it sent git to `../../elsewhere`)"),
        "{line}"
    );
    assert!(!root.path().join(".git/commondir").exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing moved out of the root");
    assert!(watch.check().line().is_none(), "nothing more to say");
}

#[test]
fn a_commondir_there_at_start_is_the_persons_and_stays() {
    let root = repository();
    std::fs::write(root.path().join(".git/commondir"), ".\n").unwrap();
    let mut watch = GitWatch::start(root.path()).unwrap();
    assert!(watch.check().line().is_none());
    assert!(root.path().join(".git/commondir").exists());
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_new_submodule_entry_and_its_repository_are_reported_once() {
    let root = repository();
    let mut workspace = sandboxed(&root);
    let nested = "git init -q lib && git -C lib -c user.name=t -c user.email=t@t commit -q --allow-empty -m x \
                  && git -C lib config core.fsmonitor 'touch ran; false' && git add lib 2>/dev/null; echo added";
    let output = bash(&mut workspace, nested);
    assert!(output.content.contains("added"), "{}", output.content);
    assert!(
        output.content.contains(
            "new since the sandbox started: submodule entry `lib` in the index, repository `lib/.git`"
        ),
        "{}",
        output.content
    );
    assert!(
        output
            .content
            .contains("git run outside the sandbox will obey its config; check it before running git there"),
        "{}",
        output.content
    );
    assert!(root.path().join("lib/.git").exists(), "reported, not removed: a submodule may be wanted");
    let next = bash(&mut workspace, "git status --short >/dev/null; true");
    assert!(!next.content.contains("sandbox:"), "said once: {}", next.content);
}

#[test]
fn nested_git_entries_are_found_new_changed_and_never_through_a_link() {
    let root = repository();
    let outside = TempDir::new("outside");
    std::fs::create_dir_all(outside.path().join("far/.git")).unwrap();
    std::fs::create_dir_all(root.path().join("vendor/old")).unwrap();
    std::fs::write(root.path().join("vendor/old/.git"), "gitdir: ../../.git/modules/old\n").unwrap();
    std::fs::create_dir_all(root.path().join("target/debug/x/.git")).unwrap();
    let mut watch = GitWatch::start(root.path()).unwrap();
    assert!(watch.check().line().is_none(), "what was there at start is not new");

    std::fs::create_dir_all(root.path().join("a/b/c/.git")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("a/link")).unwrap();
    std::fs::write(root.path().join("vendor/old/.git"), "gitdir: /tmp/planted\n").unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("new since the sandbox started: repository `a/b/c/.git`"), "{line}");
    assert!(line.contains("changed since the sandbox started: `vendor/old/.git`"), "{line}");
    assert!(!line.contains("far"), "a link is not followed: {line}");
    assert!(watch.check().line().is_none(), "said once");

    // A directory replaced by another of the same name: what is in it is new.
    std::fs::rename(root.path().join("a/b"), root.path().join("a/old-b")).unwrap();
    std::fs::create_dir_all(root.path().join("a/b/.git")).unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("repository `a/b/.git`"), "{line}");
    assert!(line.contains("repository `a/old-b/c/.git`"), "moved, so new where it is: {line}");
}

#[test]
fn a_git_at_the_root_that_appears_or_changes_is_reported() {
    let root = TempDir::new("git-watch");
    let mut watch = GitWatch::start(root.path()).unwrap();
    std::fs::write(root.path().join(".git"), "gitdir: somewhere\n").unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("repository `.git` at the root"), "{line}");
    std::fs::write(root.path().join(".git"), "gitdir: elsewhere\n").unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("`.git` at the root (now `gitdir: elsewhere`)"), "{line}");
    assert!(watch.check().line().is_none());
}

#[test]
fn a_new_directory_in_git_modules_is_reported() {
    let root = repository();
    let mut watch = GitWatch::start(root.path()).unwrap();
    std::fs::create_dir_all(root.path().join(".git/modules/planted/hooks")).unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("`.git/modules/planted`"), "{line}");
}

/// The gitlinks `git ls-files -s` lists, as the index reader should find them.
fn gitlinks_by_git(root: &Path) -> BTreeSet<Vec<u8>> {
    let listing = git(root, &["ls-files", "-s"]).stdout;
    String::from_utf8(listing)
        .unwrap()
        .lines()
        .filter(|line| line.starts_with("160000 "))
        .map(|line| line.split_once('\t').unwrap().1.as_bytes().to_vec())
        .collect()
}

#[test]
fn the_index_reader_finds_every_gitlink_in_each_index_format() {
    for (format, setup) in [
        ("sha1", &[][..]),
        ("sha1", &["update-index", "--index-version", "3"][..]),
        ("sha1", &["update-index", "--index-version", "4"][..]),
        ("sha1", &["update-index", "--split-index"][..]),
        ("sha256", &[][..]),
        ("sha256", &["update-index", "--index-version", "4"][..]),
    ] {
        let root = TempDir::new("git-index");
        git(root.path(), &["init", "-q", &format!("--object-format={format}")]);
        let files = ["a.txt", "dir/b.txt", "dir/deeper/with a long name that is longer than most.txt", "z"];
        for file in files {
            let path = root.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, file).unwrap();
        }
        git(root.path(), &["add", "."]);
        if !setup.is_empty() {
            git(root.path(), setup);
        }
        for (n, name) in ["dir/sub", "m-sub", "zz/deep/sub"].into_iter().enumerate() {
            let commit = format!("{:0width$x}", n + 1, width = if format == "sha1" { 40 } else { 64 });
            git(root.path(), &["update-index", "--add", "--cacheinfo", &format!("160000,{commit},{name}")]);
        }
        // An entry with extended flags (intent to add) makes a version 2 index version 3.
        std::fs::write(root.path().join("new.txt"), "n").unwrap();
        git(root.path(), &["add", "-N", "new.txt"]);
        let expected = gitlinks_by_git(root.path());
        assert_eq!(expected.len(), 3, "{setup:?}");
        let gitdir = Dir::open(&root.path().join(".git")).unwrap();
        let mut found = git_index::gitlinks(gitdir.file(b"index").unwrap()).unwrap();
        if let Some(shared) = &found.shared {
            found.paths.extend(git_index::gitlinks(gitdir.file(shared.as_bytes()).unwrap()).unwrap().paths);
        }
        assert_eq!(found.paths, expected, "{format} {setup:?}");
        assert!(found.complete);
    }
}

#[test]
fn a_broken_index_is_an_error_not_a_panic() {
    let root = repository();
    std::fs::write(root.path().join("a"), "a").unwrap();
    git(root.path(), &["add", "a"]);
    let index = std::fs::read(root.path().join(".git/index")).unwrap();
    let path = root.path().join("broken");
    for cut in [0, 5, 12, 20, 70, index.len() - 21] {
        std::fs::write(&path, &index[..cut]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let _ = git_index::gitlinks(file); // any answer but a panic or a hang
    }
    let mut lying = index.clone();
    lying[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    std::fs::write(&path, &lying).unwrap();
    assert!(
        git_index::gitlinks(std::fs::File::open(&path).unwrap()).is_err(),
        "a count the file cannot hold"
    );
}

#[test]
fn a_version_4_index_cannot_grow_one_path_without_end() {
    // Every entry keeps the whole path before it and adds 60,000 bytes: 20 entries make a
    // path of 1.2 MB (2,000, of 120 MB). The reader stops at the first path longer than git
    // writes.
    let root = TempDir::new("git-index");
    let mut bytes = b"DIRC".to_vec();
    bytes.extend_from_slice(&4u32.to_be_bytes());
    bytes.extend_from_slice(&20u32.to_be_bytes());
    for _ in 0..20 {
        bytes.extend_from_slice(&[0u8; 24]);
        bytes.extend_from_slice(&0o160000u32.to_be_bytes());
        bytes.extend_from_slice(&[0u8; 12 + 20]);
        bytes.extend_from_slice(&0x0fffu16.to_be_bytes());
        bytes.push(0); // drop nothing of the path before
        bytes.extend(std::iter::repeat_n(b'a', 60_000));
        bytes.push(0);
    }
    bytes.extend_from_slice(&[0u8; 20]);
    let path = root.path().join("index");
    std::fs::write(&path, &bytes).unwrap();
    let error = git_index::gitlinks(std::fs::File::open(&path).unwrap()).unwrap_err();
    assert!(error.to_string().contains("a path longer than git writes"), "{error}");
}

/// A repository with a submodule `lib` checked out (its gitdir under `.git/modules/lib`).
fn with_submodule() -> (TempDir, TempDir) {
    let library = repository();
    let root = repository();
    let source = library.path().display().to_string();
    git(root.path(), &["submodule", "add", "-q", &source, "lib"]);
    git(root.path(), &["commit", "-qm", "lib"]);
    assert!(root.path().join(".git/modules/lib/config").is_file());
    (root, library)
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_submodules_config_changed_by_a_command_is_said() {
    let outside = TempDir::new("outside");
    let marker = outside.path().join("ran");
    let command = format!("git -C lib config core.fsmonitor 'touch {}; false'", marker.display());
    // Unconfined, the person's next `git status` runs the submodule's fsmonitor.
    let (root, _library) = with_submodule();
    bash(&mut Workspace::new(root.path()).unwrap(), &command);
    let _ = Command::new("git").arg("status").current_dir(root.path()).output().unwrap();
    assert!(marker.exists(), "the change works: git status recursed into lib and ran it");
    std::fs::remove_file(&marker).unwrap();

    let (root, _library) = with_submodule();
    let mut workspace = sandboxed(&root);
    let output = bash(&mut workspace, &command);
    assert!(
        output
            .content
            .contains("changed since the sandbox started: `.git/modules/lib/config` (submodule `lib`)"),
        "{}",
        output.content
    );
    assert!(output.content.contains("check it before running git there"), "{}", output.content);
    let next = bash(
        &mut workspace,
        "echo '#!/bin/sh' > .git/modules/lib/hooks/post-checkout; echo ../x > .git/modules/lib/commondir",
    );
    assert!(
        next.content.contains("[sandbox: moved `.git/modules/lib/commondir` (it sent git to `../x`)"),
        "{}",
        next.content
    );
    assert!(next.content.contains("`.git/modules/lib/hooks` (submodule `lib`)"), "{}", next.content);
    assert!(!root.path().join(".git/modules/lib/commondir").exists());
}

#[test]
fn a_submodules_gitdir_swapped_for_another_is_said_once() {
    let (root, _library) = with_submodule();
    let mut watch = GitWatch::start(root.path()).unwrap();
    assert!(watch.check().line().is_none());
    let modules = root.path().join(".git/modules");
    std::fs::rename(&modules, root.path().join(".git/modules-old")).unwrap();
    std::fs::create_dir_all(root.path().join("planted/lib")).unwrap();
    std::os::unix::fs::symlink("../planted", &modules).unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("`.git/modules/lib` (submodule `lib`)"), "{line}");
    assert!(watch.check().line().is_none(), "said once: {:?}", watch.check().line());
}

#[test]
fn a_gitdir_reached_through_a_git_symlink_inside_the_root_is_watched_too() {
    // Some setups keep the gitdir elsewhere and link `.git` to it; inside the root, commands
    // can write it. Outside, Landlock keeps them from it.
    let root = repository();
    std::fs::rename(root.path().join(".git"), root.path().join(".realgit")).unwrap();
    std::os::unix::fs::symlink(".realgit", root.path().join(".git")).unwrap();
    let mut watch = GitWatch::start(root.path()).unwrap();
    std::fs::write(root.path().join(".realgit/commondir"), "../evil\n").unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("moved `.git/commondir` (it sent git to `../evil`)"), "{line}");
    assert!(!root.path().join(".realgit/commondir").exists());
    // The link now names another directory: said.
    std::fs::remove_file(root.path().join(".git")).unwrap();
    std::os::unix::fs::symlink("/tmp", root.path().join(".git")).unwrap();
    let line = watch.check().line().unwrap();
    assert!(line.contains("`.git` at the root (now `/tmp`)"), "{line}");
}

#[test]
fn fifos_where_git_keeps_files_hang_nothing() {
    let root = repository();
    let mut watch = GitWatch::start(root.path()).unwrap();
    let fifo = |name: &str| {
        let path = std::ffi::CString::new(root.path().join(name).as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the entry.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    };
    std::fs::remove_file(root.path().join(".git/index")).ok();
    fifo(".git/index");
    fifo(".git/commondir");
    let line = watch.check().line().unwrap();
    // No `.mini_agent/` here (the sandbox makes it): removed, not moved.
    assert!(line.starts_with("sandbox: removed `.git/commondir`: git run outside"), "{line}");
    assert!(root.path().join(".git/commondir").symlink_metadata().is_err());
    assert!(line.contains("not checked: `.git/index` could not be read (not a regular file)"), "{line}");
}

#[test]
fn a_listing_keeps_only_what_it_wants_and_at_most_so_many() {
    let root = TempDir::new("entries");
    for n in 0..2000 {
        std::fs::write(root.path().join(format!("file{n}")), "").unwrap();
    }
    for n in 0..40 {
        std::fs::create_dir(root.path().join(format!("dir{n}"))).unwrap();
    }
    std::os::unix::fs::symlink("/", root.path().join("link")).unwrap();
    let dir = Dir::open(root.path()).unwrap();
    let (dirs, complete) = dir.entries(100, |_, is_dir| is_dir).unwrap();
    assert_eq!((dirs.len(), complete), (40, true), "files and the link are not kept");
    let (some, complete) = dir.entries(10, |_, is_dir| is_dir).unwrap();
    assert_eq!((some.len(), complete), (10, false));
}

#[test]
fn a_start_that_could_not_look_says_so_once() {
    let gone = TempDir::new("gone").path().join("not-there");
    let watched = super::git_watch::Watched::start(&gone);
    let line = watched.check().unwrap();
    assert!(
        line.starts_with("sandbox: not checked: git's metadata in the workspace could not be read"),
        "{line}"
    );
    assert!(watched.check().is_none(), "said once");
}

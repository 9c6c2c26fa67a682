//! The folder's rules, and what an agent racing links into place can (not) reach.

use super::*;

/// A workspace root holding the conversation's folder `room` (a file and a subfolder in
/// it), a secret beside it, and links out of it.
fn layout() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let room = root.join("room");
    std::fs::create_dir_all(room.join("src")).unwrap();
    std::fs::write(room.join("src/lib.rs"), "one\n").unwrap();
    std::fs::write(dir.path().join("secret"), "SECRET").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), room.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.path(), room.join("up")).unwrap();
    (dir, root)
}

fn outside(e: &FolderError) -> bool {
    matches!(e, FolderError::Outside(_))
}

#[test]
fn files_inside_are_read_and_written_and_nothing_outside_is() {
    let (dir, root) = layout();
    let folder = Folder::open(&root, Path::new("room")).unwrap();
    assert_eq!(folder.path(), root.join("room"));
    assert_eq!(folder.read(Path::new("src/lib.rs"), 100).unwrap(), b"one\n");
    let absolute = root.join("room/src/lib.rs");
    assert_eq!(folder.read(&absolute, 100).unwrap(), b"one\n");
    for path in [
        "../secret",
        "link",
        "up/secret",
        "/etc/passwd",
        "src/../../secret",
    ] {
        let read = folder.read(Path::new(path), 100).unwrap_err();
        assert!(outside(&read), "{path}: {read:?}");
        let write = folder
            .write(Path::new(path), b"x", Write::Replace, 0)
            .unwrap_err();
        assert!(outside(&write), "{path}: {write:?}");
    }
    assert!(
        folder
            .write(Path::new("up/new.txt"), b"x", Write::Replace, 0)
            .is_err()
    );
    assert!(!dir.path().join("new.txt").exists());
    assert_eq!(std::fs::read(dir.path().join("secret")).unwrap(), b"SECRET");
    assert!(matches!(
        folder.read(Path::new("missing"), 100),
        Err(FolderError::NotFound)
    ));
    assert!(matches!(
        folder.read(Path::new("src"), 100),
        Err(FolderError::NotAFile)
    ));
}

#[test]
fn writes_make_their_folders_and_say_what_was_there() {
    let (_dir, root) = layout();
    let folder = Folder::open(&root, Path::new("room")).unwrap();
    let (size, old) = folder
        .write(Path::new("src/lib.rs"), b"two\n", Write::Replace, 100)
        .unwrap();
    assert_eq!((size, old.as_deref()), (4, Some(&b"one\n"[..])));
    assert_eq!(
        std::fs::read(root.join("room/src/lib.rs")).unwrap(),
        b"two\n"
    );
    let new = folder
        .write(
            Path::new("docs/new/notes.md"),
            b"# notes",
            Write::Replace,
            100,
        )
        .unwrap();
    assert_eq!(new, (0, None));
    assert_eq!(
        std::fs::read(root.join("room/docs/new/notes.md")).unwrap(),
        b"# notes"
    );
    // Larger than what is kept: written, nothing returned.
    let big = folder
        .write(Path::new("docs/new/notes.md"), b"x", Write::Replace, 3)
        .unwrap();
    assert_eq!(big, (7, None));
    let taken = folder
        .write(Path::new("docs/new/notes.md"), b"y", Write::CreateNew, 0)
        .unwrap_err();
    assert!(
        matches!(&taken, FolderError::Io(e) if e.kind() == std::io::ErrorKind::AlreadyExists),
        "{taken:?}"
    );
    folder.create_dirs(Path::new("a/b/c")).unwrap();
    assert!(folder.is_dir(Path::new("a/b/c")).is_ok());
    assert!(folder.is_dir(Path::new("up")).is_err());
}

#[test]
fn the_folder_swapped_for_a_link_to_the_root_changes_nothing_for_the_gateway() {
    let (dir, root) = layout();
    let folder = Folder::open(&root, Path::new("room")).unwrap();
    // The agent may write the root: it moves its folder away and puts a link to `/` there.
    std::fs::rename(root.join("room"), root.join("moved")).unwrap();
    std::os::unix::fs::symlink("/", root.join("room")).unwrap();
    let passwd = root.join("room/etc/passwd");
    assert!(matches!(
        folder.read(&passwd, 1 << 20),
        Err(FolderError::NotFound)
    ));
    let secret = dir.path().join("secret");
    std::os::unix::fs::symlink(&secret, root.join("moved/new-link")).unwrap();
    assert!(outside(
        &folder.read(Path::new("new-link"), 100).unwrap_err()
    ));
    // What it still reads is its own folder, wherever it went.
    assert_eq!(folder.read(Path::new("src/lib.rs"), 100).unwrap(), b"one\n");
    // Opened afresh, the link is refused.
    let again = Folder::open(&root, Path::new("room")).unwrap_err();
    assert!(outside(&again), "{again:?}");
}

#[test]
fn a_fifo_and_a_huge_sparse_file_are_refused_at_once() {
    let (_dir, root) = layout();
    let folder = Folder::open(&root, Path::new("room")).unwrap();
    let fifo = CString::new(root.join("room/fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-ended path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    assert!(matches!(
        folder.read(Path::new("fifo"), 100),
        Err(FolderError::NotAFile)
    ));
    assert!(matches!(
        folder.write(Path::new("fifo"), b"x", Write::Replace, 0),
        Err(FolderError::NotAFile)
    ));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "never blocks"
    );
    let sparse = File::create(root.join("room/sparse")).unwrap();
    sparse.set_len(32 << 30).unwrap();
    assert!(matches!(
        folder.read(Path::new("sparse"), 16 << 20),
        Err(FolderError::TooLarge { size, .. }) if size == 32 << 30
    ));
}

#[test]
fn a_folder_below_the_root_reached_through_a_link_is_refused() {
    let (dir, root) = layout();
    std::os::unix::fs::symlink(dir.path(), root.join("linked")).unwrap();
    let refused = Folder::open(&root, Path::new("linked/room")).unwrap_err();
    assert!(outside(&refused), "{refused:?}");
    // The root itself is the operator's: a link there is followed.
    let via = dir.path().join("root-link");
    std::os::unix::fs::symlink(&root, &via).unwrap();
    let folder = Folder::open(&via, Path::new("room")).unwrap();
    assert_eq!(folder.read(Path::new("src/lib.rs"), 100).unwrap(), b"one\n");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever path an agent gives, and while another thread keeps swapping a folder of
    /// the workspace for a link out and back, nothing outside is ever read or written.
    #[test]
    fn racing_links_never_lead_out(
        parts in proptest::collection::vec(
            proptest::sample::select(vec!["a", "b", "..", ".", "swap", "up", "link", "secret", "x.txt", "/"]),
            1..6,
        )
    ) {
        let (dir, root) = layout();
        let room = root.join("room");
        std::fs::create_dir_all(room.join("swap/a")).unwrap();
        std::fs::write(room.join("swap/x.txt"), "inside").unwrap();
        let folder = Folder::open(&root, Path::new("room")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, room, out) = (stop.clone(), room.clone(), dir.path().to_owned());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::rename(room.join("swap"), room.join("kept"));
                    let _ = std::os::unix::fs::symlink(&out, room.join("swap"));
                    let _ = std::fs::remove_file(room.join("swap"));
                    let _ = std::fs::rename(room.join("kept"), room.join("swap"));
                }
            })
        };
        let path: PathBuf = parts.iter().collect();
        for _ in 0..20 {
            if let Ok(data) = folder.read(&path, 1 << 20) {
                proptest::prop_assert_ne!(data, b"SECRET".to_vec(), "{:?}", path);
            }
            let _ = folder.write(&path.join("w.txt"), b"w", Write::Replace, 0);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        proptest::prop_assert_eq!(std::fs::read(dir.path().join("secret")).unwrap(), b"SECRET".to_vec());
        proptest::prop_assert!(!dir.path().join("w.txt").exists());
        proptest::prop_assert!(!dir.path().join("secret").join("w.txt").exists());
    }
}

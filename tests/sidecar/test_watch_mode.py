"""SIDECAR_WATCH: inotify, or polling where the functions folder is on a network mount."""

from __future__ import annotations

from pathlib import Path

from watchdog.observers.polling import PollingObserver

from harness.sidecar.settings import SidecarSettings
from harness.sidecar.watch_mode import chosen_watch, filesystem_of, observer_for

MOUNTINFO = """\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
40 22 0:45 / /srv/shared rw,relatime shared:20 - nfs4 fs:/export rw,vers=4.2
41 40 0:46 / /srv/shared/local rw,relatime shared:21 - tmpfs tmpfs rw
42 22 0:47 / /mnt/my\\040share rw - cifs //nas/share rw
43 22 0:48 / /mnt/sshfs rw - fuse.sshfs host:/ rw
"""


def test_auto_polls_a_folder_on_an_nfs_mount() -> None:
    folder = Path("/srv/shared/workspace/functions")
    assert filesystem_of(folder, MOUNTINFO) == "nfs4"
    assert chosen_watch("auto", folder, MOUNTINFO) == "poll"


def test_auto_uses_inotify_on_a_local_disk_and_the_deepest_mount_decides() -> None:
    assert chosen_watch("auto", Path("/home/ana/workspace/functions"), MOUNTINFO) == "inotify"
    assert chosen_watch("auto", Path("/srv/shared/local/functions"), MOUNTINFO) == "inotify"


def test_auto_polls_cifs_with_an_escaped_space_and_fuse_mounts() -> None:
    assert chosen_watch("auto", Path("/mnt/my share/functions"), MOUNTINFO) == "poll"
    assert chosen_watch("auto", Path("/mnt/sshfs/ws/functions"), MOUNTINFO) == "poll"


def test_explicit_watch_modes_win_over_the_mount() -> None:
    assert chosen_watch("inotify", Path("/srv/shared/functions"), MOUNTINFO) == "inotify"
    assert chosen_watch("poll", Path("/home/ana/functions"), MOUNTINFO) == "poll"


def test_sidecar_watch_setting_defaults_to_auto_and_poll_builds_a_polling_observer(
    tmp_path: Path,
) -> None:
    assert SidecarSettings(_env_file=None).sidecar_watch == "auto"  # type: ignore[call-arg]
    assert isinstance(observer_for("poll", tmp_path), PollingObserver)

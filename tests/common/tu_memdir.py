"""tu_memdir.py - the Python tests' tu_mkdtemp_mem (tests/common/testutil.h):
a fresh "vyre-test-*" directory on a memory filesystem for scratch space
that a program under test fills with fsync'ed files nobody inspects (the
TMPDIR of vyre-bench, whose cache suite puts and prunes hundreds of durable
blobs a run and whose reference.fsync syncs a file a sample: on the busy
2-core machine one cache-suite run took 72 s with its TMPDIR on disk, 14 s
on /dev/shm).

/dev/shm when it is a tmpfs with at least 2 GiB free and writable (a
container's 64 MiB /dev/shm is not used), else a fresh directory under
fallback. The caller removes it (shutil.rmtree).
"""
import os
import tempfile

MEM_DIR = "/dev/shm"
MEM_NEEDED = 2 << 30


def _is_tmpfs(path):
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1:3] == [path, "tmpfs"] for line in f if len(line.split()) > 2)
    except OSError:
        return False


def mkdtemp_mem(fallback):
    """A new directory on /dev/shm when it qualifies, else under fallback."""
    try:
        st = os.statvfs(MEM_DIR)
        room = st.f_bavail * st.f_frsize >= MEM_NEEDED
    except OSError:
        room = False
    if room and _is_tmpfs(MEM_DIR) and os.access(MEM_DIR, os.W_OK | os.X_OK):
        return tempfile.mkdtemp(prefix="vyre-test-", dir=MEM_DIR)
    return tempfile.mkdtemp(prefix="vyre-test-", dir=fallback)

"""The seccomp filter every sandboxed command runs under, as the BPF program bwrap loads with ``--seccomp``.

Contract:
- Everything is allowed except what lets code leave the sandbox or reach the network: new namespaces
  (``unshare``, ``setns``, namespace flags on ``clone``; ``clone3`` answers ENOSYS so libc falls back to
  ``clone``, whose flags a filter can read), mounts, ptrace and cross-process memory access, kernel
  keyrings, BPF, perf, io_uring (its socket opcodes would bypass the socket rule), module loading,
  kexec/reboot, and — unless the session asked for network — ``socket(AF_INET|AF_INET6, …)``, which gets
  EACCES. AF_UNIX sockets keep working (Python's multiprocessing needs them).
- Syscalls of a foreign architecture (the i386 entry on x86_64) kill the process: libseccomp's default
  for an architecture the filter was not built for.
- ``available()`` says whether libseccomp can be loaded here, with the reason when it cannot; building a
  filter then raises ``SeccompUnavailable``.
"""

from __future__ import annotations

import errno
import functools
import socket
import tempfile
from types import ModuleType

DENIED_SYSCALLS = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "vhangup",
    "lookup_dcookie",
    "open_by_handle_at",
    "name_to_handle_at",
)
NAMESPACE_CLONE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)


class SeccompUnavailable(RuntimeError):
    """libseccomp (Debian's libseccomp2) cannot be loaded, so no filter can be built."""


@functools.cache
def _binding() -> ModuleType | str:
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError) as exc:  # pyseccomp raises RuntimeError without libseccomp
        return f"{type(exc).__name__}: {exc}"
    return pyseccomp


def available() -> tuple[bool, str]:
    """Whether filters can be built here, and libseccomp's version or why not."""
    binding = _binding()
    if isinstance(binding, str):
        return False, f"libseccomp cannot be loaded ({binding}); install Debian's libseccomp2"
    return True, f"libseccomp loaded ({binding._libseccomp_path}, API level {binding.get_api()})"  # noqa: SLF001


@functools.cache
def build_filter(*, allow_inet: bool) -> bytes:
    """The BPF program (bytes of ``struct sock_filter``) for a session with or without network."""
    binding = _binding()
    if isinstance(binding, str):
        raise SeccompUnavailable(binding)
    seccomp = binding
    syscall_filter = seccomp.SyscallFilter(seccomp.ALLOW)
    eperm = seccomp.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            syscall_filter.add_rule(eperm, name)
        except OSError:
            continue  # a syscall this architecture does not have
    syscall_filter.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_CLONE_FLAGS:
        syscall_filter.add_rule(eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    if not allow_inet:
        for family in (socket.AF_INET, socket.AF_INET6):
            syscall_filter.add_rule(seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.EQ, family))
    with tempfile.TemporaryFile() as out:
        syscall_filter.export_bpf(out)
        out.seek(0)
        return out.read()

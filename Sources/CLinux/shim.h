#ifndef RECD_CLINUX_SHIM_H
#define RECD_CLINUX_SHIM_H
// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module is not
// built with. Each is a thin, documented wrapper (errno is left as the call set it).
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef __USE_GNU
extern int fallocate64(int fd, int mode, __off64_t offset, __off64_t len);
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     unsigned int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);
#endif

/// Allocates disk blocks for [offset, offset+length) without changing the file size
/// (fallocate FALLOC_FL_KEEP_SIZE). 0 or -1 with errno (ENOSPC, EOPNOTSUPP, ...).
static inline int recd_reserve_space(int fd, long long offset, long long length) {
    return fallocate64(fd, 0x01 /* FALLOC_FL_KEEP_SIZE */, offset, length);
}

/// Frees the blocks of [offset, offset+length) without changing the file size
/// (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE). 0 or -1 with errno.
static inline int recd_release_space(int fd, long long offset, long long length) {
    return fallocate64(fd, 0x01 | 0x02 /* KEEP_SIZE | PUNCH_HOLE */, offset, length);
}

/// rename(2) that fails with EEXIST instead of replacing `to` (renameat2 RENAME_NOREPLACE).
/// EINVAL or ENOSYS: the file system or kernel cannot do it.
static inline int recd_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */);
}

/// Names the calling thread (at most 15 bytes are kept), for ps, top and gdb.
static inline int recd_name_current_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

/// A non-blocking, close-on-exec eventfd with counter 0. The descriptor, or -1 with errno.
static inline int recd_eventfd_nonblocking(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/// A new non-blocking, close-on-exec signalfd for `mask`. The descriptor, or -1 with errno.
static inline int recd_signalfd_nonblocking(const sigset_t *mask) {
    return signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

/// sizeof(struct signalfd_siginfo): what one read of a signalfd returns per signal.
static inline int recd_signalfd_siginfo_size(void) { return (int)sizeof(struct signalfd_siginfo); }

/// Makes the calling thread `increment` steps nicer (Linux keeps a nice value per thread, so
/// the rest of the process is untouched; raising it needs no privilege). 0 or -1 with errno.
static inline int recd_renice_current_thread(int increment) {
    pid_t thread = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int current = getpriority(PRIO_PROCESS, (id_t)thread);
    if (current == -1 && errno != 0) return -1;
    return setpriority(PRIO_PROCESS, (id_t)thread, current + increment);
}
#endif

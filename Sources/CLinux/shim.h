#ifndef RECD_CLINUX_SHIM_H
#define RECD_CLINUX_SHIM_H
// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module is not
// built with, and socket calls whose control messages only the CMSG_* macros can lay out.
// Each is a thin, documented wrapper (errno is left as the call set it).
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <time.h>

#ifndef __USE_GNU
extern int fallocate64(int fd, int mode, __off64_t offset, __off64_t len);
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     unsigned int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int memfd_create(const char *name, unsigned int flags);
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U  // <linux/memfd.h>; glibc's <sys/mman.h> has it only under _GNU_SOURCE
#endif

/// memfd_create(2) with MFD_CLOEXEC: an anonymous file in memory (a child's captured output).
/// The descriptor, or -1 with errno.
static inline int recd_memfd(const char *name) { return memfd_create(name, MFD_CLOEXEC); }

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

/// Most descriptors one recd_receive_with_descriptors call takes in. A sender's surplus is
/// closed by the kernel and reported as truncation (MSG_CTRUNC).
#define RECD_DESCRIPTOR_SLOTS 16

/// sendmsg(2) of `length` bytes with `count` (0...RECD_DESCRIPTOR_SLOTS) descriptors as one
/// SCM_RIGHTS control message; the kernel delivers them with the first of these bytes.
/// Bytes sent, or -1 with errno (EINVAL for too many descriptors).
static inline long recd_send_with_descriptors(int socket, const void *bytes, size_t length,
                                              const int *descriptors, int count, int flags) {
    union {
        char space[CMSG_SPACE(sizeof(int) * RECD_DESCRIPTOR_SLOTS)];
        struct cmsghdr alignment;
    } control;
    struct iovec vector = {.iov_base = (void *)bytes, .iov_len = length};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    if (count < 0 || count > RECD_DESCRIPTOR_SLOTS) {
        errno = EINVAL;
        return -1;
    }
    if (count > 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.space;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    return (long)sendmsg(socket, &message, flags);
}

/// recvmsg(2) of up to `length` bytes with MSG_CMSG_CLOEXEC | `flags`. The descriptors of any
/// SCM_RIGHTS control message go to `descriptors` (RECD_DESCRIPTOR_SLOTS entries; the caller
/// owns them), their number to `*received`. `*truncated` is set when the kernel could not
/// deliver all the control data (MSG_CTRUNC: too many descriptors, or none left in the
/// process); what did arrive is still returned. Bytes read, 0 at end of stream, or -1 with
/// errno (then nothing was received).
static inline long recd_receive_with_descriptors(int socket, void *bytes, size_t length, int flags,
                                                 int *descriptors, int *received, int *truncated) {
    union {
        char space[CMSG_SPACE(sizeof(int) * RECD_DESCRIPTOR_SLOTS)];
        struct cmsghdr alignment;
    } control;
    struct iovec vector = {.iov_base = bytes, .iov_len = length};
    struct msghdr message = {
        .msg_iov = &vector, .msg_iovlen = 1,
        .msg_control = control.space, .msg_controllen = sizeof control.space,
    };
    *received = 0;
    *truncated = 0;
    ssize_t count = recvmsg(socket, &message, flags | MSG_CMSG_CLOEXEC);
    if (count < 0) return -1;
    if (message.msg_flags & MSG_CTRUNC) *truncated = 1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t carried = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t index = 0; index < carried; index++) {
            int descriptor;
            memcpy(&descriptor, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
            if (*received < RECD_DESCRIPTOR_SLOTS) {
                descriptors[(*received)++] = descriptor;
            } else {
                close(descriptor);
                *truncated = 1;
            }
        }
    }
    return (long)count;
}
/// posix_spawn(3) of `path` (no shell, no PATH search) with `argv` and exactly `envp`, as a
/// child that inherits nothing it should not: stdin from /dev/null, stdout onto `output` when it
/// is a descriptor (>= 0; a file the caller reads afterwards), else onto stderr (recd's log),
/// every other descriptor closed, an empty signal mask and default dispositions (recd blocks and
/// ignores some), in a process group of its own (so a time limit ends its children too). 0 with
/// `*pid` set, or the error number (exec failures included: glibc's posix_spawn reports them).
static inline int recd_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], int output) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    sigset_t empty, all;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return result;
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    sigemptyset(&empty);
    sigfillset(&all);
    if ((result = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
        (result = posix_spawn_file_actions_adddup2(&actions, output >= 0 ? output : 2, 1)) == 0 &&
        (result = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0 &&
        (result = posix_spawnattr_setsigmask(&attributes, &empty)) == 0 &&
        (result = posix_spawnattr_setsigdefault(&attributes, &all)) == 0 &&
        (result = posix_spawnattr_setpgroup(&attributes, 0)) == 0 &&
        (result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                            POSIX_SPAWN_SETPGROUP)) == 0) {
        result = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return result;
}

/// waitpid(2) of `pid`, without blocking when `nohang`. 1 when it has ended (then `*exited`
/// is 1 and `*code` its exit status, or `*exited` is 0 and `*code` the signal that ended it),
/// 0 while it runs, -1 with errno.
static inline int recd_wait_child(pid_t pid, int nohang, int *exited, int *code) {
    int status = 0;
    pid_t result;
    do {
        result = waitpid(pid, &status, nohang ? WNOHANG : 0);
    } while (result < 0 && errno == EINTR);
    if (result < 0) return -1;
    if (result == 0) return 0;
    *exited = WIFEXITED(status) ? 1 : 0;
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 1;
}

/// kill(2) of process group `group` with `signal`. 0 or -1 with errno.
static inline int recd_kill_group(pid_t group, int signal) { return kill(-group, signal); }

/// A non-blocking, close-on-exec UDP socket that receives the multicast group `group` (an IPv4
/// or IPv6 literal) on `port` beside any other socket of this host bound there (SO_REUSEADDR and
/// SO_REUSEPORT, so a PipeWire receiving the same stream still gets every packet), bound to the
/// group's address (it hears no other group's traffic on that port), joined on `interface` (a
/// name; NULL or "": the kernel's choice by its routes), with kernel receive timestamps
/// (SO_TIMESTAMPNS) and the count of datagrams the socket itself dropped (SO_RXQ_OVFL: its
/// receive buffer was full). The descriptor, or -1 with errno (EINVAL: `group` is not a multicast
/// address literal; ENODEV: no such interface).
static inline int recd_multicast_socket(const char *group, unsigned short port, const char *interface) {
    struct in_addr address4;
    struct in6_addr address6;
    int family;
    if (inet_pton(AF_INET, group, &address4) == 1 && IN_MULTICAST(ntohl(address4.s_addr))) {
        family = AF_INET;
    } else if (inet_pton(AF_INET6, group, &address6) == 1 && IN6_IS_ADDR_MULTICAST(&address6)) {
        family = AF_INET6;
    } else {
        errno = EINVAL;
        return -1;
    }
    unsigned int index = 0;
    if (interface != NULL && interface[0] != 0) {
        index = if_nametoindex(interface);
        if (index == 0) return -1;
    }
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    int failed = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
                 setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
                 setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0 ||
                 setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) < 0;
    if (!failed && family == AF_INET) {
        struct sockaddr_in bound = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = address4};
        struct ip_mreqn membership = {.imr_multiaddr = address4, .imr_ifindex = (int)index};
        failed = bind(fd, (struct sockaddr *)&bound, sizeof bound) < 0 ||
                 setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &membership, sizeof membership) < 0;
    } else if (!failed) {
        struct sockaddr_in6 bound = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = address6};
        struct ipv6_mreq membership = {.ipv6mr_multiaddr = address6, .ipv6mr_interface = index};
        failed = bind(fd, (struct sockaddr *)&bound, sizeof bound) < 0 ||
                 setsockopt(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &membership, sizeof membership) < 0;
    }
    if (failed) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/// recvmsg(2) of one datagram, MSG_DONTWAIT, its first `length` bytes into `bytes` (the rest of
/// a longer one is dropped: MSG_TRUNC tells its full size). `*realtime_ns` gets the kernel's
/// receive time (SO_TIMESTAMPNS, CLOCK_REALTIME nanoseconds), 0 when none came; `source` the
/// sender's address as 16 bytes (IPv4 as IPv4-mapped IPv6, ::ffff:a.b.c.d), all zeros when the
/// kernel gave none; `*socket_drops` how many datagrams the socket had dropped (its receive
/// buffer full) by the time this one was queued (SO_RXQ_OVFL: the kernel says nothing while it
/// is 0). The datagram's full size, or -1 with errno (EAGAIN: none waiting).
static inline long recd_receive_datagram(int socket, void *bytes, size_t length, long long *realtime_ns,
                                         unsigned char *source, unsigned int *socket_drops) {
    union {
        char space[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(unsigned int))];
        struct cmsghdr alignment;
    } control;
    struct iovec vector = {.iov_base = bytes, .iov_len = length};
    struct sockaddr_storage from;
    struct msghdr message = {
        .msg_name = &from, .msg_namelen = sizeof from,
        .msg_iov = &vector, .msg_iovlen = 1,
        .msg_control = control.space, .msg_controllen = sizeof control.space,
    };
    *realtime_ns = 0;
    *socket_drops = 0;
    memset(source, 0, 16);
    ssize_t count = recvmsg(socket, &message, MSG_DONTWAIT | MSG_TRUNC);
    if (count < 0) return -1;
    if (from.ss_family == AF_INET && message.msg_namelen >= sizeof(struct sockaddr_in)) {
        source[10] = 0xff;
        source[11] = 0xff;
        memcpy(source + 12, &((struct sockaddr_in *)&from)->sin_addr, 4);
    } else if (from.ss_family == AF_INET6 && message.msg_namelen >= sizeof(struct sockaddr_in6)) {
        memcpy(source, &((struct sockaddr_in6 *)&from)->sin6_addr, 16);
    }
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET) continue;
        if (header->cmsg_type == SCM_TIMESTAMPNS && header->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(header), sizeof stamp);
            *realtime_ns = (long long)stamp.tv_sec * 1000000000LL + stamp.tv_nsec;
        } else if (header->cmsg_type == SO_RXQ_OVFL && header->cmsg_len >= CMSG_LEN(sizeof(unsigned int))) {
            memcpy(socket_drops, CMSG_DATA(header), sizeof *socket_drops);
        }
    }
    return (long)count;
}

/// 1 when this CPU and the kernel support everything x86-64-v3 code may use (AVX, AVX2, BMI1,
/// BMI2, F16C, FMA, LZCNT, MOVBE and x86-64-v2 beneath: SSE3 to SSE4.2, POPCNT, CMPXCHG16B,
/// LAHF), with the AVX registers enabled by the kernel (XCR0's SSE and AVX state); 0 otherwise,
/// and on every other architecture. CPUID and XGETBV as the Intel SDM (vol. 2A) and
/// `-march=x86-64-v3` define the level.
static inline int recd_cpu_x86_64_v3(void) {
#if defined(__x86_64__)
    unsigned int a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
    if (a < 7) return 0;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    // SSE3 0, SSSE3 9, FMA 12, CMPXCHG16B 13, SSE4.1 19, SSE4.2 20, MOVBE 22, POPCNT 23,
    // XSAVE 26, OSXSAVE 27, AVX 28, F16C 29.
    const unsigned int leaf1 = (1u << 0) | (1u << 9) | (1u << 12) | (1u << 13) | (1u << 19) | (1u << 20) |
                               (1u << 22) | (1u << 23) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 29);
    if ((c & leaf1) != leaf1) return 0;
    unsigned int low, high;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    if ((low & 6u) != 6u) return 0;  // the kernel saves SSE and AVX state
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    const unsigned int leaf7 = (1u << 3) | (1u << 5) | (1u << 8);  // BMI1, AVX2, BMI2
    if ((b & leaf7) != leaf7) return 0;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000001u) return 0;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001u), "c"(0));
    const unsigned int extended = (1u << 0) | (1u << 5);  // LAHF/SAHF, LZCNT
    return (c & extended) == extended;
#else
    return 0;
#endif
}

#endif

// The C constants the public API of this module names, under the names C gives them, so that
// no file outside this folder reads a C header.

import Glibc

// errno values (Errno's members).
let _EPERM = Glibc.EPERM
let _ENOENT = Glibc.ENOENT
let _EINTR = Glibc.EINTR
let _EIO = Glibc.EIO
let _EBADF = Glibc.EBADF
let _EAGAIN = Glibc.EAGAIN
let _ENOMEM = Glibc.ENOMEM
let _EACCES = Glibc.EACCES
let _EBUSY = Glibc.EBUSY
let _EEXIST = Glibc.EEXIST
let _EXDEV = Glibc.EXDEV
let _ENOTDIR = Glibc.ENOTDIR
let _EISDIR = Glibc.EISDIR
let _EINVAL = Glibc.EINVAL
let _ENFILE = Glibc.ENFILE
let _EMFILE = Glibc.EMFILE
let _EFBIG = Glibc.EFBIG
let _ENOSPC = Glibc.ENOSPC
let _ESPIPE = Glibc.ESPIPE
let _EROFS = Glibc.EROFS
let _EPIPE = Glibc.EPIPE
let _ERANGE = Glibc.ERANGE
let _ENAMETOOLONG = Glibc.ENAMETOOLONG
let _ENOSYS = Glibc.ENOSYS
let _ENOTEMPTY = Glibc.ENOTEMPTY
let _ENOTSOCK = Glibc.ENOTSOCK
let _EOPNOTSUPP = Glibc.EOPNOTSUPP
let _ECONNRESET = Glibc.ECONNRESET
let _ECONNREFUSED = Glibc.ECONNREFUSED
let _EINPROGRESS = Glibc.EINPROGRESS
let _EDQUOT = Glibc.EDQUOT
let _ENXIO = Glibc.ENXIO
let _ENODEV = Glibc.ENODEV
let _ELOOP = Glibc.ELOOP
let _EPROTO = Glibc.EPROTO
let _ENOBUFS = Glibc.ENOBUFS
let _ECONNABORTED = Glibc.ECONNABORTED

// open(2) flags.
let _O_RDONLY = Glibc.O_RDONLY
let _O_WRONLY = Glibc.O_WRONLY
let _O_RDWR = Glibc.O_RDWR
let _O_CREAT = Glibc.O_CREAT
let _O_EXCL = Glibc.O_EXCL
let _O_TRUNC = Glibc.O_TRUNC
let _O_NONBLOCK = Glibc.O_NONBLOCK
let _O_DIRECTORY = Glibc.O_DIRECTORY
/// O_NOFOLLOW from <fcntl.h> (Linux ABI: 0400000): open fails with ELOOP on a symbolic link.
let _O_NOFOLLOW: Int32 = 0o400_000
let _O_ACCMODE = Glibc.O_ACCMODE
/// O_PATH from <fcntl.h>, which declares it only under _GNU_SOURCE (Linux ABI: 010000000).
let _O_PATH: Int32 = 0o10_000_000

// poll(2) events.
let _POLLIN = Int16(Glibc.POLLIN)
let _POLLOUT = Int16(Glibc.POLLOUT)
let _POLLERR = Int16(Glibc.POLLERR)
let _POLLHUP = Int16(Glibc.POLLHUP)
let _POLLNVAL = Int16(Glibc.POLLNVAL)

// Signals.
let _SIGTERM = Glibc.SIGTERM
let _SIGINT = Glibc.SIGINT
let _SIGHUP = Glibc.SIGHUP
let _SIGQUIT = Glibc.SIGQUIT
let _SIGUSR1 = Glibc.SIGUSR1
let _SIGUSR2 = Glibc.SIGUSR2
let _SIGPIPE = Glibc.SIGPIPE
let _SIGKILL = Glibc.SIGKILL

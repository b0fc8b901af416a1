// Who we are and who others are: the calling process and the user database.

/// The calling process. Any thread.
public enum CurrentProcess {
    /// `getpid()`.
    public static var id: Int32 { Syscall.processID() }

    /// `getuid()`: the real user id.
    public static var userID: UInt32 { Syscall.userID() }

    /// True when running as root (uid 0).
    public static var isRoot: Bool { userID == 0 }
}

/// The user and group database (passwd, group: files, LDAP, whatever NSS says). Any thread;
/// each call may block on a network lookup.
public enum UserDatabase {
    /// The gid of the group called `name`, nil when there is none (`getgrnam`).
    public static func groupID(named name: String) -> UInt32? {
        Syscall.groupID(name)
    }

    /// A user's passwd entry: `getpwuid_r` for `uid`.
    public static func user(uid: UInt32) -> UserAccount? {
        Syscall.userEntry(uid: uid, name: nil).map { UserAccount(name: $0.name, uid: $0.uid, gid: $0.gid) }
    }

    /// A user's passwd entry: `getpwnam_r` for `name`.
    public static func user(named name: String) -> UserAccount? {
        Syscall.userEntry(uid: nil, name: name).map { UserAccount(name: $0.name, uid: $0.uid, gid: $0.gid) }
    }

    /// `getpwuid_r` + `getgrouplist`: the groups the user database gives `uid`, including
    /// `gid`. Empty when the uid has no passwd entry.
    public static func groupList(uid: UInt32, gid: UInt32) -> [UInt32] {
        guard let name = Syscall.userName(uid) else { return [] }
        var capacity: Int32 = 32
        while true {
            var wanted: Int32 = 0
            if let groups = Syscall.groupList(name, gid, capacity: capacity, wanted: &wanted) { return groups }
            // Too small a list: `wanted` now holds the size needed.
            if wanted <= capacity || wanted > 1 << 16 { return [] }
            capacity = wanted
        }
    }
}

/// A user as the passwd database has it.
public struct UserAccount: Sendable, Equatable {
    public var name: String
    public var uid: UInt32
    /// The primary group.
    public var gid: UInt32

    public init(name: String, uid: UInt32, gid: UInt32) {
        self.name = name
        self.uid = uid
        self.gid = gid
    }

    /// Its primary and supplementary groups (`getgrouplist`).
    public var groups: Set<UInt32> { Set(UserDatabase.groupList(uid: uid, gid: gid)).union([gid]) }
}
